"""Lexical retrieval over passages: BM25 with two interchangeable backends.

Tokenisation (shared by both backends, by queries and by passages): Unicode-aware
lowercase word tokens (``\\w+``), English stop words from
:data:`rootweaver_innovations.compaction.STOP_WORDS` removed, no stemming. A passage is
indexed as ``title + " " + text``, so a query naming an entity finds its page.

``DenseRetriever`` ranks by cosine of sentence embeddings (an injected
:class:`~rootweaver_innovations.embeddings.Embedder`); ``HybridRetriever`` fuses any
retrievers by reciprocal rank fusion.

Backends: ``"bm25s"`` (sparse-matrix scoring, the fast default) and ``"rank_bm25"``
(rank-bm25's ``BM25Okapi``, the reference). Both use Okapi BM25 with k1=1.5, b=0.75 and
the Robertson idf (with a Lucene-idf fallback for queries it scores all-zero, see
:class:`BM25Retriever`). Ties are broken by corpus order, so results are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .compaction import STOP_WORDS
from .corpus import Passage
from .embeddings import Embedder

__all__ = [
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "ScoredPassage",
    "bm25_tokenize",
    "rrf_fuse",
    "top_k_indices",
]

_WORD = re.compile(r"\w+")
BACKENDS = ("bm25s", "rank_bm25")


def bm25_tokenize(text: str) -> list[str]:
    """Lowercase ``\\w+`` tokens of ``text`` minus stop words (order kept)."""
    return [t for t in _WORD.findall(text.lower()) if t not in STOP_WORDS]


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
    """Indices of the ``k`` highest scores, descending, ties by lower index first."""
    k = min(k, scores.shape[0])
    if k < 1:
        return np.arange(0)
    cand = np.flatnonzero(scores > 0)
    if cand.shape[0] < k:
        return np.lexsort((np.arange(scores.shape[0]), -scores))[:k]
    # Any positive score beats every other one, so the top k are among the (sparse) positives,
    # and among those only scores >= the k-th largest (ties at it included) can be.
    values = scores[cand]
    kth = np.partition(values, values.shape[0] - k)[values.shape[0] - k]
    cand = cand[values >= kth]
    return cand[np.lexsort((cand, -scores[cand]))][:k]


class BM25Retriever:
    """BM25 over a fixed list of passages.

    ``backend`` is ``"bm25s"`` (default) or ``"rank_bm25"``; anything else raises
    ``ValueError``. An empty passage list raises ``ValueError``. ``search`` with ``k < 1``
    raises ``ValueError``; a query with no indexable token returns an empty list.

    In a small corpus every query term may occur in at least half of the passages, where
    the Robertson idf is <= 0 and every passage scores 0 (rank-bm25 floors only negative
    idf). Such a query is then scored with Lucene's idf, ``log(1 + (N - df + 0.5) / (df +
    0.5))``, which is always positive, so it still ranks the passages that hold its terms
    (10 of the 1100 HotpotQA questions over their own paragraphs). Every other query keeps
    its Robertson scores.
    """

    def __init__(self, passages: Sequence[Passage], backend: str = "bm25s", k1: float = 1.5, b: float = 0.75):
        if backend not in BACKENDS:
            raise ValueError(f"unknown BM25 backend {backend!r}; choose one of {sorted(BACKENDS)}")
        if not passages:
            raise ValueError("cannot index an empty passage list")
        self.passages = list(passages)
        self.backend = backend
        self._tokens = [bm25_tokenize(f"{p.title} {p.text}") or ["<empty>"] for p in self.passages]
        self._k1, self._b = k1, b
        self._lucene = None
        if backend == "bm25s":
            self._index = self._bm25s("robertson")
            self._vocab = set(self._index.vocab_dict)
        else:
            from rank_bm25 import BM25Okapi

            self._index = BM25Okapi(self._tokens, k1=k1, b=b)
            self._vocab = set(self._index.idf)

    def _bm25s(self, method: str):
        import bm25s

        index = bm25s.BM25(k1=self._k1, b=self._b, method=method)
        index.index(self._tokens, show_progress=False)
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (float64, corpus order)."""
        q = [t for t in bm25_tokenize(query) if t in self._vocab]
        if not q:
            return np.zeros(len(self.passages))
        s = np.asarray(self._index.get_scores(q), dtype=np.float64)
        if not s.any():  # every term's Robertson idf <= 0: Lucene idf (see the class docstring)
            if self._lucene is None:
                self._lucene = self._bm25s("lucene")
            s = np.asarray(self._lucene.get_scores(q), dtype=np.float64)
        return s

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        s = self.scores(query)
        if not s.any():
            return []
        idx = [i for i in top_k_indices(s, k) if s[i] > 0]
        return [ScoredPassage(self.passages[i], float(s[i]), r) for r, i in enumerate(idx)]


def _passage_text(p: Passage) -> str:
    return f"{p.title} {p.text}"


class DenseRetriever:
    """Cosine similarity of L2-normalised embeddings; passages embedded once at build time.

    ``embeddings`` may be passed precomputed (``(n, d)``, rows aligned with ``passages``).
    """

    def __init__(self, passages: Sequence[Passage], embedder: Embedder, embeddings: np.ndarray | None = None):
        if not passages:
            raise ValueError("cannot index an empty passage list")
        self.passages = list(passages)
        self.embedder = embedder
        if embeddings is None:
            embeddings = embedder.encode([_passage_text(p) for p in self.passages])
        if embeddings.shape[0] != len(self.passages):
            raise ValueError(f"{embeddings.shape[0]} embeddings for {len(self.passages)} passages")
        self.embeddings = np.asarray(embeddings, dtype=np.float32)

    def scores(self, query: str) -> np.ndarray:
        q = self.embedder.encode([query])[0]
        return (self.embeddings @ q).astype(np.float64)

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        s = self.scores(query)
        return [ScoredPassage(self.passages[i], float(s[i]), r) for r, i in enumerate(top_k_indices(s, k))]


def rrf_fuse(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``sum 1 / (k + rank)`` (rank from 1) over the input rankings.

    Returns ``(id, fused score)`` best first; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        for r, pid in enumerate(ranking, 1):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (k + r)
    return sorted(fused.items(), key=lambda kv: -kv[1])


class HybridRetriever:
    """RRF over several retrievers, each asked for ``depth`` results (default 50)."""

    def __init__(self, retrievers: Sequence[Retriever], depth: int = 50, rrf_k: int = 60):
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        self.retrievers = list(retrievers)
        self.depth = depth
        self.rrf_k = rrf_k

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        by_id: dict[str, Passage] = {}
        rankings = []
        for retriever in self.retrievers:
            hits = retriever.search(query, max(k, self.depth))
            rankings.append([h.passage.id for h in hits])
            by_id.update((h.passage.id, h.passage) for h in hits)
        fused = rrf_fuse(rankings, self.rrf_k)[:k]
        return [ScoredPassage(by_id[pid], score, r) for r, (pid, score) in enumerate(fused)]
