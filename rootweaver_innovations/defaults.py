"""The defaults the command line shows, in a module that imports nothing.

The modules that use them (:mod:`~rootweaver_innovations.documents.corpus`,
:mod:`~rootweaver_innovations.documents.folders`, :mod:`~rootweaver_innovations.compaction.strategies`) import
them from here and re-export them, so that the ``rootweaver`` parser gets them without loading
those modules (dataclasses, the tokenizer, the packers, numpy): ``--help`` starts fast.
:mod:`~rootweaver_innovations.compaction.strategies` registers the built-in strategies under these
names, in this order.
"""

from __future__ import annotations

__all__ = ["BUILTIN_CONVENTIONS", "BUILTIN_STRATEGIES", "CHUNK_TOKENS", "DEFAULT_BUDGET_TOKENS", "DEFAULT_CONVENTIONS",
           "DEFAULT_STRATEGY", "LINE_STRATEGY", "MAX_RECORD_BYTES", "OVERLAP_TOKENS", "PACKING_STRATEGIES"]

MAX_RECORD_BYTES = 1 << 20  # the default per-record (per-line) limit: 1 MiB
CHUNK_TOKENS = 128  # ChunkingSettings.chunk_tokens: largest chunk of a document, in reader tokens
OVERLAP_TOKENS = 16  # ChunkingSettings.overlap_tokens: tokens a chunk repeats from the previous one
LINE_STRATEGY = "line"  # LineCompactor, ADR-077
PACKING_STRATEGIES = ("submodular", "evidence")  # each a PackingCompactor with the packing policy of that name
BUILTIN_STRATEGIES = (LINE_STRATEGY, *PACKING_STRATEGIES)
DEFAULT_STRATEGY = "evidence"
DEFAULT_BUDGET_TOKENS = 160  # reader tokens: on 80 even-half HotpotQA questions the 1.5B reader scores F1 .605 here vs .610 at 256, ~20% faster
BUILTIN_CONVENTIONS = ("wikipedia", "plain")  # conventions.registry registers them, in this order
DEFAULT_CONVENTIONS = "wikipedia"
