"""The per-run cost ledger the packers share (:class:`Knapsack`).

Each candidate costs its text plus one separator; a header costs its text plus one
separator the first time one of its candidates is taken; the capacity is ``limit`` plus one
separator (the last line has none). In chars this is exact. In tokens it is the sum of the
parts, which is what the packers compare against; the packet's real token count is measured
afterwards and :func:`~rootweaver_innovations.compaction.packing.policies.pack` enforces ``real <= limit``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.packing.candidates import Header

__all__ = ["Knapsack"]


class Knapsack:
    """Cost ledger of one packing run over candidates ``0..n-1`` (see module docstring).

    ``texts`` are the candidates' texts; ``headers`` gives, per candidate, its
    :class:`~rootweaver_innovations.compaction.packing.candidates.Header` or ``None``.
    """

    def __init__(self, budget: Budget, texts: Sequence[str], headers: Sequence[Header | None] = ()):
        n = len(texts)
        if headers and len(headers) != n:
            raise ValueError(f"headers must have one entry per text ({n}), got {len(headers)}")
        measure = budget.measurer
        sep = measure(budget.separator) if budget.separator else 0
        self.budget = budget
        self.capacity = budget.limit + sep
        self.item = np.fromiter((measure(t) + sep for t in texts), dtype=np.int64, count=n)
        distinct: dict[Header, int] = {}
        group = np.full(n, 0, dtype=np.int64)  # group 0 is "no header", cost 0, always paid
        for i, h in enumerate(headers):
            if h is not None:
                group[i] = distinct.setdefault(h, len(distinct) + 1)
        self.headers: tuple[Header, ...] = tuple(distinct)
        self.group = group
        self.group_cost = np.array([0] + [measure(h.text) + sep for h in distinct], dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        """Forget everything taken."""
        self.used = 0
        self.paid = np.zeros(len(self.group_cost), dtype=bool)
        self.paid[0] = True
        self.taken = np.zeros(len(self.item), dtype=bool)
        self.count = 0
        self._marginal = self.item + self.group_cost[self.group]

    def marginal(self) -> np.ndarray:
        """Cost of adding each candidate now (its header included if not yet paid); read-only."""
        return self._marginal

    def feasible(self) -> np.ndarray:
        """Candidates not yet taken whose marginal cost fits in what is left."""
        return ~self.taken & (self._marginal <= self.capacity - self.used)

    def rounds(self, cap: int) -> Iterator[np.ndarray]:
        """:meth:`feasible` before each pick of a greedy run: while fewer than ``cap``
        candidates are taken and one still fits. The caller takes one (or stops) per round."""
        while self.count < cap:
            feasible = self.feasible()
            if not feasible.any():
                return
            yield feasible

    def fill(self, order: Iterable[int], cap: int) -> list[int]:
        """Take, in ``order``, each candidate not yet taken that still fits, until ``cap``
        candidates are taken in all; the ones taken here, in the order taken. A candidate may
        come more than once in ``order`` (a later time is skipped)."""
        taken = set(np.flatnonzero(self.taken).tolist())
        out: list[int] = []
        current = self._marginal
        marginal = current.tolist()
        for i in order:
            if self.count >= cap:
                break
            if i not in taken and self.used + marginal[i] <= self.capacity:
                self.take(i)
                taken.add(i)
                out.append(i)
                if self._marginal is not current:  # a header paid: its other candidates cost less now
                    current = self._marginal
                    marginal = current.tolist()
        return out

    def singleton_feasible(self) -> np.ndarray:
        """Candidates that fit on their own (with their header) in an empty packet."""
        return self.item + self.group_cost[self.group] <= self.capacity

    def take(self, i: int) -> None:
        """Add candidate ``i`` (the caller checked it fits)."""
        self.used += int(self._marginal[i])
        g = self.group[i]
        if not self.paid[g]:
            self.paid[g] = True
            self._marginal = np.where(self.group == g, self.item, self._marginal)
        self.taken[i] = True
        self.count += 1

    def header_of(self, i: int) -> Header | None:
        g = int(self.group[i])
        return self.headers[g - 1] if g else None

