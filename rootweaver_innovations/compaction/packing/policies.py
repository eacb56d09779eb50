"""Packing policies on identical candidates, a registry for them, and :func:`pack`.

Every policy sees the same :class:`PackingProblem`: the eligible candidates left by the
selection contract (:func:`rootweaver_innovations.compaction.packing.selection.screen`) in rank order, their
similarity, the query-term incidence, the shared objective and the cost ledger. None sees
an evaluation label. Every policy honours the budget through the ledger (skip what does
not fit, keep trying smaller ones) and the snippet cap.

- ``naive``: candidates by rank; take each one that still fits.
- ``focused``: each step takes the fitting candidate with the most new query terms, then a
  document not yet in the packet, then relevance, then rank (no length normalisation).
- ``mmr``: each step takes the fitting candidate maximising
  0.7 * relevance / max relevance - 0.3 * max similarity to the packet.
- ``submodular``: cost-scaled lazy greedy on the four-term objective plus the
  best-singleton fallback (:mod:`~rootweaver_innovations.compaction.packing.greedy`). When every
  eligible candidate fits together (and within the cap) it takes them all: F is monotone,
  so that is the optimum, and it makes packing its own output a no-op.

New policies join with :func:`register_policy`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.registry import register
from rootweaver_innovations.compaction.packing.selection import PackResult, Packed, account, screen
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.packing.knapsack import Knapsack
from rootweaver_innovations.compaction.packing.candidates import Candidate, Header
from rootweaver_innovations.compaction.packing.greedy import lazy_greedy
from rootweaver_innovations.compaction.packing.objective import SubmodularObjective, SubmodularWeights, query_incidence
from rootweaver_innovations.compaction.packing.similarity import Similarity, tfidf_similarity

__all__ = [
    "MMR_LAMBDA",
    "POLICIES",
    "PackingProblem",
    "Policy",
    "Selection",
    "pack",
    "packing_problem",
    "register_policy",
]

MMR_LAMBDA = 0.7


@dataclass(frozen=True, eq=False)
class PackingProblem:
    """What a policy sees. ``knapsack`` is the run's (mutable) cost ledger, reset by the policy.

    ``similarity`` and ``objective`` are built on first use only (the policies that never
    read them, such as ``naive``, ``focused`` and ``evidence``, do not pay for them);
    ``given_similarity`` is a precomputed one over ``candidates`` (``None``: TF-IDF cosine).
    """

    candidates: tuple[Candidate, ...]
    query: str
    relevance: np.ndarray
    doc_index: np.ndarray
    incidence: np.ndarray
    knapsack: Knapsack
    max_snippets: int | None
    weights: SubmodularWeights = SubmodularWeights()
    given_similarity: Similarity | None = None

    @functools.cached_property
    def similarity(self) -> Similarity:
        if self.given_similarity is not None:
            return self.given_similarity
        return tfidf_similarity([c.text for c in self.candidates])

    @functools.cached_property
    def objective(self) -> SubmodularObjective:
        return SubmodularObjective(self.relevance, self.incidence, self.similarity, self.doc_index, self.weights)

    @property
    def built_objective(self) -> bool:
        """Whether a policy has read the objective (so F of the packet is meaningful)."""
        return "objective" in self.__dict__

    @property
    def cap(self) -> int:
        n = len(self.candidates)
        return n if self.max_snippets is None else min(n, self.max_snippets)


@dataclass(frozen=True, slots=True)
class Selection:
    """A policy's picks (indices into the problem's candidates) in pick order, with their scores."""

    order: tuple[int, ...]
    gains: tuple[float, ...]
    fallback: bool = False


Policy = Callable[[PackingProblem], Selection]
POLICIES: dict[str, Policy] = {}


def register_policy(name: str, policy: Policy) -> Policy:
    """Add ``policy`` under ``name`` (a new non-empty name, else ``ValueError``)."""
    return register(POLICIES, "policy", name, policy)


def _naive(p: PackingProblem) -> Selection:
    knap = p.knapsack
    knap.reset()
    order = knap.fill(range(len(p.candidates)), p.cap)
    return Selection(tuple(order), tuple(float(p.relevance[i]) for i in order))


def _focused(p: PackingProblem) -> Selection:
    knap = p.knapsack
    knap.reset()
    n = len(p.candidates)
    covered = np.zeros(p.incidence.shape[1], dtype=bool)
    seen_doc = np.zeros(int(p.doc_index.max()) + 1 if n else 0, dtype=bool)
    rank = np.arange(n)
    order: list[int] = []
    gains: list[float] = []
    for feasible in knap.rounds(p.cap):
        new_terms = (p.incidence & ~covered).sum(axis=1)
        new_doc = ~seen_doc[p.doc_index]
        ranked = np.lexsort((rank, -p.relevance, -new_doc.astype(np.int64), -new_terms))
        best = int(ranked[feasible[ranked]][0])
        order.append(best)
        gains.append(float(new_terms[best]))
        covered |= p.incidence[best]
        seen_doc[p.doc_index[best]] = True
        knap.take(best)
    return Selection(tuple(order), tuple(gains))


def _mmr(p: PackingProblem) -> Selection:
    knap = p.knapsack
    knap.reset()
    top = p.relevance.max() if len(p.relevance) else 0.0
    rel = p.relevance / top if top > 0 else np.zeros_like(p.relevance)
    redundancy = np.zeros(len(p.candidates))
    order: list[int] = []
    gains: list[float] = []
    for feasible in knap.rounds(p.cap):
        score = MMR_LAMBDA * rel - (1.0 - MMR_LAMBDA) * redundancy
        best = int(np.argmax(np.where(feasible, score, -np.inf)))
        order.append(best)
        gains.append(float(score[best]))
        redundancy = np.maximum(redundancy, p.similarity.columns([best])[:, 0])
        knap.take(best)
    return Selection(tuple(order), tuple(gains))


def _submodular(p: PackingProblem) -> Selection:
    n = len(p.candidates)
    knap = p.knapsack
    knap.reset()
    if n <= p.cap and int(knap.item.sum() + knap.group_cost.sum()) <= knap.capacity:
        p.objective.reset()
        gains = []
        for i in range(n):
            gains.append(float(p.objective.gains([i])[0]))
            p.objective.add(i)
        return Selection(tuple(range(n)), tuple(gains))
    res = lazy_greedy(p.objective, p.knapsack, p.max_snippets)
    return Selection(res.order, res.gains, res.fallback)


for _name, _policy in (("naive", _naive), ("focused", _focused), ("mmr", _mmr), ("submodular", _submodular)):
    register_policy(_name, _policy)


def _render(problem: PackingProblem, order: Sequence[int], separator: str) -> tuple[str, tuple[Header, ...]]:
    knap = problem.knapsack
    headers = {h for h in (knap.header_of(i) for i in order) if h is not None}
    lines = [((h.position, 0, 0), h.text) for h in headers]
    lines += [((problem.candidates[i].position, 1, i), problem.candidates[i].text) for i in order]
    lines.sort(key=lambda item: item[0])
    return separator.join(text for _key, text in lines), tuple(sorted(headers, key=lambda h: h.position))


def packing_problem(
    candidates: Sequence[Candidate],
    query: str,
    budget: Budget,
    *,
    weights: SubmodularWeights = SubmodularWeights(),
    max_snippets: int | None = None,
    headers: Sequence[Header | None] = (),
    similarity: Similarity | None = None,
) -> PackingProblem:
    """The problem a policy sees for already-screened ``candidates`` (see :func:`pack`).

    Documents are numbered in first-appearance order; ``headers`` has one entry per
    candidate (or none); ``similarity`` is over ``candidates`` in order.
    """
    texts = [c.text for c in candidates]
    _terms, incidence = query_incidence(query, texts)
    docs: dict[str, int] = {}
    return PackingProblem(
        candidates=tuple(candidates),
        query=query,
        relevance=np.array([float(c.relevance) for c in candidates], dtype=np.float64),
        doc_index=np.array([docs.setdefault(c.doc_id, len(docs)) for c in candidates], dtype=np.int64),
        incidence=incidence,
        knapsack=Knapsack(budget, texts, list(headers)),
        max_snippets=max_snippets,
        weights=weights,
        given_similarity=similarity,
    )


def pack(
    policy: str,
    candidates: Sequence[Candidate],
    query: str,
    budget: Budget,
    *,
    similarity: Similarity | None = None,
    weights: SubmodularWeights = SubmodularWeights(),
    max_snippets: int | None = None,
    headers: Mapping[str, Header] | None = None,
) -> PackResult:
    """Pack ``candidates`` for ``query`` under ``budget`` with the named ``policy``.

    ``similarity`` is over ``candidates`` in input order (e.g.
    :func:`~rootweaver_innovations.compaction.packing.similarity.dense_similarity` of precomputed
    embeddings); ``None`` means TF-IDF cosine of the texts. ``headers`` maps a candidate
    id to the header emitted (and paid for) once with its first kept candidate.
    ``max_snippets`` caps the packet's candidate count (``None``: no cap).

    The rendered packet never exceeds ``budget`` in its unit: for token budgets the real
    count of the rendered text is checked and, should a tokenizer ever count a join as
    more than its parts, the last picks are dropped (recorded as ``budget``) until it fits.
    Raises ``ValueError`` for an unknown policy or bad arguments, and
    :class:`~rootweaver_innovations.compaction.packing.selection.ConflictingCandidateError` for one id with
    two contents.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown packing policy {policy!r}; choose one of {sorted(POLICIES)}")
    if not isinstance(budget, Budget):
        raise ValueError(f"budget must be a Budget, got {type(budget).__name__}")
    if not isinstance(weights, SubmodularWeights):
        raise ValueError(f"weights must be SubmodularWeights, got {type(weights).__name__}")
    if max_snippets is not None and (
        isinstance(max_snippets, bool) or not isinstance(max_snippets, int) or max_snippets < 1
    ):
        raise ValueError(f"max_snippets must be a positive int or None, got {max_snippets!r}")
    if similarity is not None and (
        not isinstance(similarity, Similarity) or similarity.n != len(candidates)
    ):
        raise ValueError(f"similarity must be a Similarity over the {len(candidates)} candidates")
    screened = screen(candidates)
    eligible = screened.eligible
    problem = packing_problem(
        eligible, query, budget, weights=weights, max_snippets=max_snippets,
        headers=[headers.get(c.id) for c in eligible] if headers else (),
        similarity=similarity.subset(screened.indices) if similarity is not None else None,
    )
    chosen = POLICIES[policy](problem)
    order, gains = list(chosen.order), list(chosen.gains)
    if len(set(order)) != len(order) or len(gains) != len(order) or not all(0 <= i < len(eligible) for i in order):
        raise ValueError(f"policy {policy!r} returned an invalid selection {chosen!r}")
    text, emitted = _render(problem, order, budget.separator)
    used = budget.measure(text)
    dropped_real: list[int] = []
    while used > budget.limit:
        dropped_real.append(order.pop())
        gains.pop()
        text, emitted = _render(problem, order, budget.separator)
        used = budget.measure(text)

    knap = problem.knapsack
    knap.reset()
    for i in order:
        knap.take(i)
    fits = knap.feasible()
    fits[dropped_real] = False
    step = {i: s for s, i in enumerate(order)}
    packet = tuple(
        Packed(eligible[i], step[i], g)
        for i, g in sorted(zip(order, gains), key=lambda ig: (eligible[ig[0]].position, ig[0]))
    )
    return PackResult(
        policy=policy,
        text=text,
        packet=packet,
        headers=emitted,
        omissions=screened.omissions + account(eligible, order, fits, max_snippets),
        unit=budget.unit,
        limit=budget.limit,
        used=used,
        chars=len(text),
        tokens=used if budget.unit == "tokens" else None,
        objective=problem.objective.evaluate(order) if problem.built_objective else None,
        similarity=problem.similarity.kind if "similarity" in problem.__dict__ else None,
        fallback=chosen.fallback,
    )


