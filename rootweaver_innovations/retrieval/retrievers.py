"""Lexical retrieval over passages: BM25 with two interchangeable backends.

Tokenisation (shared by both backends, by queries and by passages): Unicode-aware
lowercase word tokens (``\\w+``), English stop words from
:data:`rootweaver_innovations.text.STOP_WORDS` removed, no stemming. A passage is
indexed as ``title + " " + text``, so a query naming an entity finds its page; a record
titled by an id (a window of a user's file) has no such title, and is indexed with its
file's subject before it (:func:`~rootweaver_innovations.retrieval.tokens.passage_tokens`).

``DenseRetriever`` ranks by cosine of sentence embeddings (an injected
:class:`~rootweaver_innovations.retrieval.embeddings.Embedder`); ``HybridRetriever`` fuses any
retrievers by reciprocal rank fusion.

Backends: ``"bm25s"`` (sparse-matrix scoring with bm25s's arithmetic, see
:mod:`~rootweaver_innovations.retrieval.bm25_matrix`; the fast default, and the one a saved index
uses) and ``"rank_bm25"`` (rank-bm25's ``BM25Okapi``, the reference). Both use Okapi BM25 with k1=1.5, b=0.75 and
the Robertson idf (with a Lucene-idf fallback for queries it scores all-zero, see
:class:`BM25Retriever`). Ties are broken by corpus order, so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.retrieval.titles import TitleIndex
from rootweaver_innovations.retrieval.bm25_matrix import BM25Matrix, build_matrix, idf_weights
from rootweaver_innovations.retrieval.embeddings import Embedder
from rootweaver_innovations.retrieval.facets import Facets
from rootweaver_innovations.retrieval.tokens import corpus_tokens
from rootweaver_innovations.text import bm25_tokenize


__all__ = [
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "ScoredPassage",
    "passage_text",
    "rrf_fuse",
    "top_k_indices",
]

BACKENDS = ("bm25s", "rank_bm25")
_DENSE_BLOCK = 1 << 16  # float16 rows widened at once when scoring


@dataclass(frozen=True, slots=True)
class ScoredPassage:
    """A retrieved passage with its score and 0-based rank in the result list."""

    passage: Passage
    score: float
    rank: int


class Retriever(Protocol):
    """Anything that returns the ``k`` best passages for a query, best first."""

    def search(self, query: str, k: int) -> list[ScoredPassage]: ...


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, descending, ties by lower index first.

    The same answer as a full stable sort of ``-scores`` without sorting everything:
    the k-th highest value ``t`` of a strided sample (``~256 k`` elements) is a lower
    bound of the k-th highest overall, so the top ``k`` are the scores above ``t`` -
    or, when fewer than ``k`` are, those plus the lowest-indexed scores equal to ``t``.
    Only these candidates are sorted (typically ``~n / 256`` of them; all ``n`` in the
    worst case, never a wrong answer). ``scores`` is 1-D without NaN; ``k <= 0`` gives an
    empty array, ``k >= len(scores)`` every index.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    sample = scores[:: max(1, n // (256 * k))]
    positive = sample[sample > 0]  # NumPy's partition is slow on many equal values (e.g. zeros)
    pool = positive if positive.shape[0] >= k else sample  # the sample's top k, either way
    t = np.partition(pool, pool.shape[0] - k)[pool.shape[0] - k]
    cand = np.flatnonzero(scores > t)
    if cand.shape[0] < k:
        cand = np.concatenate((cand, np.flatnonzero(scores == t)[: k - cand.shape[0]]))
    return cand[np.lexsort((cand, -scores[cand]))][:k]


def _top_within(scores: np.ndarray, k: int, within: np.ndarray | None) -> np.ndarray:
    """:func:`top_k_indices` of ``scores``, or of its rows ``within`` (ascending) mapped back."""
    if within is None:
        return top_k_indices(scores, k)
    return np.asarray(within, dtype=np.intp)[top_k_indices(scores[within], k)]


class BM25Retriever:
    """BM25 over a fixed sequence of passages.

    ``backend`` is ``"bm25s"`` (default) or ``"rank_bm25"``; anything else raises
    ``ValueError``. An empty passage list raises ``ValueError``. ``search`` with ``k < 1``
    raises ``ValueError``; a query with no indexable token returns an empty list.

    The ``bm25s`` backend scores with a :class:`~rootweaver_innovations.retrieval.bm25_matrix.BM25Matrix`
    (bit-identical to the bm25s library's scores); :meth:`from_matrix` wraps one that was
    saved and memory-mapped (:mod:`rootweaver_innovations.retrieval.index`), with ``passages`` any
    sequence that reads a passage by position, e.g. from disk.

    In a small corpus every query term may occur in at least half of the passages, where
    the Robertson idf is <= 0 and every passage scores 0 (rank-bm25 floors only negative
    idf). Such a query is then scored with Lucene's idf, ``log(1 + (N - df + 0.5) / (df +
    0.5))``, which is always positive, so it still ranks the passages that hold its terms
    (10 of the 1100 HotpotQA questions over their own paragraphs). Every other query keeps
    its Robertson scores. Both idfs are precomputed in the matrix: the fallback never
    builds anything at query time.
    """

    def __init__(self, passages: Sequence[Passage], backend: str = "bm25s", k1: float = 1.5, b: float = 0.75,
                 conventions: Conventions | None = None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown BM25 backend {backend!r}; choose one of {sorted(BACKENDS)}")
        if not passages:
            raise ValueError("cannot index an empty passage list")
        self.passages: Sequence[Passage] = list(passages)
        self.backend = backend
        self.title_index: TitleIndex | None = None  # the loop builds one over ``passages`` when it needs it
        self.conventions = conventions or default_conventions()
        self.facets = Facets.of_passages(self.passages)
        self._okapi = None
        if backend == "rank_bm25":
            from rank_bm25 import BM25Okapi

            tokens = list(corpus_tokens(self.passages, self.conventions))
            self._okapi = BM25Okapi(tokens, k1=k1, b=b)
            self._matrix = build_matrix(tokens, k1, b)
        else:  # a generator: no token lists of the whole corpus are kept
            self._matrix = build_matrix(corpus_tokens(self.passages, self.conventions), k1, b)

    @classmethod
    def from_matrix(cls, passages: Sequence[Passage], matrix: BM25Matrix, title_index: TitleIndex | None = None,
                    conventions: Conventions | None = None, facets: Facets | None = None) -> BM25Retriever:
        """The ``bm25s``-backend retriever over a prebuilt ``matrix`` whose columns index
        ``passages`` (same length, same order), built under ``conventions`` (the title index's
        when ``None``, else the default), carrying ``title_index`` and ``facets`` (the passages'
        saved title index and facets, which the loop then uses instead of building them);
        nothing is copied."""
        if len(passages) != matrix.num_docs:
            raise ValueError(f"{len(passages)} passages for a BM25 matrix of {matrix.num_docs}")
        self = cls.__new__(cls)
        self.passages, self.backend, self._matrix, self._okapi = passages, "bm25s", matrix, None
        self.title_index, self.facets = title_index, facets
        self.conventions = conventions or (title_index.conventions if title_index is not None else default_conventions())
        return self

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (float64, corpus order)."""
        return self._scores(query).astype(np.float64)

    def _scores(self, query: str) -> np.ndarray:
        """:meth:`scores` in the backend's own dtype (float32 for the matrix: half the
        memory traffic per search, and the same order and values once widened)."""
        ids, s = self._robertson(query)
        return s if s.any() else self._lucene(ids, s)

    def _robertson(self, query: str) -> tuple[list[int], np.ndarray]:
        """The query's term ids and its Robertson-idf scores (all zero: see the class docstring)."""
        vocab = self._matrix.vocab
        q = [t for t in bm25_tokenize(query) if t in vocab]
        if not q:
            return [], np.zeros(len(self.passages), dtype=np.float32)
        ids = [vocab[t] for t in q]
        if self._okapi is not None:
            return ids, np.asarray(self._okapi.get_scores(q), dtype=np.float64)
        return ids, self._matrix.scores(ids, "robertson")

    def _lucene(self, ids: list[int], robertson: np.ndarray) -> np.ndarray:
        """The Lucene-idf scores that replace all-zero Robertson ones (no terms: those zeros)."""
        return self._matrix.scores(ids, "lucene") if ids else robertson

    def top_rows(self, query: str, k: int, within: np.ndarray | None = None) -> tuple[list[int], list[float]]:
        """:meth:`search` without reading any passage: the positions in ``passages`` of the
        ``k`` best passages with a positive score, and those scores, best first; only among
        the rows ``within`` (ascending positions) when given."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        ids, s = self._robertson(query)
        rows = _top_within(s, k, within)
        if rows.size and not s[rows[0]] > 0:  # the best is 0, so all are: the Lucene fallback
            s = self._lucene(ids, s)
            rows = _top_within(s, k, within)
        rows = rows[s[rows] > 0]
        return rows.tolist(), s[rows].astype(np.float64).tolist()

    def row_scores(self, query: str, rows: Sequence[int]) -> list[float]:
        """:meth:`scores` of the passages at positions ``rows`` only, the same values, without
        scoring the others (the Lucene fallback when every query term's Robertson idf is 0)."""
        vocab = self._matrix.vocab
        ids = [vocab[t] for t in bm25_tokenize(query) if t in vocab]
        if not ids or self._okapi is not None:
            return self.scores(query)[list(rows)].tolist()
        m = self._matrix
        df = np.asarray([int(m.indptr[t + 1]) - int(m.indptr[t]) for t in ids], dtype=np.int64)
        idf = "robertson" if idf_weights(df, m.num_docs)["robertson"].any() else "lucene"
        return m.row_scores(ids, rows, idf).astype(np.float64).tolist()

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        rows, scores = self.top_rows(query, k)
        return [ScoredPassage(self.passages[i], s, r) for r, (i, s) in enumerate(zip(rows, scores))]


def passage_text(p: Passage) -> str:
    """The text a passage is embedded as: its title, a space, its text."""
    return f"{p.title} {p.text}"


class DenseRetriever:
    """Cosine similarity of L2-normalised embeddings; passages embedded once at build time.

    ``embeddings`` may be passed precomputed (``(n, d)`` float16 or float32, rows aligned with
    ``passages``, e.g. memory-mapped from a saved index; float16 is scored in blocks widened
    to float32); ``passages`` is kept as given (any sequence that reads a passage by position),
    so the loop can map hits to rows without reading them. ``title_index``, ``facets`` and
    ``conventions`` are carried for the loop as :class:`BM25Retriever` carries them. Raises
    ``ValueError`` on no passages or a row count that differs.
    """

    def __init__(self, passages: Sequence[Passage], embedder: Embedder, embeddings: np.ndarray | None = None, *,
                 title_index: TitleIndex | None = None, facets: Facets | None = None,
                 conventions: Conventions | None = None):
        if not len(passages):
            raise ValueError("cannot index an empty passage list")
        self.passages: Sequence[Passage] = passages
        self.embedder = embedder
        self.title_index, self.facets, self.conventions = title_index, facets, conventions
        if embeddings is None:
            embeddings = embedder.encode([passage_text(p) for p in self.passages])
        if embeddings.shape[0] != len(self.passages):
            raise ValueError(f"{embeddings.shape[0]} embeddings for {len(self.passages)} passages")
        self.embeddings = embeddings

    def scores(self, query: str) -> np.ndarray:
        """Cosine of every passage with ``query`` (float64, corpus order)."""
        q = self.embedder.encode([query])[0].astype(np.float32)
        e = self.embeddings
        if e.dtype == np.float32:
            return (e @ q).astype(np.float64)
        out = np.empty(e.shape[0], dtype=np.float64)
        for i in range(0, e.shape[0], _DENSE_BLOCK):  # NumPy has no BLAS for float16
            out[i:i + _DENSE_BLOCK] = e[i:i + _DENSE_BLOCK].astype(np.float32) @ q
        return out

    def top_rows(self, query: str, k: int, within: np.ndarray | None = None) -> tuple[list[int], list[float]]:
        """Positions in ``passages`` of the ``k`` most similar passages and their cosines, best
        first (ties by position); only among the rows ``within`` (ascending) when given."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        s = self.scores(query)
        rows = _top_within(s, k, within)
        return rows.tolist(), s[rows].tolist()

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        rows, scores = self.top_rows(query, k)
        return [ScoredPassage(self.passages[i], s, r) for r, (i, s) in enumerate(zip(rows, scores))]


def rrf_fuse(rankings: Sequence[Sequence[Hashable]], k: int = 60) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion: ``sum 1 / (k + rank)`` (rank from 1) over the input rankings.

    Returns ``(id, fused score)`` best first; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        for r, pid in enumerate(ranking, 1):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (k + r)
    return sorted(fused.items(), key=lambda kv: -kv[1])


class HybridRetriever:
    """Reciprocal rank fusion of several retrievers, each asked for ``depth`` results (default 50).

    When every member ranks rows of one shared passage sequence (``top_rows`` and the same
    ``passages`` object: a saved index's BM25 and its dense embeddings) the fusion is over rows
    and nothing is read to rank; ``passages``, ``title_index``, ``facets`` and ``conventions`` are then the
    first member's, and :meth:`row_scores` is the first member's that has one (the lexical
    scores the loop uses to weigh title links). Otherwise members are searched and fused by
    passage id. Raises ``ValueError`` on no members.
    """

    def __init__(self, retrievers: Sequence[Retriever], depth: int = 50, rrf_k: int = 60):
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        self.retrievers = list(retrievers)
        self.depth = depth
        self.rrf_k = rrf_k
        first = self.retrievers[0]
        shared = getattr(first, "passages", None)
        self._by_row = shared is not None and all(
            hasattr(r, "top_rows") and getattr(r, "passages", None) is shared for r in self.retrievers)
        if self._by_row:
            self.passages = shared
            self.title_index = getattr(first, "title_index", None)
            self.conventions = getattr(first, "conventions", None)
            self.facets = getattr(first, "facets", None)
            lexical = next((r for r in self.retrievers if hasattr(r, "row_scores")), None)
            if lexical is not None:
                self.row_scores = lexical.row_scores

    def top_rows(self, query: str, k: int, within: np.ndarray | None = None) -> tuple[list[int], list[float]]:
        """Rows of the shared passages, fused best first, with their RRF scores; only among the
        rows ``within`` (ascending) when given. Only when the members share their passages
        (see the class docstring), else ``TypeError``."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not self._by_row:
            raise TypeError("top_rows needs members that rank rows of one shared passage sequence")
        rankings = [r.top_rows(query, max(k, self.depth), within)[0] for r in self.retrievers]
        fused = rrf_fuse(rankings, self.rrf_k)[:k]
        return [row for row, _ in fused], [score for _, score in fused]

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if self._by_row:
            rows, scores = self.top_rows(query, k)
            return [ScoredPassage(self.passages[i], s, r) for r, (i, s) in enumerate(zip(rows, scores))]
        by_id: dict[str, Passage] = {}
        rankings = []
        for retriever in self.retrievers:
            hits = retriever.search(query, max(k, self.depth))
            rankings.append([h.passage.id for h in hits])
            by_id.update((h.passage.id, h.passage) for h in hits)
        fused = rrf_fuse(rankings, self.rrf_k)[:k]
        return [ScoredPassage(by_id[pid], score, r) for r, (pid, score) in enumerate(fused)]
