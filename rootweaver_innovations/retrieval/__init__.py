"""Finding passages: the one tokenizer of the index (:mod:`.tokens`), the BM25 score matrix,
retrievers (BM25, dense, hybrid), the title index the hops follow (:mod:`.titles`) and the
persisted, memory-mapped index (:mod:`.index`, :mod:`.index_build`, :mod:`.manifest`).

May import: conventions, documents, fingerprint, text.
"""
