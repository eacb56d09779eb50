"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop."""
