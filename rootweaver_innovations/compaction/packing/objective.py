"""The four terms of the packing objective, kept apart from the search that maximises it.

F(S) = w_rel Rel(S) + w_qry QueryCov(S) + w_cov Repr(S) + w_div Div(S), each term monotone
submodular and normalised to [0, 1] by its value on the whole candidate set (a term whose
whole-set value is 0 is identically 0):

- Rel: modular, the sum of the candidates' relevance.
- QueryCov: set cover over the distinct query content terms that some candidate contains.
- Repr: saturated facility location, sum_i min(sum_{j in S} sim(i, j), alpha * deg_i)
  with deg_i = sum_j sim(i, j) over all candidates.
- Div: sum over documents of sqrt(relevance mass of S in the document).

Each term keeps the running state of one selection and answers the marginal gain of every
candidate (or of the ``idx`` asked for) as a numpy vector. Relevance and similarity are
quantised to integers (2**20 per unit; relevance relative to the largest), so Rel,
QueryCov and Repr gains are exact and a candidate's gain does not depend on which other
candidates are evaluated with it; Div works elementwise in float64. That is what lets a
lazy greedy reproduce the plain greedy bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.text import bm25_tokenize
from rootweaver_innovations.compaction.checks import check_nonnegative
from rootweaver_innovations.compaction.packing import similarity as _similarity
from rootweaver_innovations.compaction.packing.candidates import text_terms
from rootweaver_innovations.compaction.packing.similarity import Similarity

__all__ = [
    "DENSE_LIMIT",
    "SCALE",
    "DiversityTerm",
    "QueryCoverageTerm",
    "RelevanceTerm",
    "RepresentativenessTerm",
    "SubmodularObjective",
    "SubmodularWeights",
    "query_incidence",
    "quantise",
]

SCALE = 1 << 20
DENSE_LIMIT = 4096  # candidates up to which the Repr term holds its n x n quantised matrix (int32: 64 MB)


@dataclass(frozen=True, slots=True)
class SubmodularWeights:
    """Term weights (finite, >= 0) and the facility-location saturation ``alpha`` in (0, 1].

    Defaults are the source paper's: relevance leads, the other terms regularise.
    """

    w_rel: float = 1.0
    w_qry: float = 0.5
    w_cov: float = 0.4
    w_div: float = 0.3
    alpha: float = 0.3

    def __post_init__(self) -> None:
        for name in ("w_rel", "w_qry", "w_cov", "w_div", "alpha"):
            check_nonnegative(name, getattr(self, name))
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha!r}")


def quantise(values: np.ndarray) -> np.ndarray:
    """Non-negative floats to int64 units of ``1 / SCALE``."""
    return np.rint(np.asarray(values, dtype=np.float64) * SCALE).astype(np.int64)


def query_incidence(query: str, texts: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Distinct query content terms and which texts contain each: ``(terms, bool[n, T])``.

    Terms are :func:`~rootweaver_innovations.retrieval.retrievers.bm25_tokenize` tokens of the query
    (lowercase words, stop words out); a text contains a term when the term is one of the
    text's own ``bm25_tokenize`` tokens (read from :func:`~.candidates.text_terms`, which
    :func:`~.candidates.fact_candidates` has already filled for a fact's line).
    """
    terms = tuple(dict.fromkeys(bm25_tokenize(query)))
    counts = [text_terms(t).counts for t in texts]
    found = np.fromiter([term in c for c in counts for term in terms], dtype=bool, count=len(counts) * len(terms))
    return terms, found.reshape(len(counts), len(terms))


def _indices(idx: np.ndarray | Sequence[int] | None) -> np.ndarray | slice:
    """Index for "these candidates", or a view-preserving slice for all of them."""
    return slice(None) if idx is None else np.asarray(idx, dtype=np.int64)


