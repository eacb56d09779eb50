"""Search on existing engines: the SphinxQL (Manticore / Sphinx) retriever and the exporter that
loads an index into its shards.
"""
