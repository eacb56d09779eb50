"""The evidence model: one object for the fitted model file, and :meth:`EvidenceModel.score`.

Two fixed linear models over a problem's named features (:mod:`.features`):

- **documents**: ``q_d``, a logistic model of "document ``d`` is needed evidence", clipped
  to ``[1e-4, 1 - 1e-4]`` (the model file's ``document`` section: a bias and weights);
- **sentences**: ``p_i``, the share of "this sentence holds the answer" among the problem's
  candidates (a softmax, so the ``p`` of a problem sum to 1; the ``sentence`` section), from
  the sentence features computed with the problem's ``q_d``.

Both are fitted state: weights by feature name, the packing parameters and their provenance
live in ``rootweaver_innovations/data/evidence_model.json``, written by
``scripts/fit_evidence_weights.py`` and read by one :class:`EvidenceModel` object.
Features are matched to the file's names, never by position. The file may carry a second set
of both models, ``untitled``, fitted only on documents titled by ids (opaque ids, windows a
user cut from files, whose candidates name the file's subject as their title): a problem whose
every candidate is titled by an id (``id_title``) is scored with it, any other with the first.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rootweaver_innovations.compaction.checks import check_int, check_nonnegative
from rootweaver_innovations.compaction.evidence.features import EvidenceProblem, ProblemFeatures

__all__ = ["MODEL_FILE", "EvidenceModel", "EvidenceParams", "EvidenceScores", "score", "shipped_model"]

_Q_CLIP = 1e-4  # q_d is kept in [1e-4, 1 - 1e-4]
MODEL_FILE = "evidence_model.json"
MODEL_FORMAT = 1


@dataclass(frozen=True, slots=True)
class EvidenceParams:
    """The ``evidence`` packing policy's parameters, kept in the model file (chosen on the
    tuning half, see ``docs/packing_results.md``).

    ``coverage`` (>= 0) weighs the expected number of needed documents covered (the summed
    ``q_d`` of the documents the knapsack takes a sentence of) against the summed answer
    shares; ``price`` (>= 0) is charged per sentence the knapsack takes, so a sentence whose
    share is below it is taken there only to cover its document; ``fill_evidence`` (>= 0) is
    the weight of a sentence's document likelihood ``q_d`` beside its share ``p`` when the
    budget left after the knapsack is filled (``p + fill_evidence * q_d``, best first,
    anything that fits); ``options_per_doc`` (>= 1) how many of a document's best sentences
    by ``p`` the knapsack considers (its cheapest sentence is always considered too),
    ``max_per_doc`` (1 or 2) how many it may take from one document; ``max_cover_docs``
    (>= 1) how many documents, those with the largest coverage bonus, enter the knapsack (the
    rest can still be taken by the fill), which bounds its memory at
    ``2 x (max_cover_docs + 1) x (capacity + 1)`` cells however long the input. Bad values raise
    ``ValueError``.
    """

    coverage: float = 0.4
    price: float = 0.02
    fill_evidence: float = 0.02
    options_per_doc: int = 3
    max_per_doc: int = 2
    max_cover_docs: int = 64

    def __post_init__(self) -> None:
        for name in ("coverage", "price", "fill_evidence"):
            check_nonnegative(name, getattr(self, name))
        check_int("options_per_doc", self.options_per_doc, 1)
        if self.max_per_doc not in (1, 2) or isinstance(self.max_per_doc, bool):
            raise ValueError(f"max_per_doc must be 1 or 2, got {self.max_per_doc!r}")
        check_int("max_cover_docs", self.max_cover_docs, 1)


class EvidenceScores(NamedTuple):
    """A problem's scores: ``answers[i]``, candidate i's share of "holds the answer"
    (non-negative, summing to 1 over a non-empty problem), and ``documents[d]``, document d's
    probability of being needed evidence (``doc_index`` order)."""

    answers: np.ndarray
    documents: np.ndarray


def _matrix(columns: Mapping[str, Any], names: tuple[str, ...], rows: int) -> np.ndarray:
    """Stack named feature columns in ``names`` order (``ValueError`` naming any missing feature)."""
    missing = [n for n in names if n not in columns]
    if missing:
        raise ValueError(f"evidence model names features the code does not compute: {missing}")
    out = np.empty((rows, len(names)))
    for j, name in enumerate(names):
        out[:, j] = columns[name]  # scalars and bool columns broadcast / cast here
    return out


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


@dataclass(frozen=True, slots=True, eq=False)
class EvidenceModel:
    """The two fitted models and the packing parameters, as read from one model file.

    ``document_weights`` / ``sentence_weights`` map feature names to weights (a name
    :class:`~.features.ProblemFeatures` does not compute is a ``ValueError`` when the model
    is used); ``document_bias`` is the logistic intercept; ``provenance`` says what data,
    rows, command and date produced the weights. ``untitled``, when set, is the model for
    problems whose every candidate is titled by an id (its own weights and provenance; its
    ``params`` are this model's). Build it with :meth:`load` (a JSON file; the shipped one by
    default) or directly for experiments.
    """

    document_weights: Mapping[str, float]
    document_bias: float
    sentence_weights: Mapping[str, float]
    params: EvidenceParams = EvidenceParams()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    untitled: EvidenceModel | None = None

    def __post_init__(self) -> None:
        for section in ("document_weights", "sentence_weights"):
            table = getattr(self, section)
            bad = [k for k, v in table.items() if not isinstance(v, (int, float)) or not np.isfinite(v)]
            if bad:
                raise ValueError(f"evidence model {section}: non-finite or non-numeric weights for {bad}")

    @classmethod
    def load(cls, path: str | Path | None = None) -> EvidenceModel:
        """Read a model file (format 1); ``None``: the shipped ``data/evidence_model.json``.

        Raises ``ValueError`` naming the file and the problem for a missing file, bad JSON,
        another format version or a missing key.
        """
        if path is None:
            return shipped_model()
        where = str(path)
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{where}: cannot read the evidence model ({exc})") from None
        return cls.from_mapping(raw, source=where)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, source: str = "<mapping>") -> EvidenceModel:
        """Build from the decoded JSON of a model file (see :meth:`load`)."""
        try:
            if raw["format"] != MODEL_FORMAT:
                raise ValueError(f"format {raw['format']!r}, expected {MODEL_FORMAT}")
            params = EvidenceParams(**raw.get("params", {}))

            def weights(section: Mapping[str, Any], untitled: EvidenceModel | None) -> EvidenceModel:
                return cls(document_weights=dict(section["document"]["weights"]),
                           document_bias=float(section["document"]["bias"]),
                           sentence_weights=dict(section["sentence"]["weights"]), params=params,
                           provenance=dict(section.get("provenance", {})), untitled=untitled)

            return weights(raw, weights(raw["untitled"], None) if "untitled" in raw else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: not an evidence model file ({exc})") from None

    def to_mapping(self) -> dict[str, Any]:
        """The JSON-ready form :meth:`from_mapping` reads."""
        p = self.params
        out = {
            "format": MODEL_FORMAT,
            "provenance": dict(self.provenance),
            "params": {"coverage": p.coverage, "price": p.price, "fill_evidence": p.fill_evidence,
                       "options_per_doc": p.options_per_doc,
                       "max_per_doc": p.max_per_doc, "max_cover_docs": p.max_cover_docs},
            **self._weights(),
        }
        if self.untitled is not None:
            out["untitled"] = {"provenance": dict(self.untitled.provenance), **self.untitled._weights()}
        return out

    def _weights(self) -> dict[str, Any]:
        return {"document": {"bias": self.document_bias, "weights": dict(self.document_weights)},
                "sentence": {"weights": dict(self.sentence_weights)}}

    def document_likelihood(self, columns: Mapping[str, Any], n_doc: int) -> np.ndarray:
        """``q_d`` from named document features, clipped to ``[1e-4, 1 - 1e-4]``."""
        names = tuple(self.document_weights)
        z = _matrix(columns, names, n_doc) @ np.array([self.document_weights[n] for n in names]) + self.document_bias
        return np.clip(1.0 / (1.0 + np.exp(-z)), _Q_CLIP, 1.0 - _Q_CLIP)

    def answer_shares(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """``p_i`` from named sentence features: a softmax over the problem's candidates."""
        names = tuple(self.sentence_weights)
        return _softmax(_matrix(columns, names, n) @ np.array([self.sentence_weights[k] for k in names]))

    def score(self, problem: EvidenceProblem) -> EvidenceScores:
        """The problem's answer shares ``p`` and document likelihoods ``q`` (empty for no
        candidate), by the ``untitled`` weights when set and every candidate is titled by an id."""
        if not problem.candidates:
            return EvidenceScores(np.zeros(0), np.zeros(0))
        untitled = self.untitled
        model = untitled if untitled is not None and all(c.id_title for c in problem.candidates) else self
        features = ProblemFeatures(problem)
        q = model.document_likelihood(features.documents(), features.n_documents)
        return EvidenceScores(model.answer_shares(features.sentences(q), len(problem.candidates)), q)


@functools.cache
def shipped_model() -> EvidenceModel:
    """The model of the shipped ``data/evidence_model.json`` (read once)."""
    ref = resources.files("rootweaver_innovations") / "data" / MODEL_FILE
    with resources.as_file(ref) as path:
        return EvidenceModel.load(path)


def score(problem: EvidenceProblem, model: EvidenceModel | None = None) -> EvidenceScores:
    """``problem`` scored by ``model`` (the shipped one by default), see :meth:`EvidenceModel.score`."""
    return (model or shipped_model()).score(problem)