class RelevanceTerm:
    """Rel(S) = sum of quantised relevance over S / the sum over all candidates."""

    name = "rel"

    def __init__(self, relevance: np.ndarray):
        rel = np.asarray(relevance, dtype=np.float64)
        top = rel.max() if rel.size else 0.0
        self.rel = quantise(rel / top) if top > 0 else np.zeros(rel.shape, dtype=np.int64)
        self.norm = int(self.rel.sum())
        self.reset()

    def reset(self, selected: Sequence[int] = ()) -> None:
        self.total = int(self.rel[list(selected)].sum()) if len(selected) else 0

    def gains(self, idx: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        g = self.rel[_indices(idx)]
        return g / self.norm if self.norm else np.zeros(g.shape)

    def add(self, i: int) -> None:
        self.total += int(self.rel[i])

    def value(self) -> float:
        return self.total / self.norm if self.norm else 0.0


class QueryCoverageTerm:
    """QueryCov(S) = distinct coverable query terms covered by S / all coverable ones."""

    name = "qry"

    def __init__(self, incidence: np.ndarray):
        inc = np.asarray(incidence, dtype=bool)
        self.inc = inc[:, inc.any(axis=0)] if inc.size else inc.reshape(inc.shape[0], 0)
        self.norm = self.inc.shape[1]
        self.reset()

    def reset(self, selected: Sequence[int] = ()) -> None:
        self.covered = self.inc[list(selected)].any(axis=0)

    def gains(self, idx: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        g = (self.inc[_indices(idx)] & ~self.covered).sum(axis=1)
        return g / self.norm if self.norm else np.zeros(g.shape)

    def add(self, i: int) -> None:
        self.covered |= self.inc[i]

    def value(self) -> float:
        return int(self.covered.sum()) / self.norm if self.norm else 0.0


class RepresentativenessTerm:
    """Repr(S) = sum_i min(sum_{j in S} sim(i, j), alpha deg_i) / sum_i alpha deg_i (quantised).

    ``similarity`` is an ``(n, n)`` array or a :class:`~.similarity.Similarity`. An array
    is held quantised as int32. A similarity is read column block by column block
    (:meth:`~.similarity.Similarity.column_blocks`), so the term keeps O(n) state; only
    once the gains are asked for (a greedy will ask many times) and there are at most
    :data:`DENSE_LIMIT` candidates is it held quantised as int32 (at most 64 MB, filled block
    by block, never as an n x n float matrix). So a policy that only evaluates a set (e.g.
    ``evidence``, for its report) never holds it. Gains are computed over column blocks of
    at most :data:`~.similarity.BLOCK_ENTRIES` cells, and are the same integers on every path.
    """

    name = "cov"

    def __init__(self, similarity: np.ndarray | Similarity, alpha: float):
        if isinstance(similarity, Similarity):
            self._held: np.ndarray | None = None
            self._source: Similarity | None = similarity
            n = similarity.n
        else:
            self._held, self._source = quantise(similarity).astype(np.int32), None
            n = self._held.shape[0]
        self.cap = np.floor(alpha * self._column_sum(np.arange(n), n)).astype(np.int64)
        self.norm = int(self.cap.sum())
        self._gains_from_nothing: np.ndarray | None = None  # every gain while cover == 0, computed once
        self.reset()

    def _hold(self) -> None:
        """Hold the quantised matrix from now on, when it is small enough (see the class docstring)."""
        if self._held is None and self._source.n <= DENSE_LIMIT:
            held = np.empty((self._source.n, self._source.n), dtype=np.int32)
            for span, block in self._source.column_blocks(np.arange(self._source.n)):
                held[:, span] = _quantised_block(block)
            self._held = held

    def _blocks(self, cols: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
        """Quantised columns ``cols`` in bounded blocks: ``(span of cols, (n, span) int32)``."""
        if self._held is None:
            for span, block in self._source.column_blocks(cols):
                yield span, _quantised_block(block)
            return
        per_block = max(1, _similarity.BLOCK_ENTRIES // max(len(self._held), 1))
        for lo in range(0, len(cols), per_block):
            yield slice(lo, lo + per_block), self._held[:, cols[lo:lo + per_block]]

    def _column_sum(self, cols: np.ndarray, n: int) -> np.ndarray:
        total = np.zeros(n, dtype=np.int64)
        for _span, block in self._blocks(cols):
            total += block.sum(axis=1, dtype=np.int64)
        return total

    def reset(self, selected: Sequence[int] = ()) -> None:
        cover = self._column_sum(np.asarray(list(selected), dtype=np.int64), len(self.cap))
        self.cover = np.minimum(cover, self.cap)  # clipped at the cap: same gains, bounded state

    def gains(self, idx: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        if idx is None and not self.cover.any():  # the greedy's first step and its singleton fallback
            if self._gains_from_nothing is None:
                self._gains_from_nothing = self._integer_gains(np.arange(len(self.cap)))
            g = self._gains_from_nothing
        else:
            g = self._integer_gains(np.arange(len(self.cap)) if idx is None else np.asarray(idx, dtype=np.int64))
        return g / self.norm if self.norm else np.zeros(g.shape)

    def _integer_gains(self, cols: np.ndarray) -> np.ndarray:
        self._hold()
        g = np.zeros(len(cols), dtype=np.int64)
        cover, cap = self.cover[:, None], self.cap[:, None]
        for span, block in self._blocks(cols):
            g[span] = (np.minimum(cover + block, cap) - cover).sum(axis=0)
        return g

    def add(self, i: int) -> None:
        ((_span, col),) = self._blocks(np.array([i]))
        self.cover = np.minimum(self.cover + col[:, 0], self.cap)

    def value(self) -> float:
        return int(self.cover.sum()) / self.norm if self.norm else 0.0


def _quantised_block(block: np.ndarray) -> np.ndarray:
    """:func:`quantise` of a fresh float block, in place, as int32 (values are at most SCALE)."""
    return np.rint(np.multiply(block, SCALE, out=block), out=block).astype(np.int32)


class DiversityTerm:
    """Div(S) = sum_d sqrt(quantised relevance mass of S in document d) / the same over all."""

    name = "div"

    def __init__(self, doc_index: np.ndarray, relevance: np.ndarray):
        self.doc = np.asarray(doc_index, dtype=np.int64)
        rel = np.asarray(relevance, dtype=np.float64)
        top = rel.max() if rel.size else 0.0
        self.rel = quantise(rel / top) if top > 0 else np.zeros(rel.shape, dtype=np.int64)
        n_docs = int(self.doc.max()) + 1 if self.doc.size else 0
        self.n_docs = n_docs
        full = np.bincount(self.doc, weights=self.rel, minlength=n_docs).astype(np.int64)
        self.norm = float(np.sqrt(full).sum())
        self.reset()

    def reset(self, selected: Sequence[int] = ()) -> None:
        sel = np.asarray(list(selected), dtype=np.int64)
        self.mass = np.bincount(self.doc[sel], weights=self.rel[sel], minlength=self.n_docs).astype(np.int64)

    def gains(self, idx: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        i = _indices(idx)
        m = self.mass[self.doc[i]]
        g = np.sqrt(m + self.rel[i]) - np.sqrt(m)
        return g / self.norm if self.norm else np.zeros(g.shape)

    def add(self, i: int) -> None:
        self.mass[self.doc[i]] += self.rel[i]

    def value(self) -> float:
        return float(np.sqrt(self.mass).sum()) / self.norm if self.norm else 0.0


class SubmodularObjective:
    """The weighted sum of the four terms over candidates ``0..n-1``, with one running selection.

    ``relevance`` (n,) >= 0; ``incidence`` bool (n, T) from :func:`query_incidence`;
    ``similarity`` (n, n) in [0, 1], an array or a :class:`~.similarity.Similarity`
    (see :class:`RepresentativenessTerm` for its memory); ``doc_index`` (n,) ints naming
    each candidate's document. The optimiser calls :meth:`gains` and :meth:`add`;
    :meth:`reset` starts over.
    """

    def __init__(
        self,
        relevance: np.ndarray,
        incidence: np.ndarray,
        similarity: np.ndarray | Similarity,
        doc_index: np.ndarray,
        weights: SubmodularWeights = SubmodularWeights(),
    ):
        n = len(relevance)
        shape = (similarity.n, similarity.n) if isinstance(similarity, Similarity) else similarity.shape
        if incidence.shape[0] != n or shape != (n, n) or len(doc_index) != n:
            raise ValueError(
                f"objective inputs disagree on n={n}: incidence {incidence.shape}, "
                f"similarity {shape}, doc_index {len(doc_index)}"
            )
        self.n = n
        self.weights = weights
        self.terms = (
            RelevanceTerm(relevance),
            QueryCoverageTerm(incidence),
            RepresentativenessTerm(similarity, weights.alpha),
            DiversityTerm(doc_index, relevance),
        )
        self._w = (weights.w_rel, weights.w_qry, weights.w_cov, weights.w_div)

    def reset(self, selected: Sequence[int] = ()) -> None:
        for term in self.terms:
            term.reset(selected)

    def gains(self, idx: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        """Marginal gain of F for each candidate in ``idx`` (all when None) given the selection."""
        total = np.zeros(self.n if idx is None else len(idx), dtype=np.float64)
        for w, term in zip(self._w, self.terms):
            if w:
                total += w * term.gains(idx)
        return total

    def add(self, i: int) -> None:
        for term in self.terms:
            term.add(i)

    def value(self) -> float:
        """F of the current selection."""
        return sum(w * term.value() for w, term in zip(self._w, self.terms))

    def evaluate(self, selected: Sequence[int]) -> float:
        """F(selected) from scratch (resets the running selection to ``selected``)."""
        self.reset(selected)
        return self.value()
