"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop.

The names below are the supported surface; the packer lives in
:mod:`rootweaver_innovations.packing`, diagnostics in :mod:`rootweaver_innovations.diagnostics`.
"""

from .compaction import (
    STOP_WORDS,
    CompactionRequest,
    CompactionResult,
    DroppedLine,
    KeptLine,
    compact_lines,
    reasoning_key_terms,
)
from .corpus import CorpusError, Passage, QARow, load_corpus_jsonl, load_qa_rows
from .extractive import extractive_answer
from .multihop import Answer, Hop, MultiHopRAG, MultiHopResult, RuleDecomposer
from .packing import Budget
from .records import Fact, facts_from_passages
from .retrieval import BM25Retriever, DenseRetriever, HybridRetriever, Retriever, ScoredPassage
from .strategies import DEFAULT_STRATEGY, Compactor, make_compactor, register_strategy, strategy_names

__all__ = [
    "DEFAULT_STRATEGY",
    "STOP_WORDS",
    "Answer",
    "BM25Retriever",
    "Budget",
    "CompactionRequest",
    "CompactionResult",
    "Compactor",
    "CorpusError",
    "DenseRetriever",
    "DroppedLine",
    "Fact",
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
    "facts_from_passages",
    "load_corpus_jsonl",
    "load_qa_rows",
    "make_compactor",
    "reasoning_key_terms",
    "register_strategy",
    "strategy_names",
]
