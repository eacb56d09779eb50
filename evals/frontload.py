"""Evidence frontloading and the pressure-adaptive rerank depth (PACE), pure numpy.

**Frontloading** orders a first-stage candidate pool so that complementary multi-hop
evidence comes first, before a reranker that may only score the first ``D`` candidates.
Each candidate ``c`` has a non-negative term representation ``X[c]`` (BM25 or TF-IDF term
weights, one column per term) and a weight ``w[c]``; each term (dimension) ``t`` has a
non-negative importance ``u[t]``. The coverage objective is

    F(S) = sum_t u[t] * max_{c in S} w[c] * X[c, t]        (max over the empty set = 0)

so a new candidate only scores for the mass it adds above what the selected set already
covers on each dimension. The weight is the direct query-candidate score plus a *soft
anchor* bonus: candidates similar to the top seeds are promoted, which is how a bridge
paragraph (sharing an entity with a seed, not with the query) enters the prefix.

Why non-negativity matters: with ``V = w X >= 0`` and ``u >= 0``, adding a candidate can
only raise a per-dimension max (``F`` is monotone), and the raise ``(V[c,t] - m_t)^+``
shrinks as the covered level ``m_t`` grows (diminishing returns): ``F`` is a weighted sum
of max-coverage functions, monotone submodular, so the greedy order's every prefix is
within ``1 - 1/e`` of the best set of that size. Signed coordinates (dense embeddings)
break this: a dimension's max over negative values, or the clamp at 0 of the empty set,
no longer measures covered meaning, and a negative ``u`` makes ``F`` decrease. Inputs are
therefore rejected unless non-negative.

The objective (:class:`CoverageObjective`) is kept apart from the search
(:func:`greedy_order`): the greedy only asks for gains and says what it picked. Ties are
broken by the lower candidate index (first-stage order), so orders are deterministic.

**Adaptive depth**: :class:`DepthController` keeps ``D = d_max`` while the reranker's
backlog is no larger than the LLM's, steps ``D`` down one whole batch per decision while
the reranker is the more congested stage (never below ``d_min``), and back up one batch
per decision when the pressure clears.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.retrieval.retrievers import top_k_indices

__all__ = [
    "TIE_TOLERANCE",
    "CoverageObjective",
    "DepthController",
    "FrontloadResult",
    "anchor_scores",
    "frontload",
    "greedy_order",
    "mmr_order",
]


def _nonneg_matrix(name: str, a: np.ndarray, ndim: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    if np.any(a < 0):
        raise ValueError(f"{name} must be non-negative (coverage is only submodular for non-negative values)")
    return a


@dataclass(frozen=True, slots=True, eq=False)
class CoverageObjective:
    """``F(S) = sum_t u[t] * max_{c in S} values[c, t]`` over non-negative ``values`` and ``u``.

    ``values`` is ``(n, m)`` (the already weighted ``w[c] * X[c, t]``), ``dim_weights`` is
    ``(m,)``. Build with :meth:`create`, which validates shapes and signs.
    """

    values: np.ndarray
    dim_weights: np.ndarray

    @classmethod
    def create(cls, values: np.ndarray, dim_weights: np.ndarray) -> CoverageObjective:
        v = _nonneg_matrix("values", values, 2)
        u = _nonneg_matrix("dim_weights", dim_weights, 1)
        if v.shape[1] != u.shape[0]:
            raise ValueError(f"values has {v.shape[1]} dimensions but dim_weights has {u.shape[0]}")
        return cls(v, u)

    @property
    def size(self) -> int:
        return int(self.values.shape[0])

    def empty_cover(self) -> np.ndarray:
        """The per-dimension covered level of the empty set (zeros)."""
        return np.zeros(self.values.shape[1])

    def gains(self, covered: np.ndarray) -> np.ndarray:
        """Marginal gain of every candidate given the covered levels ``covered``."""
        return np.maximum(self.values - covered, 0.0) @ self.dim_weights

    def add(self, covered: np.ndarray, index: int) -> np.ndarray:
        """Covered levels after adding candidate ``index``."""
        return np.maximum(covered, self.values[index])

    def value(self, selected) -> float:
        """``F`` of a set of candidate indices."""
        idx = list(selected)
        if not idx:
            return 0.0
        return float(self.values[idx].max(axis=0) @ self.dim_weights)


@dataclass(frozen=True, slots=True)
class FrontloadResult:
    """A greedy order (a permutation of ``range(n)``) and the gain of each step.

    ``seeds`` are the candidates used as soft anchors (empty for a plain greedy call);
    ``gains[i]`` is what ``order[i]`` added when it was picked (non-increasing).
    """

    order: tuple[int, ...]
    gains: tuple[float, ...]
    seeds: tuple[int, ...] = ()


TIE_TOLERANCE = 1e-12


def greedy_order(objective: CoverageObjective) -> FrontloadResult:
    """Order all candidates by greedy marginal gain; ties (and zero gains) by lower index.

    Gains within ``TIE_TOLERANCE`` (relative) of the best are ties.
    """
    n = objective.size
    covered = objective.empty_cover()
    remaining = np.ones(n, dtype=bool)
    order: list[int] = []
    gains: list[float] = []
    for _ in range(n):
        g = np.where(remaining, objective.gains(covered), -np.inf)
        best = g.max()
        # a tie (equal up to float rounding, which BLAS may order differently per row)
        # goes to the lowest index
        i = int(np.flatnonzero(g >= best - TIE_TOLERANCE * max(1.0, abs(best)))[0])
        order.append(i)
        gains.append(float(g[i]))
        remaining[i] = False
        covered = objective.add(covered, i)
    return FrontloadResult(tuple(order), tuple(gains))


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def anchor_scores(term_matrix: np.ndarray, relevance: np.ndarray, n_seeds: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Soft-anchor score of each candidate and the seeds used.

    Seeds are the ``n_seeds`` most relevant candidates (ties by index). A candidate's
    anchor score is its highest cosine similarity (in ``[0, 1]`` for non-negative rows) to
    a seed other than itself.
    """
    x = _nonneg_matrix("term_matrix", term_matrix, 2)
    rel = _nonneg_matrix("relevance", relevance, 1)
    if n_seeds < 0:
        raise ValueError(f"n_seeds must be >= 0, got {n_seeds}")
    seeds = tuple(int(i) for i in top_k_indices(rel, n_seeds))
    if not seeds:
        return np.zeros(x.shape[0]), seeds
    unit = _unit_rows(x)
    sim = unit @ unit[list(seeds)].T  # (n, n_seeds)
    for j, s in enumerate(seeds):
        sim[s, j] = 0.0
    return sim.max(axis=1), seeds


