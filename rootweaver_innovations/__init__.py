"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop.

The names below are the supported surface; the packer lives in
:mod:`rootweaver_innovations.packing`, diagnostics in :mod:`rootweaver_innovations.diagnostics`.
"""

from .answer_rules import register_answer_rule
from .budget import Budget
from .compaction import CompactionRequest, CompactionResult, DroppedFact
from .context_format import SynthContext
from .corpus import CorpusError, Passage, QARow, load_corpus_jsonl, load_qa_rows
from .extractive import extractive_answer
from .multihop import Answer, Hop, MultiHopRAG, MultiHopResult, RuleDecomposer
from .records import Fact, facts_from_passages
from .retrieval import BM25Retriever, DenseRetriever, HybridRetriever, Retriever, ScoredPassage
from .text import STOP_WORDS, reasoning_key_terms
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
    "DroppedFact",
    "Fact",
    "Hop",
    "HybridRetriever",
    "MultiHopRAG",
    "MultiHopResult",
    "Passage",
    "QARow",
    "Retriever",
    "RuleDecomposer",
    "ScoredPassage",
    "SynthContext",
    "extractive_answer",
    "facts_from_passages",
    "load_corpus_jsonl",
    "load_qa_rows",
    "make_compactor",
    "reasoning_key_terms",
    "register_answer_rule",
    "register_strategy",
    "strategy_names",
]
