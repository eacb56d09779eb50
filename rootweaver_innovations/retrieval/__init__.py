"""Finding passages: the BM25 score matrix, retrievers (BM25, dense, hybrid) and the persisted,
memory-mapped index.

May import ``documents`` and the leaf modules (``text``, ``records``); never the loop.
"""