def frontload(
    term_matrix: np.ndarray,
    relevance: np.ndarray,
    dim_weights: np.ndarray,
    *,
    n_seeds: int = 3,
    anchor_weight: float = 0.5,
    seed_expansion: float = 0.0,
) -> FrontloadResult:
    """PACE frontloading of ``n`` candidates (rows of ``term_matrix``, first-stage order).

    ``term_matrix`` ``(n, m)``: non-negative term representation of each candidate (rows
    are L2-normalised here, so length does not buy coverage); ``relevance`` ``(n,)``:
    non-negative direct query-candidate scores (scaled here to a maximum of 1);
    ``dim_weights`` ``(m,)``: non-negative importance of each dimension. Candidate weight
    ``w = relevance / max(relevance) + anchor_weight * anchor`` (see
    :func:`anchor_scores`). ``seed_expansion`` > 0 also anchors the dimensions: each
    dimension's weight grows by ``seed_expansion * max(u) * e[t] / max(e)`` with ``e`` the
    per-dimension max of the seeds' unit rows, so terms the seeds share with a bridge
    paragraph (an entity named in the seed) count as query semantics. Returns the greedy
    order over :class:`CoverageObjective` with the gain of each step and the seeds.
    ``ValueError`` on shape or sign errors.
    """
    x = _nonneg_matrix("term_matrix", term_matrix, 2)
    rel = _nonneg_matrix("relevance", relevance, 1)
    if rel.shape[0] != x.shape[0]:
        raise ValueError(f"relevance has {rel.shape[0]} entries for {x.shape[0]} candidates")
    for name, v in (("anchor_weight", anchor_weight), ("seed_expansion", seed_expansion)):
        if v < 0 or not np.isfinite(v):
            raise ValueError(f"{name} must be a finite number >= 0, got {v}")
    top = rel.max() if rel.size else 0.0
    rel_n = rel / top if top > 0 else rel
    anchors, seeds = anchor_scores(x, rel_n, n_seeds)
    weights = rel_n + anchor_weight * anchors
    u = _nonneg_matrix("dim_weights", dim_weights, 1)
    if u.shape[0] != x.shape[1]:
        raise ValueError(f"term_matrix has {x.shape[1]} dimensions but dim_weights has {u.shape[0]}")
    unit = _unit_rows(x)
    if seed_expansion > 0 and seeds:
        e = unit[list(seeds)].max(axis=0)
        if e.max() > 0:
            u = u + seed_expansion * (u.max() if u.max() > 0 else 1.0) * e / e.max()
    live = u > 0  # a zero-weight dimension adds nothing to F: leave it out of the greedy
    objective = CoverageObjective.create((weights[:, None] * unit)[:, live], u[live])
    result = greedy_order(objective)
    return FrontloadResult(result.order, result.gains, seeds)


