"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop.

The names below are the supported surface; the packer lives in
:mod:`rootweaver_innovations.packing`, diagnostics in :mod:`rootweaver_innovations.diagnostics`.
Each name is imported from its submodule on first use (PEP 562), so importing one light
submodule (e.g. :mod:`~rootweaver_innovations.corpus`) does not load numpy or the packers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_names

if TYPE_CHECKING:
    from .answer_rules import register_answer_rule
    from .budget import Budget
    from .compaction import CompactionRequest, CompactionResult, DroppedFact
    from .context_format import SynthContext
    from .corpus import CorpusError, Passage, QARow, load_corpus_jsonl, load_qa_rows
    from .extractive import extractive_answer
    from .multihop import Answer, Hop, MultiHopRAG, MultiHopResult, RuleDecomposer
    from .records import Fact, facts_from_passages
    from .retrieval import BM25Retriever, DenseRetriever, HybridRetriever, Retriever, ScoredPassage
    from .strategies import DEFAULT_STRATEGY, Compactor, make_compactor, register_strategy, strategy_names
    from .text import STOP_WORDS, reasoning_key_terms

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

_SUBMODULE = {  # public name -> the submodule defining it
    "DEFAULT_STRATEGY": "strategies",
    "STOP_WORDS": "text",
    "Answer": "multihop",
    "BM25Retriever": "retrieval",
    "Budget": "budget",
    "CompactionRequest": "compaction",
    "CompactionResult": "compaction",
    "Compactor": "strategies",
    "CorpusError": "corpus",
    "DenseRetriever": "retrieval",
    "DroppedFact": "compaction",
    "Fact": "records",
    "Hop": "multihop",
    "HybridRetriever": "retrieval",
    "MultiHopRAG": "multihop",
    "MultiHopResult": "multihop",
    "Passage": "corpus",
    "QARow": "corpus",
    "Retriever": "retrieval",
    "RuleDecomposer": "multihop",
    "ScoredPassage": "retrieval",
    "SynthContext": "context_format",
    "extractive_answer": "extractive",
    "facts_from_passages": "records",
    "load_corpus_jsonl": "corpus",
    "load_qa_rows": "corpus",
    "make_compactor": "strategies",
    "reasoning_key_terms": "text",
    "register_answer_rule": "answer_rules",
    "register_strategy": "strategies",
    "strategy_names": "strategies",
}


__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE, globals())
