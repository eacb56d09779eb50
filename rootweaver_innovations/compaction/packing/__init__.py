"""Budgeted evidence packing: candidates, budgets, the selection contract, policies, compactors.

The public surface is listed in ``__all__``; everything else is an implementation detail.
Imports run one way (candidates <- budget, selection <- policies <- evidence_policy, which
reads the evidence model of :mod:`rootweaver_innovations.compaction.evidence`), so the package has no
import cycle. ``EvidenceModel`` and ``EvidenceParams`` are that package's, re-exported.
"""

from __future__ import annotations

from rootweaver_innovations.compaction.budget import UNITS, Budget, QwenTokenCounter, TokenCounter, default_token_counter
from rootweaver_innovations.compaction.packing.candidates import Candidate, Header, fact_candidates
from rootweaver_innovations.compaction.evidence import EvidenceModel, EvidenceParams
from rootweaver_innovations.compaction.packing import evidence_policy  # noqa: F401 - registers the "evidence" policy (import order: after ..evidence)
from rootweaver_innovations.compaction.packing.objective import SubmodularObjective, SubmodularWeights
from rootweaver_innovations.compaction.packing.policies import POLICIES, PackingProblem, Selection, pack, packing_problem, register_policy
from rootweaver_innovations.compaction.packing.selection import ConflictingCandidateError, Omission, PackResult, Packed
from rootweaver_innovations.compaction.packing.similarity import Similarity, dense_similarity, tfidf_similarity

__all__ = [
    "POLICIES",
    "UNITS",
    "Budget",
    "Candidate",
    "ConflictingCandidateError",
    "EvidenceModel",
    "EvidenceParams",
    "Header",
    "Omission",
    "PackResult",
    "Packed",
    "PackingProblem",
    "QwenTokenCounter",
    "Selection",
    "Similarity",
    "SubmodularObjective",
    "SubmodularWeights",
    "TokenCounter",
    "default_token_counter",
    "dense_similarity",
    "fact_candidates",
    "pack",
    "packing_problem",
    "register_policy",
    "tfidf_similarity",
]
