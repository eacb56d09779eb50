"""Pairwise snippet similarity in [0, 1]: lexical TF-IDF cosine, or dense from embeddings.

Pure numpy. Dense similarity takes embeddings computed elsewhere (the caller owns the
model, see :mod:`rootweaver_innovations.retrieval.embeddings`); nothing here loads a model.
Negative cosines are clipped to 0 (facility location needs non-negative similarity) and
a non-empty vector's self-similarity is exactly 1.

Memory. TF-IDF similarity is never held as a matrix: :func:`tfidf_similarity` keeps the
unit TF-IDF vectors sparse (one entry per distinct token of a text, plus the same entries
grouped by token) and computes only the columns asked for, in blocks of at most
:data:`BLOCK_ENTRIES` output cells and :data:`BLOCK_PRODUCTS` partial products
(:meth:`Similarity.column_blocks`). Its memory is O(tokens + n) plus one block, not
O(n x vocabulary) or O(n^2). A cell is summed over the shared tokens in token-id order,
whichever other columns are computed with it, so the values are deterministic and the
matrix is exactly symmetric; they equal the dense computation up to float rounding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.text import bm25_tokenize

__all__ = [
    "BLOCK_ENTRIES",
    "BLOCK_PRODUCTS",
    "SIMILARITY_KINDS",
    "Similarity",
    "dense_similarity",
    "tfidf_similarity",
]

SIMILARITY_KINDS = ("tfidf", "dense")
BLOCK_ENTRIES = 1 << 20  # output cells (n x columns) per block: 8 MB of float64
BLOCK_PRODUCTS = 1 << 19  # partial products per TF-IDF block (about 6 arrays of 8 bytes each)


@dataclass(frozen=True, slots=True, eq=False)
class _SparseUnitRows:
    """L2-normalised TF-IDF rows, by row (CSR) and by token (postings), and each row's work.

    Row ``i`` holds tokens ``terms[indptr[i]:indptr[i+1]]`` (ascending ids) with weights
    ``weights[...]``; token ``t`` occurs in rows ``post_rows[post_ptr[t]:post_ptr[t+1]]``
    (ascending) with weights ``post_weights[...]``. ``cost[i]`` is the number of partial
    products of column ``i`` (the sum of its tokens' document frequencies).
    """

    n: int
    indptr: np.ndarray
    terms: np.ndarray
    weights: np.ndarray
    post_ptr: np.ndarray
    post_rows: np.ndarray
    post_weights: np.ndarray
    nonempty: np.ndarray
    cost: np.ndarray

    def block(self, cols: np.ndarray) -> np.ndarray:
        """The ``(n, len(cols))`` cosine columns ``cols``, clipped to [0, 1], diagonal set."""
        k = len(cols)
        pos = _ranges(self.indptr[cols], self.indptr[cols + 1])
        col_of = np.repeat(np.arange(k, dtype=np.int64), self.indptr[cols + 1] - self.indptr[cols])
        terms = self.terms[pos]
        df = self.post_ptr[terms + 1] - self.post_ptr[terms]
        post = _ranges(self.post_ptr[terms], self.post_ptr[terms + 1])
        key = self.post_rows[post] * k + np.repeat(col_of, df)
        prod = np.repeat(self.weights[pos], df) * self.post_weights[post]
        out = np.bincount(key, weights=prod, minlength=self.n * k).astype(np.float64, copy=False).reshape(self.n, k)
        np.clip(out, 0.0, 1.0, out=out)
        out[cols, np.arange(k)] = self.nonempty[cols]
        return out

    def take(self, idx: np.ndarray) -> _SparseUnitRows:
        """The rows ``idx`` (in that order) with their weights unchanged, re-indexed ``0..``."""
        lens = self.indptr[idx + 1] - self.indptr[idx]
        pos = _ranges(self.indptr[idx], self.indptr[idx + 1])
        rows = np.repeat(np.arange(len(idx), dtype=np.int64), lens)
        return _sparse_rows(len(idx), rows, self.terms[pos], self.weights[pos], len(self.post_ptr) - 1)


def _sparse_rows(n: int, rows: np.ndarray, terms: np.ndarray, unit: np.ndarray, n_terms: int) -> _SparseUnitRows:
    """Index ``(row, term, weight)`` entries sorted by row, then term, both ways."""
    df = np.bincount(terms, minlength=n_terms)
    by_term = np.argsort(terms, kind="stable")
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).astype(np.int64)
    return _SparseUnitRows(
        n=n, indptr=indptr, terms=terms, weights=unit,
        post_ptr=np.concatenate(([0], np.cumsum(df))).astype(np.int64),
        post_rows=rows[by_term], post_weights=unit[by_term],
        nonempty=(np.diff(indptr) > 0).astype(np.float64),
        cost=np.bincount(rows, weights=df[terms], minlength=n).astype(np.int64),
    )


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(starts[i], stops[i])`` over ``i`` (int64)."""
    lens = stops - starts
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(lens) - lens  # offset of each range in the output
    return np.arange(total, dtype=np.int64) - np.repeat(first - starts, lens)


def _unit_rows(texts: Sequence[str]) -> tuple[_SparseUnitRows, dict[str, int], np.ndarray]:
    """Sparse unit TF-IDF rows of ``texts``, the vocabulary and the smooth idf
    ``ln((1+n)/(1+df)) + 1`` (the weighting of the dense computation it replaces)."""
    n = len(texts)
    vocab: dict[str, int] = {}
    ids = [np.fromiter((vocab.setdefault(tok, len(vocab)) for tok in bm25_tokenize(t)), dtype=np.int64)
           for t in texts]
    lens = np.fromiter((len(a) for a in ids), dtype=np.int64, count=n)
    v = max(len(vocab), 1)
    key, counts = np.unique(np.repeat(np.arange(n, dtype=np.int64), lens) * v
                            + (np.concatenate(ids) if n else np.zeros(0, np.int64)), return_counts=True)
    rows, terms = key // v, key % v
    df = np.bincount(terms, minlength=len(vocab))
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    w = counts * idf[terms]
    norm = np.sqrt(np.bincount(rows, weights=w * w, minlength=n))
    unit = w / norm[rows] if len(w) else w
    return _sparse_rows(n, rows, terms, unit, len(vocab)), vocab, idf


class Similarity:
    """A square similarity over candidates, in input order, and how it was made.

    ``Similarity(matrix, kind)`` wraps an ``(n, n)`` float64 matrix, symmetric, values in
    [0, 1]; ``kind`` is one of :data:`SIMILARITY_KINDS`. Invalid values raise
    ``ValueError``. :func:`tfidf_similarity` builds one without a matrix (see the module
    docstring); read it with :meth:`columns` / :meth:`column_blocks`, whose memory is
    bounded by what is asked. :attr:`matrix` materialises all ``n^2`` cells: for small
    inputs and tests only.
    """

    __slots__ = ("kind", "_matrix", "_rows")

    def __init__(self, matrix: np.ndarray, kind: str):
        m = matrix
        if not isinstance(m, np.ndarray) or m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"similarity matrix must be a square 2-D array, got shape {getattr(m, 'shape', None)}")
        if m.size and not (0.0 <= m.min() and m.max() <= 1.0):  # NaN fails both comparisons
            raise ValueError("similarity values must be finite and in [0, 1]")
        if kind not in SIMILARITY_KINDS:
            raise ValueError(f"similarity kind must be one of {list(SIMILARITY_KINDS)}, got {kind!r}")
        self.kind = kind
        self._matrix: np.ndarray | None = m
        self._rows: _SparseUnitRows | None = None

    @classmethod
    def _from_rows(cls, rows: _SparseUnitRows) -> Similarity:
        obj = cls.__new__(cls)
        obj.kind, obj._matrix, obj._rows = "tfidf", None, rows
        return obj

    @property
    def n(self) -> int:
        """Number of candidates (rows = columns)."""
        return self._matrix.shape[0] if self._matrix is not None else self._rows.n

    @property
    def matrix(self) -> np.ndarray:
        """All ``(n, n)`` cells as a float64 array (O(n^2) memory: small inputs only)."""
        if self._matrix is not None:
            return self._matrix
        return self.columns(np.arange(self.n))

    def columns(self, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """Columns ``idx`` as an ``(n, len(idx))`` float64 array."""
        cols = np.asarray(idx, dtype=np.int64).reshape(-1)
        out = np.empty((self.n, len(cols)))
        for span, block in self.column_blocks(cols):
            out[:, span] = block
        return out

    def column_blocks(self, idx: Sequence[int] | np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
        """``(span, block)`` pairs covering columns ``idx`` in order: ``block`` holds columns
        ``idx[span]`` as ``(n, span length)`` float64, each block of bounded size."""
        cols = np.asarray(idx, dtype=np.int64).reshape(-1)
        per_block = max(1, BLOCK_ENTRIES // max(self.n, 1))
        if self._rows is None:
            for lo in range(0, len(cols), per_block):
                yield slice(lo, lo + per_block), self._matrix[:, cols[lo:lo + per_block]]
            return
        work = np.cumsum(self._rows.cost[cols])
        lo = 0
        while lo < len(cols):
            done = work[lo - 1] if lo else 0
            hi = min(len(cols), lo + per_block, max(lo + 1, int(np.searchsorted(work, done + BLOCK_PRODUCTS, "right"))))
            yield slice(lo, hi), self._rows.block(cols[lo:hi])
            lo = hi

    def subset(self, indices: Sequence[int]) -> Similarity:
        """The similarity among ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.shape[0] == self.n and np.array_equal(idx, np.arange(idx.shape[0])):
            return self
        if self._matrix is not None:
            return Similarity(self._matrix[np.ix_(idx, idx)], self.kind)
        return Similarity._from_rows(self._rows.take(idx))


def _cosine(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1)
    nonzero = norms > 0
    unit = vectors / np.where(nonzero, norms, 1.0)[:, None]  # zero rows stay zero
    sim = unit @ unit.T
    np.clip(sim, 0.0, 1.0, out=sim)
    np.fill_diagonal(sim, nonzero)
    return sim


def tfidf_similarity(texts: Sequence[str]) -> Similarity:
    """Cosine of TF-IDF vectors (tokens of :func:`~rootweaver_innovations.retrieval.retrievers.bm25_tokenize`),
    computed column by column on demand (see the module docstring).

    >>> s = tfidf_similarity(["red apple", "red apple", "blue sky"]).matrix
    >>> float(s[0, 1]), float(s[0, 2]), float(s[2, 2])
    (1.0, 0.0, 1.0)
    """
    rows, _vocab, _idf = _unit_rows(texts)
    return Similarity._from_rows(rows)


def dense_similarity(embeddings: np.ndarray) -> Similarity:
    """Cosine similarity of precomputed ``(n, d)`` embeddings, clipped to [0, 1]."""
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.ndim != 2 or not np.all(np.isfinite(emb)):
        raise ValueError(f"embeddings must be a finite 2-D array, got shape {emb.shape}")
    return Similarity(_cosine(emb), "dense")
