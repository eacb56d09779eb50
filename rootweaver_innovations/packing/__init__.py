"""Budgeted evidence packing: candidates, budgets, the four-term objective, greedy, policies.

The public surface is re-exported here; everything else is an implementation detail.
"""

from __future__ import annotations

from ..selection import ConflictingCandidateError, Omission, PackResult, Packed
from .budget import UNITS, Budget, QwenTokenCounter, TokenCounter, default_token_counter
from .candidates import Candidate, Header
from .compactor import SubmodularCompactor
from .objective import SubmodularObjective, SubmodularWeights
from .policies import POLICIES, PackingProblem, Selection, pack, register_policy
from .similarity import Similarity, dense_similarity, tfidf_relevance, tfidf_similarity

__all__ = [
    "POLICIES",
    "UNITS",
    "Budget",
    "Candidate",
    "ConflictingCandidateError",
    "Header",
    "Omission",
    "PackResult",
    "Packed",
    "PackingProblem",
    "QwenTokenCounter",
    "Selection",
    "SubmodularCompactor",
    "SubmodularObjective",
    "SubmodularWeights",
    "TokenCounter",
    "dense_similarity",
    "default_token_counter",
    "pack",
    "register_policy",
    "tfidf_relevance",
    "tfidf_similarity",
]
