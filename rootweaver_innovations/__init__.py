"""rootweaver's algorithms: compaction, packing, retrieval and the multi-hop loop.

The names below are the supported surface; the packer lives in
:mod:`rootweaver_innovations.compaction.packing`, diagnostics in :mod:`evals.diagnostics`.
Each name is imported from its submodule on first use (PEP 562), so importing one light
submodule (e.g. :mod:`~rootweaver_innovations.documents.corpus`) does not load numpy or the packers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootweaver_innovations.lazy import lazy_names

if TYPE_CHECKING:
    from rootweaver_innovations.answer_rules.registry import register_answer_rule
    from rootweaver_innovations.compaction.budget import Budget
    from rootweaver_innovations.compaction.line import CompactionRequest, CompactionResult, DroppedFact
    from rootweaver_innovations.compaction.synth_context import SynthContext
    from rootweaver_innovations.documents.corpus import CorpusError, Passage, load_corpus_jsonl
    from rootweaver_innovations.answer_rules.extractive import extractive_answer
    from rootweaver_innovations.loop.multihop import Answer, Hop, MultiHopRAG, MultiHopResult, RuleDecomposer
    from rootweaver_innovations.records import Fact, facts_from_passages
    from rootweaver_innovations.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, Retriever, ScoredPassage
    from rootweaver_innovations.compaction.strategies import DEFAULT_STRATEGY, Compactor, make_compactor, register_strategy, strategy_names
    from rootweaver_innovations.text import STOP_WORDS, reasoning_key_terms

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
    "Retriever",
    "RuleDecomposer",
    "ScoredPassage",
    "SynthContext",
    "extractive_answer",
    "facts_from_passages",
    "load_corpus_jsonl",
    "make_compactor",
    "reasoning_key_terms",
    "register_answer_rule",
    "register_strategy",
    "strategy_names",
]

_SUBMODULE = {  # public name -> the submodule defining it
    "DEFAULT_STRATEGY": "compaction.strategies",
    "STOP_WORDS": "text",
    "Answer": "loop.multihop",
    "BM25Retriever": "retrieval.retrievers",
    "Budget": "compaction.budget",
    "CompactionRequest": "compaction.line",
    "CompactionResult": "compaction.line",
    "Compactor": "compaction.strategies",
    "CorpusError": "documents.corpus",
    "DenseRetriever": "retrieval.retrievers",
    "DroppedFact": "compaction.line",
    "Fact": "records",
    "Hop": "loop.multihop",
    "HybridRetriever": "retrieval.retrievers",
    "MultiHopRAG": "loop.multihop",
    "MultiHopResult": "loop.multihop",
    "Passage": "documents.corpus",
    "Retriever": "retrieval.retrievers",
    "RuleDecomposer": "loop.multihop",
    "ScoredPassage": "retrieval.retrievers",
    "SynthContext": "compaction.synth_context",
    "extractive_answer": "answer_rules.extractive",
    "facts_from_passages": "records",
    "load_corpus_jsonl": "documents.corpus",
    "make_compactor": "compaction.strategies",
    "reasoning_key_terms": "text",
    "register_answer_rule": "answer_rules.registry",
    "register_strategy": "compaction.strategies",
    "strategy_names": "compaction.strategies",
}


__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE, globals())
