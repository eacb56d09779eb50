"""The defaults the command line and the configuration schema show, in a module that imports nothing.

The modules that use them (:mod:`~rootweaver_innovations.documents.corpus`,
:mod:`~rootweaver_innovations.documents.folders`, :mod:`~rootweaver_innovations.compaction.strategies`) import
them from here and re-export them, so that the ``rootweaver`` parser and the configuration schema
get them without loading those modules (dataclasses, the tokenizer, the packers, numpy): ``--help``
starts fast. :mod:`~rootweaver_innovations.compaction.strategies` registers the built-in strategies
under these names, in this order.
"""

from __future__ import annotations

__all__ = ["ANSWERABILITY_THRESHOLD", "AUTO_RETRIEVER", "BUDGET_UNIT", "BUILTIN_CONVENTIONS",
           "BUILTIN_STRATEGIES", "CHUNK_TOKENS", "DEFAULT_ANSWER_RULES", "DEFAULT_BUDGET_TOKENS",
           "DEFAULT_CONVENTIONS", "DEFAULT_RETRIEVER_MODE", "DEFAULT_STRATEGY", "INDEX_CHUNK_PASSAGES",
           "LINE_STRATEGY", "MAX_FILE_BYTES", "MAX_HOPS", "MAX_INPUT_CHARS", "MAX_INPUT_LINES",
           "MAX_PASSAGES", "MAX_RECORD_BYTES", "OVERLAP_TOKENS", "PACKING_STRATEGIES", "PASSAGES_PER_HOP",
           "RETRIEVER_CHOICES", "RETRIEVER_MODES", "STOP_RULE", "TAGGED_BUDGET_TOKENS"]

# corpus reading and chunking
MAX_RECORD_BYTES = 1 << 20  # the default per-record (per-line) limit: 1 MiB
CHUNK_TOKENS = 128  # ChunkingSettings.chunk_tokens: largest chunk of a document, in reader tokens
OVERLAP_TOKENS = 16  # ChunkingSettings.overlap_tokens: tokens a chunk repeats from the previous one
MAX_FILE_BYTES = 64 << 20  # ChunkingSettings.max_file_bytes: a larger document file is skipped
INDEX_CHUNK_PASSAGES = 20_000  # build_index's chunk_size: passages parsed and tokenised per chunk

# retrieval (retrieval.modes)
RETRIEVER_MODES = ("bm25", "dense", "hybrid")  # what every hop searches with
AUTO_RETRIEVER = "auto"  # hybrid over an index that holds embeddings, else bm25
RETRIEVER_CHOICES = (AUTO_RETRIEVER, *RETRIEVER_MODES)  # retriever.mode's values
DEFAULT_RETRIEVER_MODE = AUTO_RETRIEVER

# the hop loop (MultiHopRAG)
MAX_HOPS = 10  # most retrieval hops per question
MAX_PASSAGES = 10  # most passages in the trajectory per question
STOP_RULE = "evidence"  # the hop policy: evidence (title links and bridge entities) or coverage
PASSAGES_PER_HOP = 3  # new passages per hop under the coverage rule
ANSWERABILITY_THRESHOLD = 0.6  # share of a sub-query's key terms the context must cover (coverage rule)
DEFAULT_ANSWER_RULES = ("unknown_source", "date_comparison")  # answer rules tried before the reader, by registered name

# compaction of the synth context
LINE_STRATEGY = "line"  # LineCompactor (docs/adr/0001)
PACKING_STRATEGIES = ("submodular", "evidence")  # each a PackingCompactor with the packing policy of that name
BUILTIN_STRATEGIES = (LINE_STRATEGY, *PACKING_STRATEGIES)
DEFAULT_STRATEGY = "evidence"
DEFAULT_BUDGET_TOKENS = 160  # reader tokens: on 80 even-half HotpotQA questions the 1.5B reader scores F1 .605 here vs .610 at 256, ~20% faster
# the default budget when a document read carries a source or a date: each of its lines spends about half
# its reader tokens on headline and source tag (news), so 160 tokens hold sentences of two articles
TAGGED_BUDGET_TOKENS = 400
BUDGET_UNIT = "tokens"  # the budget's unit: reader tokens (or chars)
MAX_INPUT_CHARS = 2_000_000  # a full context longer than this is refused before compaction
MAX_INPUT_LINES = 5000  # a full context of more lines is refused before compaction
BUILTIN_CONVENTIONS = ("wikipedia", "plain")  # conventions.registry registers them, in this order
DEFAULT_CONVENTIONS = "wikipedia"
