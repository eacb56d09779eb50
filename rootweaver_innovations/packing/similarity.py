"""Pairwise snippet similarity in [0, 1]: lexical TF-IDF cosine, or dense from embeddings.

Pure numpy. Dense similarity takes embeddings computed elsewhere (the caller owns the
model, see :mod:`rootweaver_innovations.embeddings`); nothing here loads a model.
Negative cosines are clipped to 0 (facility location needs non-negative similarity) and
a non-empty vector's self-similarity is exactly 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..retrieval import bm25_tokenize

__all__ = [
    "SIMILARITY_KINDS",
    "Similarity",
    "dense_similarity",
    "tfidf_relevance",
    "tfidf_similarity",
]

SIMILARITY_KINDS = ("tfidf", "dense")


@dataclass(frozen=True, slots=True, eq=False)
class Similarity:
    """A square similarity matrix over candidates, in input order, and how it was made.

    ``matrix`` is ``(n, n)`` float64, symmetric, values in [0, 1]; ``kind`` is one of
    :data:`SIMILARITY_KINDS`. Invalid values raise ``ValueError``.
    """

    matrix: np.ndarray
    kind: str

    def __post_init__(self) -> None:
        m = self.matrix
        if not isinstance(m, np.ndarray) or m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"similarity matrix must be a square 2-D array, got shape {getattr(m, 'shape', None)}")
        if m.size and not (0.0 <= m.min() and m.max() <= 1.0):  # NaN fails both comparisons
            raise ValueError("similarity values must be finite and in [0, 1]")
        if self.kind not in SIMILARITY_KINDS:
            raise ValueError(f"similarity kind must be one of {list(SIMILARITY_KINDS)}, got {self.kind!r}")

    def subset(self, indices: Sequence[int]) -> Similarity:
        """The similarity among ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.shape[0] == self.matrix.shape[0] and np.array_equal(idx, np.arange(idx.shape[0])):
            return self
        return Similarity(self.matrix[np.ix_(idx, idx)], self.kind)


def _cosine(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1)
    nonzero = norms > 0
    unit = vectors / np.where(nonzero, norms, 1.0)[:, None]  # zero rows stay zero
    sim = unit @ unit.T
    np.clip(sim, 0.0, 1.0, out=sim)
    np.fill_diagonal(sim, nonzero)
    return sim


def _tfidf(texts: Sequence[str]) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
    """Rows of raw term counts, the vocabulary and the smooth idf ``ln((1+n)/(1+df)) + 1``."""
    docs = [bm25_tokenize(t) for t in texts]
    vocab: dict[str, int] = {}
    for doc in docs:
        for tok in doc:
            vocab.setdefault(tok, len(vocab))
    counts = np.zeros((len(docs), len(vocab)), dtype=np.float64)
    for i, doc in enumerate(docs):
        for tok in doc:
            counts[i, vocab[tok]] += 1.0
    df = (counts > 0).sum(axis=0)
    idf = np.log((1.0 + len(docs)) / (1.0 + df)) + 1.0
    return counts, vocab, idf


def tfidf_similarity(texts: Sequence[str]) -> Similarity:
    """Cosine of TF-IDF vectors (tokens of :func:`~rootweaver_innovations.retrieval.bm25_tokenize`).

    >>> s = tfidf_similarity(["red apple", "red apple", "blue sky"]).matrix
    >>> float(s[0, 1]), float(s[0, 2]), float(s[2, 2])
    (1.0, 0.0, 1.0)
    """
    counts, _vocab, idf = _tfidf(texts)
    return Similarity(_cosine(counts * idf), "tfidf")


def tfidf_relevance(query: str, texts: Sequence[str]) -> np.ndarray:
    """TF-IDF cosine of each text with ``query`` (idf fitted on ``texts``), in [0, 1].

    Query words absent from every text carry no weight. Worked example: every word below
    occurs in one of the two texts, so all idf are equal and the cosine of "apple" with
    "red apple" is 1/sqrt(2).

    >>> [round(float(x), 4) for x in tfidf_relevance("apple", ["red apple", "blue sky"])]
    [0.7071, 0.0]
    """
    counts, vocab, idf = _tfidf(texts)
    q = np.zeros(len(vocab), dtype=np.float64)
    for tok in bm25_tokenize(query):
        if tok in vocab:
            q[vocab[tok]] += 1.0
    if not counts.size or not q.any():
        return np.zeros(len(texts), dtype=np.float64)
    both = _cosine(np.vstack([counts * idf, q * idf]))
    return both[-1, :-1].copy()


def dense_similarity(embeddings: np.ndarray) -> Similarity:
    """Cosine similarity of precomputed ``(n, d)`` embeddings, clipped to [0, 1]."""
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.ndim != 2 or not np.all(np.isfinite(emb)):
        raise ValueError(f"embeddings must be a finite 2-D array, got shape {emb.shape}")
    return Similarity(_cosine(emb), "dense")
