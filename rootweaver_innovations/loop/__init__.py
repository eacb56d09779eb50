"""The multi-hop loop: decompose, choose the next sub-query, retrieve, append facts.

Owns ``MultiHopRAG`` (:mod:`.multihop`), the hop schedule and bridges (:mod:`.hops`) and the
title index the hops follow (:mod:`.titles`). May import ``documents``, ``retrieval``,
``compaction``, ``conventions`` and the leaf modules; never ``answer_rules`` or the capabilities.
"""