def mmr_order(term_matrix: np.ndarray, relevance: np.ndarray, lam: float = 0.7) -> tuple[int, ...]:
    """Maximal marginal relevance order (the diversity baseline), ties by lower index.

    Each step picks ``argmax lam * rel - (1 - lam) * max cosine to the picked`` with
    ``rel`` scaled to a maximum of 1 and cosine over the L2-normalised term rows.
    """
    x = _nonneg_matrix("term_matrix", term_matrix, 2)
    rel = _nonneg_matrix("relevance", relevance, 1)
    if rel.shape[0] != x.shape[0]:
        raise ValueError(f"relevance has {rel.shape[0]} entries for {x.shape[0]} candidates")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    top = rel.max() if rel.size else 0.0
    rel_n = rel / top if top > 0 else rel
    unit = _unit_rows(x)
    n = x.shape[0]
    max_sim = np.zeros(n)
    remaining = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        score = np.where(remaining, lam * rel_n - (1.0 - lam) * max_sim, -np.inf)
        i = int(np.argmax(score))
        order.append(i)
        remaining[i] = False
        max_sim = np.maximum(max_sim, unit @ unit[i])
    return tuple(order)


@dataclass(frozen=True, slots=True)
class DepthController:
    """Pressure-adaptive rerank depth: ``D`` in ``{d_min, d_min + batch, ..., d_max}``.

    :meth:`next_depth` is pure: given the current depth and the two backlogs (same unit,
    e.g. seconds of queued work per server), it returns ``d_max``-ward one batch when the
    reranker is no more congested than the LLM, and ``d_min``-ward one batch when it is.
    """

    d_min: int = 20
    d_max: int = 100
    batch: int = 20

    def __post_init__(self) -> None:
        if self.d_min < 1 or self.batch < 1:
            raise ValueError(f"d_min and batch must be >= 1, got d_min={self.d_min}, batch={self.batch}")
        if self.d_max < self.d_min:
            raise ValueError(f"d_max ({self.d_max}) must be >= d_min ({self.d_min})")
        if (self.d_max - self.d_min) % self.batch:
            raise ValueError(f"d_max - d_min ({self.d_max - self.d_min}) must be a multiple of batch ({self.batch})")

    @property
    def depths(self) -> tuple[int, ...]:
        """Every depth the controller can choose, ascending."""
        return tuple(range(self.d_min, self.d_max + 1, self.batch))

    def next_depth(self, current: int, rerank_backlog: float, llm_backlog: float) -> int:
        """The depth for the next request (``ValueError`` for an off-grid ``current``)."""
        if current not in self.depths:
            raise ValueError(f"current depth {current} is not one of {self.depths}")
        if rerank_backlog <= llm_backlog:
            return min(self.d_max, current + self.batch)
        return max(self.d_min, current - self.batch)
