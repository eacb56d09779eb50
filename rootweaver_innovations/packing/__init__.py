"""Budgeted evidence packing: candidates, budgets, the four-term objective, greedy, policies.

The public surface is re-exported here, resolved on first access (PEP 562) so that
:mod:`rootweaver_innovations.selection`, which needs :class:`Candidate`, and the policies,
which need the selection contract, can import each other's modules in either order.
Everything not listed in ``__all__`` is an implementation detail.
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES = {
    "POLICIES": ".policies",
    "PackingProblem": ".policies",
    "Selection": ".policies",
    "pack": ".policies",
    "register_policy": ".policies",
    "UNITS": ".budget",
    "Budget": ".budget",
    "QwenTokenCounter": ".budget",
    "TokenCounter": ".budget",
    "default_token_counter": ".budget",
    "Candidate": ".candidates",
    "Header": ".candidates",
    "SubmodularCompactor": ".compactor",
    "SubmodularObjective": ".objective",
    "SubmodularWeights": ".objective",
    "Similarity": ".similarity",
    "dense_similarity": ".similarity",
    "tfidf_relevance": ".similarity",
    "tfidf_similarity": ".similarity",
    "ConflictingCandidateError": "..selection",
    "Omission": "..selection",
    "PackResult": "..selection",
    "Packed": "..selection",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
