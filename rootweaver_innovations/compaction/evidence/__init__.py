"""The evidence model: which documents a multi-hop question needs and which sentence holds its answer.

- :mod:`.features`: the named features of a problem's documents and sentences (pure);
- :mod:`.model`: the fitted model file (``data/evidence_model.json``) as one
  :class:`EvidenceModel` with its provenance, and :func:`score`, a problem's answer shares
  ``p`` (per candidate) and document evidence likelihoods ``q`` (per document).

Read by the ``evidence`` packing policy (:mod:`rootweaver_innovations.compaction.packing.evidence_policy`),
the extractive reader and ``scripts/fit_evidence_weights.py``. This package imports nothing
of :mod:`rootweaver_innovations.compaction.packing` (a packing problem is read through the
:class:`EvidenceProblem` protocol), so packing can import it without a cycle.
"""

from __future__ import annotations

from rootweaver_innovations.compaction.evidence.features import EvidenceCandidate, EvidenceProblem, ProblemFeatures
from rootweaver_innovations.compaction.evidence.model import MODEL_FILE, EvidenceModel, EvidenceParams, EvidenceScores, score, shipped_model

__all__ = [
    "MODEL_FILE",
    "EvidenceCandidate",
    "EvidenceModel",
    "EvidenceParams",
    "EvidenceProblem",
    "EvidenceScores",
    "ProblemFeatures",
    "score",
    "shipped_model",
]
