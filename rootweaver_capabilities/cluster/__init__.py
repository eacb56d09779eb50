"""Search on existing engines: the SphinxQL (Manticore / Sphinx) retriever and the exporter that
loads an index into its shards.
"""

SHARDS = 2  # RT shards an export writes when not told otherwise (`index export --shards`)
