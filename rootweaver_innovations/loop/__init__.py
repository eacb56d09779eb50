"""The multi-hop loop: decompose, choose the next sub-query, retrieve, append facts.

Owns ``MultiHopRAG`` (:mod:`.multihop`), its records (:mod:`.result`), the hop schedule and
bridges (:mod:`.hops`), the coverage decomposer (:mod:`.decompose`) and the reading of id-titled
records as windows of their files (:mod:`.files`).

May import: compaction, conventions, documents, records, retrieval, text.
"""
