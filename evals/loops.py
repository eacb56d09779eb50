"""The loop the evals measure: the product's own assembly, with no reader.

:func:`product_loop` is :func:`~rootweaver_capabilities.assembly.build_rag` of the default
config (what ``rootweaver ask`` runs) over the eval's retriever, compaction off and no
synthesizer (the evals score retrieval and synth contexts, not answers); :func:`compacted` the
same loop with a compaction strategy on. Variants share the loop's retriever, decomposer and
title index, so their trajectories are comparable by construction.
"""

from __future__ import annotations

import dataclasses

from rootweaver_capabilities.assembly import build_rag
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.retrieval.retrievers import Retriever
from rootweaver_innovations.compaction.strategies import make_compactor

__all__ = ["compacted", "product_loop"]


def product_loop(retriever: Retriever, **knobs: object) -> MultiHopRAG:
    """``build_rag`` of the default config with top-level ``knobs`` (``max_passages``,
    ``stop_rule``, ``max_hops``, ...) over ``retriever``; compaction off, no synthesizer.
    An unknown or invalid knob is a ``ConfigError`` naming it."""
    base = MultiHopConfig(source="eval")
    config = dataclasses.replace(base, compaction=dataclasses.replace(base.compaction, enabled=False), **knobs)
    return dataclasses.replace(build_rag(config, retriever=retriever), synthesizer=None)


def compacted(rag: MultiHopRAG, strategy: str, budget: Budget) -> MultiHopRAG:
    """``rag`` with compaction on: ``strategy`` under ``budget`` for every question."""
    return dataclasses.replace(rag, compaction_enabled=True, compaction_budget=budget, tagged_budget=None,
                               compactor=make_compactor(strategy))
