"""Two-stage retrieval with a rerank depth ``D``: BM25 pool, optional reordering, second stage.

The first stage retrieves a pool (BM25 top 100 by default). The pool is ordered by one of
:data:`ORDERINGS`: ``"first_stage"`` (BM25 order), ``"frontload"`` (PACE evidence
frontloading over BM25 term weights, see :mod:`rootweaver_innovations.frontload`) or
``"mmr"`` (maximal marginal relevance, the diversity baseline). The first ``D`` candidates
of that order are re-scored by a second-stage :class:`Scorer` and the top ``k`` kept.

Second stages: :class:`BiEncoderScorer` (cosine of MiniLM embeddings; the honest scorer
available offline) and :class:`CrossEncoderScorer` (wraps a sentence-transformers
``CrossEncoder`` the user supplies; none ships offline, and a model whose classification
head is randomly initialised gives meaningless scores).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.retrieval.embeddings import Embedder
from .frontload import frontload, mmr_order
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, ScoredPassage, top_k_indices
from rootweaver_innovations.text import bm25_tokenize

__all__ = [
    "ORDERINGS",
    "BM25TermVectors",
    "BiEncoderScorer",
    "CrossEncoderScorer",
    "Scorer",
    "TwoStageResult",
    "TwoStageRetriever",
    "passage_text",
]

ORDERINGS = ("first_stage", "frontload", "mmr")


def passage_text(p: Passage) -> str:
    """What a second stage reads for a passage: title, a space, the text."""
    return f"{p.title} {p.text}"


class Scorer(Protocol):
    """Second-stage relevance: one score per passage for ``query`` (higher is better)."""

    def score(self, query: str, passages: Sequence[Passage]) -> np.ndarray: ...


class BiEncoderScorer:
    """Cosine of L2-normalised embeddings of the query and each passage.

    ``ids``/``embeddings`` (rows aligned) are precomputed passage vectors; a passage not
    among them is embedded on the fly (so with none precomputed the cost grows with the
    number of passages scored, like a cross-encoder's).
    """

    def __init__(self, embedder: Embedder, ids: Sequence[str] = (), embeddings: np.ndarray | None = None):
        rows = 0 if embeddings is None else int(np.asarray(embeddings).shape[0])
        if rows != len(ids):
            raise ValueError(f"{rows} embeddings for {len(ids)} ids")
        self.embedder = embedder
        self._row = {pid: i for i, pid in enumerate(ids)}
        self._emb = None if embeddings is None else np.asarray(embeddings, dtype=np.float32)

    def score(self, query: str, passages: Sequence[Passage]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        q = np.asarray(self.embedder.encode([query]), dtype=np.float32)[0]
        missing = [i for i, p in enumerate(passages) if p.id not in self._row]
        vecs = np.empty((len(passages), q.shape[0]), dtype=np.float32)
        if missing:
            vecs[missing] = self.embedder.encode([passage_text(passages[i]) for i in missing])
        known = [i for i, p in enumerate(passages) if p.id in self._row]
        if known:
            vecs[known] = self._emb[[self._row[passages[i].id] for i in known]]
        return (vecs @ q).astype(np.float64)


class CrossEncoderScorer:
    """Wraps a cross-encoder (anything with ``predict(pairs) -> scores``, e.g.
    sentence-transformers ``CrossEncoder``) that the caller loads and passes in."""

    def __init__(self, model, batch_size: int = 32):
        if not callable(getattr(model, "predict", None)):
            raise ValueError("model must have a predict(pairs) method (a sentence-transformers CrossEncoder)")
        self.model = model
        self.batch_size = batch_size

    def score(self, query: str, passages: Sequence[Passage]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        pairs = [(query, passage_text(p)) for p in passages]
        return np.asarray(self.model.predict(pairs, batch_size=self.batch_size), dtype=np.float64).reshape(-1)


class BM25TermVectors:
    """Non-negative per-passage term weights for frontloading and MMR.

    Weight of term ``t`` in a passage: ``idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``
    with ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (always > 0) over the whole
    corpus, tokens from :func:`bm25_tokenize` of title and text. A query's dimension
    weights are ``idf(t) * count(t)`` over its known tokens.
    """

    def __init__(self, passages: Sequence[Passage], k1: float = 1.5, b: float = 0.75):
        if not passages:
            raise ValueError("cannot build term vectors for an empty passage list")
        tfs = [Counter(bm25_tokenize(passage_text(p))) for p in passages]
        n = len(tfs)
        df: Counter[str] = Counter()
        for tf in tfs:
            df.update(tf.keys())
        self.idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        lengths = [sum(tf.values()) for tf in tfs]
        avgdl = (sum(lengths) / n) or 1.0
        self._row = {p.id: i for i, p in enumerate(passages)}
        self._weights = [
            {t: self.idf[t] * c * (k1 + 1) / (c + k1 * (1 - b + b * dl / avgdl)) for t, c in tf.items()}
            for tf, dl in zip(tfs, lengths, strict=True)
        ]

    def matrix(self, query: str, passages: Sequence[Passage]) -> tuple[np.ndarray, np.ndarray]:
        """``(X, u)``: ``X`` ``(n, m)`` term weights of ``passages`` over the union of their
        terms and the query's; ``u`` ``(m,)`` the query's weights on those terms (0 elsewhere).

        ``ValueError`` for a passage that was not in the corpus given at build time.
        """
        unknown = [p.id for p in passages if p.id not in self._row]
        if unknown:
            raise ValueError(f"passages not in the term-vector corpus: {unknown[:5]}")
        rows = [self._weights[self._row[p.id]] for p in passages]
        q = Counter(t for t in bm25_tokenize(query) if t in self.idf)
        vocab = {t: j for j, t in enumerate(dict.fromkeys([*q, *(t for r in rows for t in r)]))}
        x = np.zeros((len(rows), len(vocab)))
        for i, r in enumerate(rows):
            x[i, [vocab[t] for t in r]] = list(r.values())
        u = np.zeros(len(vocab))
        for t, c in q.items():
            u[vocab[t]] = self.idf[t] * c
        return x, u


@dataclass(frozen=True, slots=True)
class TwoStageResult:
    """What a two-stage search did: the pool, the order applied, the depth, the scores.

    ``order`` indexes ``candidates`` (first-stage order); ``rerank_scores[i]`` is the
    second-stage score of ``candidates[order[i]]`` for ``i < depth``; ``top`` holds the
    kept passages with their second-stage scores, best first.
    """

    query: str
    candidates: tuple[ScoredPassage, ...]
    ordering: str
    order: tuple[int, ...]
    depth: int
    rerank_scores: tuple[float, ...]
    top: tuple[ScoredPassage, ...]


class TwoStageRetriever:
    """BM25 pool of ``pool_size`` -> ``ordering`` -> first ``depth`` re-scored -> top ``k``.

    ``ordering`` is one of :data:`ORDERINGS`. Frontloading and MMR read BM25 term weights
    (``term_vectors``, built from the first stage's passages when not given). The
    frontloading knobs (``n_seeds``, ``anchor_weight``, ``seed_expansion``) go to
    :func:`~rootweaver_innovations.frontload.frontload`; the query's term weights are
    scaled to a maximum of 1 first.
    ``dim_background`` adds a uniform weight (relative to the largest query-term weight) to
    every term, so a bridge paragraph's own terms count as coverage too. Satisfies the
    ``Retriever`` protocol: ``search`` returns at most ``min(k, depth)`` passages.
    """

    def __init__(
        self,
        first_stage: BM25Retriever,
        scorer: Scorer,
        *,
        depth: int = 100,
        pool_size: int = 100,
        ordering: str = "first_stage",
        term_vectors: BM25TermVectors | None = None,
        n_seeds: int = 3,
        anchor_weight: float = 0.5,
        seed_expansion: float = 0.5,
        dim_background: float = 0.0,
        mmr_lambda: float = 0.7,
    ):
        if ordering not in ORDERINGS:
            raise ValueError(f"unknown ordering {ordering!r}; choose one of {sorted(ORDERINGS)}")
        if depth < 1 or pool_size < 1:
            raise ValueError(f"depth and pool_size must be >= 1, got depth={depth}, pool_size={pool_size}")
        if dim_background < 0:
            raise ValueError(f"dim_background must be >= 0, got {dim_background}")
        self.first_stage = first_stage
        self.scorer = scorer
        self.depth = depth
        self.pool_size = pool_size
        self.ordering = ordering
        self.n_seeds = n_seeds
        self.anchor_weight = anchor_weight
        self.seed_expansion = seed_expansion
        self.dim_background = dim_background
        self.mmr_lambda = mmr_lambda
        if term_vectors is None and ordering != "first_stage":
            term_vectors = BM25TermVectors(first_stage.passages)
        self.term_vectors = term_vectors

    def candidates(self, query: str) -> tuple[ScoredPassage, ...]:
        """The first-stage pool, best first."""
        return tuple(self.first_stage.search(query, self.pool_size))

    def order(self, query: str, candidates: Sequence[ScoredPassage]) -> tuple[int, ...]:
        """The order (indices into ``candidates``) in which the second stage sees them."""
        if self.ordering == "first_stage" or len(candidates) < 2:
            return tuple(range(len(candidates)))
        x, u = self.term_vectors.matrix(query, [c.passage for c in candidates])
        rel = np.maximum([c.score for c in candidates], 0.0)
        if self.ordering == "mmr":
            return mmr_order(x, rel, self.mmr_lambda)
        top = u.max() if u.size else 0.0
        u = u / top + self.dim_background if top > 0 else np.full_like(u, self.dim_background)
        return frontload(
            x, rel, u, n_seeds=self.n_seeds, anchor_weight=self.anchor_weight, seed_expansion=self.seed_expansion
        ).order

    def rerank(
        self, query: str, candidates: Sequence[ScoredPassage], order: Sequence[int], depth: int, k: int
    ) -> TwoStageResult:
        """Re-score the first ``depth`` of ``order`` and keep the best ``k`` (ties: earlier in order)."""
        if depth < 1 or k < 1:
            raise ValueError(f"depth and k must be >= 1, got depth={depth}, k={k}")
        head = list(order[:depth])
        scores = self.scorer.score(query, [candidates[i].passage for i in head]) if head else np.zeros(0)
        best = top_k_indices(np.asarray(scores, dtype=np.float64), k) if head else []
        top = tuple(ScoredPassage(candidates[head[j]].passage, float(scores[j]), r) for r, j in enumerate(best))
        return TwoStageResult(
            query, tuple(candidates), self.ordering, tuple(order), min(depth, len(head)),
            tuple(float(s) for s in scores), top,
        )

    def run(self, query: str, k: int, depth: int | None = None) -> TwoStageResult:
        """The whole pipeline for one query at ``depth`` (default: the configured depth)."""
        cands = self.candidates(query)
        return self.rerank(query, cands, self.order(query, cands), self.depth if depth is None else depth, k)

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return list(self.run(query, k).top)
