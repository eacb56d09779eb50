"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop.

The names below are the supported surface; the packer lives in
:mod:`rootweaver_innovations.packing`, diagnostics in :mod:`rootweaver_innovations.diagnostics`.
"""

from .compaction import STOP_WORDS, CompactionResult, DroppedLine, KeptLine, compact_lines, reasoning_key_terms
from .corpus import CorpusError, Passage, QARow, load_corpus_jsonl, load_qa_rows
from .multihop import Answer, Hop, MultiHopRAG, MultiHopResult, RuleDecomposer, extractive_answer
from .retrieval import BM25Retriever, DenseRetriever, HybridRetriever, Retriever, ScoredPassage
from .strategies import STRATEGIES, make_compactor

__all__ = [
    "STOP_WORDS",
    "STRATEGIES",
    "Answer",
    "BM25Retriever",
    "CompactionResult",
    "CorpusError",
    "DenseRetriever",
    "DroppedLine",
    "Hop",
    "HybridRetriever",
    "KeptLine",
    "MultiHopRAG",
    "MultiHopResult",
    "Passage",
    "QARow",
    "Retriever",
    "RuleDecomposer",
    "ScoredPassage",
    "compact_lines",
    "extractive_answer",
    "load_corpus_jsonl",
    "load_qa_rows",
    "make_compactor",
    "reasoning_key_terms",
]
