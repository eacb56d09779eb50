"""The sparse BM25 score matrix shared by the in-memory retriever and the on-disk index.

A :class:`BM25Matrix` is a CSC term x passage matrix: column ``t`` lists the passages
holding term ``t`` (``indices``, ascending) with two precomputed float32 scores, one with
the Robertson idf (``log(max(1, (N - df + 0.5) / (df + 0.5)))``, the main ranking) and
one with Lucene's idf (``log(1 + (N - df + 0.5) / (df + 0.5))``, the fallback for a
query whose terms all have a Robertson idf of 0). Both are built in the same pass, so
the fallback costs one float32 per nonzero and never a rebuild in the middle of a request.

The arithmetic is bm25s 0.3.16's (``method="robertson"`` / ``"lucene"``) step for step:
idf computed with ``math.log`` and stored as float32, the term-frequency component in
float64, their product rounded to float32, and a query's scores summed in float32 in
query-term order. A query's scores are therefore bit-identical to
``bm25s.BM25(...).get_scores(tokens)`` on the same token lists (the tests check this).

The formula's parts are written once, here, for every BM25 score the product computes: the
term-frequency component (:func:`length_norm` once a passage, then :func:`saturation`) and
the idf variants (:func:`idf_weights` for this matrix, :func:`okapi_idf` for rank-bm25's
``BM25Okapi``, which the packers' relevance reproduces).

Building is split in two steps so that it can stream: :func:`count_chunk` turns a chunk
of token lists into ``(term, passage, tf)`` triples against a growing :class:`Vocabulary`,
and :func:`scatter_scores` writes triples (in passage order) into preallocated CSC arrays,
which may be ``np.memmap`` files. An index update edits columns in place instead:
:func:`merge_terms` and :func:`update_postings` swap a changed file's postings for its
old ones, and :func:`save_columns` writes the result.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice, pairwise
from pathlib import Path

import numpy as np

__all__ = ["IDFS", "BM25Matrix", "Vocabulary", "build_matrix", "count_chunk", "idf_weights", "length_norm",
           "merge_terms", "okapi_idf", "saturation", "save_columns", "scatter_scores", "update_postings", "write_bm25"]

IDFS = ("robertson", "lucene")


class Vocabulary(dict):
    """term -> id, ids assigned in first-seen order; looking up an unseen term adds it."""

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self)
        return tid


@dataclass(frozen=True, slots=True)
class BM25Matrix:
    """CSC BM25 scores: ``indptr`` (int64, V+1), ``indices`` (int32 passage ids, ascending
    within a column), ``robertson`` / ``lucene`` (float32, aligned with ``indices``).

    ``vocab`` maps a term to its column. The arrays may be memory-mapped read-only.
    """

    vocab: Mapping[str, int]
    indptr: np.ndarray
    indices: np.ndarray
    robertson: np.ndarray
    lucene: np.ndarray
    num_docs: int

    def scores(self, term_ids: Sequence[int], idf: str = "robertson") -> np.ndarray:
        """float32 BM25 score of every passage for the query terms ``term_ids`` (repeats
        count again), summed in the given order; ``idf`` is ``"robertson"`` or ``"lucene"``.

        The query's columns, in query order, are one SciPy CSC matrix times a vector of ones:
        SciPy's matvec adds column after column into one float32 output, which is the
        summation order above, in one pass over the postings (a third of the time of
        NumPy's gather-add-scatter per term).
        """
        from scipy.sparse import csc_array  # imported on the first query, not by `index build`

        data = self.robertson if idf == "robertson" else self.lucene
        spans = [(int(self.indptr[t]), int(self.indptr[t + 1])) for t in term_ids]
        if not spans:
            return np.zeros(self.num_docs, dtype=np.float32)
        ptr = np.cumsum([0, *(end - start for start, end in spans)])
        ptr = ptr.astype(np.int32 if ptr[-1] < 2**31 else np.int64)  # SciPy copies int32 indices to a wider ptr's dtype
        columns = csc_array((np.concatenate([data[a:z] for a, z in spans]),
                             np.concatenate([self.indices[a:z] for a, z in spans]), ptr),
                            shape=(self.num_docs, len(spans)), copy=False)
        return columns @ np.ones(len(spans), dtype=np.float32)

    def row_scores(self, term_ids: Sequence[int], rows: Sequence[int], idf: str = "robertson") -> np.ndarray:
        """float32 :meth:`scores` of the passages ``rows`` only (any order, repeats allowed),
        bit for bit, without a pass over the postings: each row is looked up in each query
        column by binary search and the hits are added in query order. ``rows`` must be
        within ``[0, num_docs)``."""
        data = self.robertson if idf == "robertson" else self.lucene
        rows = np.asarray(rows, dtype=self.indices.dtype)  # the columns' dtype: no widened copy of a column
        out = np.zeros(rows.shape[0], dtype=np.float32)
        for t in term_ids:
            start, end = int(self.indptr[t]), int(self.indptr[t + 1])
            if start == end:
                continue
            column = self.indices[start:end]
            at = np.minimum(np.searchsorted(column, rows), end - start - 1)
            hit = column[at] == rows
            out[hit] += data[start + at[hit]]
        return out


def count_chunk(tokens: Sequence[Sequence[str]], vocab: Vocabulary, first_doc: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(term, doc, tf, lengths)`` of a chunk of token lists whose first passage is ``first_doc``.

    ``term``/``doc`` are int32 and sorted by ``(doc, term)``; ``tf`` (int32) counts the term
    in the passage; ``lengths`` (int64) is the token count of each passage. New terms are
    added to ``vocab``.
    """
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(tokens)), dtype=np.int64,
                      count=int(lengths.sum()))
    docs = np.repeat(np.arange(first_doc, first_doc + len(tokens), dtype=np.int64), lengths)
    keys, tf = np.unique((docs << 32) | ids, return_counts=True)
    return (keys & 0xFFFFFFFF).astype(np.int32), (keys >> 32).astype(np.int32), tf.astype(np.int32), lengths


def idf_weights(df: np.ndarray, num_docs: int) -> dict[str, np.ndarray]:
    """float32 Robertson (floored at 0) and Lucene idf per term, as bm25s computes them
    (``math.log``, once per distinct document frequency)."""
    log = math.log
    counts, at = np.unique(np.asarray(df), return_inverse=True)
    inner = [(num_docs - d + 0.5) / (d + 0.5) for d in counts.tolist()]
    rob = np.array([log(max(x, 1)) for x in inner], dtype=np.float64).astype(np.float32)
    luc = np.array([log(1 + x) for x in inner], dtype=np.float64).astype(np.float32)
    rob[counts == 0] = luc[counts == 0] = 0
    return {"robertson": rob[at], "lucene": luc[at]}


def okapi_idf(df: np.ndarray, num_docs: int) -> np.ndarray:
    """float64 idf of rank-bm25's ``BM25Okapi`` per term: ``log(N - df + 0.5) - log(df + 0.5)``,
    a difference of logs as rank-bm25 takes it, unfloored (negative for a term in more than
    half of the ``num_docs`` passages; rank-bm25 then substitutes a floor)."""
    df = np.asarray(df, dtype=np.float64)
    return np.log(num_docs - df + 0.5) - np.log(df + 0.5)


def length_norm(lengths: np.ndarray, avg_length: float, k1: float, b: float) -> np.ndarray:
    """BM25's length part of the saturation, ``k1 * ((1 - b) + b * length / avg_length)``
    (float64 ``lengths`` in tokens; ``avg_length`` must be > 0), computed once a passage."""
    return k1 * ((1 - b) + b * lengths / avg_length)


def saturation(tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """BM25's term-frequency component ``tf / (norm + tf)``, float64, in [0, 1), with ``norm``
    the :func:`length_norm` of each count's passage (they broadcast together): the score of a
    term is its idf times this (times ``k1 + 1`` in the Okapi form rank-bm25 uses)."""
    return tf / (norm + tf)


def scatter_scores(chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], df: np.ndarray,
                   lengths: np.ndarray, k1: float, b: float, out: Mapping[str, np.ndarray]) -> np.ndarray:
    """Fill ``out["indices"]``, ``out["robertson"]``, ``out["lucene"]`` (length ``df.sum()``)
    and, when ``out`` has one, ``out["tf"]`` (the term frequencies) from ``(term, doc, tf)``
    chunks that give each term's passages in ascending order (chunks in ascending passage
    order do, as do chunks of triples sorted by term then passage); return ``indptr``.

    ``lengths`` holds every passage's token count (its mean is the average length).
    """
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    heads = indptr[:-1].copy()
    idf = idf_weights(df, len(lengths))
    norm = length_norm(lengths.astype(np.float64), lengths.mean(), k1, b)
    for term, doc, tf in chunks:
        order = np.argsort(term, kind="stable")  # by term, passages stay ascending
        term, doc, tf = term[order], doc[order], tf[order]
        counts = np.bincount(term, minlength=len(df))
        first = np.cumsum(counts) - counts
        pos = heads[term] + (np.arange(len(term)) - first[term])
        heads += counts
        tfc = saturation(tf.astype(np.float64), norm[doc])
        out["indices"][pos] = doc
        if "tf" in out:
            out["tf"][pos] = tf
        for name in IDFS:
            out[name][pos] = _scores(idf[name][term], tfc)
    return indptr


def _scores(idf: np.ndarray, tfc: np.ndarray) -> np.ndarray:
    """float32 scores of postings from their float32 idf and float64 saturation (bm25s's rounding)."""
    return (idf.astype(np.float64) * tfc).astype(np.float32)


def build_matrix(tokens: Iterable[Sequence[str]], k1: float, b: float, chunk_size: int = 20_000) -> BM25Matrix:
    """A :class:`BM25Matrix` in memory over non-empty token lists (one per passage).

    ``tokens`` is consumed ``chunk_size`` lists at a time, so a generator keeps at most
    one chunk of token strings alive.
    """
    vocab, it = Vocabulary(), iter(tokens)
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    lengths: list[np.ndarray] = []
    num_docs = 0
    while batch := list(islice(it, chunk_size)):
        term, doc, tf, lens = count_chunk(batch, vocab, num_docs)
        chunks.append((term, doc, tf))
        lengths.append(lens)
        num_docs += len(batch)
    df = np.zeros(len(vocab), dtype=np.int64)
    for term, _, _ in chunks:
        df += np.bincount(term, minlength=len(vocab))
    nnz = int(df.sum())
    out = {"indices": np.empty(nnz, np.int32), **{name: np.empty(nnz, np.float32) for name in IDFS}}
    indptr = scatter_scores(chunks, df, np.concatenate(lengths), k1, b, out)
    return BM25Matrix(dict(vocab), indptr, out["indices"], out["robertson"], out["lucene"], num_docs)


def write_bm25(directory: Path, chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], df: np.ndarray,
               lengths: np.ndarray, terms: Sequence[str], k1: float, b: float) -> int:
    """Write the BM25 files of :data:`~rootweaver_innovations.retrieval.manifest.BM25_FILES` into
    ``directory`` from ``(term, doc, tf)`` chunks as :func:`scatter_scores` takes them, ``terms[t]`` the
    term of id ``t`` (each with ``df[t] > 0``) and ``lengths`` every passage's token count;
    returns the number of postings. Columns follow the terms' sorted order, so the files do not
    depend on the order terms were first met (an update writes what a build of its corpus writes)."""
    order = sorted(range(len(terms)), key=terms.__getitem__)
    rank = np.empty(len(terms), dtype=np.int32)
    rank[order] = np.arange(len(terms), dtype=np.int32)
    df = df[order]
    nnz = int(df.sum())
    out = {"indices": np.lib.format.open_memmap(directory / "indices.npy", "w+", np.int32, (nnz,)),
           **{name: np.lib.format.open_memmap(directory / f"{name}.npy", "w+", np.float32, (nnz,)) for name in IDFS},
           "tf": np.lib.format.open_memmap(directory / "tf.npy", "w+", np.int32, (nnz,))}
    indptr = scatter_scores(((rank[t], d, f) for t, d, f in chunks), df, lengths, k1, b, out)
    for arr in out.values():
        arr.flush()
    del out
    np.save(directory / "indptr.npy", indptr)
    (directory / "vocab.json").write_text(json.dumps([terms[i] for i in order], ensure_ascii=False), encoding="utf-8")
    return nnz


def save_columns(directory: Path, terms: Sequence[str], df: np.ndarray, indices: np.ndarray, tf: np.ndarray,
                 lengths: np.ndarray, k1: float, b: float, block: int = 1 << 20) -> None:
    """Write the BM25 files as :func:`write_bm25` does (the same bytes) from postings already in
    column order: ``terms`` sorted, ``df[t]`` (> 0) postings of term ``t``, ``indices`` (int32
    passages, ascending within a term) and ``tf`` (int32) aligned, ``lengths`` every passage's
    token count. The scores are computed ``block`` postings at a time, straight into the files."""
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    nnz = int(indptr[-1])
    idf = idf_weights(df, len(lengths))
    norm = length_norm(lengths.astype(np.float64), lengths.mean(), k1, b)
    out = {name: np.lib.format.open_memmap(directory / f"{name}.npy", "w+", np.float32, (nnz,)) for name in IDFS}
    for a in range(0, nnz, block):
        z = min(a + block, nnz)
        first, last = np.searchsorted(indptr, [a, z - 1], side="right") - 1  # the block's first and last column
        spans = np.minimum(indptr[first + 1:last + 2], z) - np.maximum(indptr[first:last + 1], a)
        term = np.repeat(np.arange(first, last + 1), spans)
        tfc = saturation(tf[a:z].astype(np.float64), norm[indices[a:z]])
        for name in IDFS:
            out[name][a:z] = _scores(idf[name][term], tfc)
    for arr in out.values():
        arr.flush()
    del out
    np.save(directory / "indices.npy", indices.astype(np.int32, copy=False))
    np.save(directory / "tf.npy", tf.astype(np.int32, copy=False))
    np.save(directory / "indptr.npy", indptr)
    (directory / "vocab.json").write_text(json.dumps(list(terms), ensure_ascii=False), encoding="utf-8")


def merge_terms(old_terms: Sequence[str], new_terms: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Two sorted, disjoint term lists merged: the merged list and each old and each new
    term's place in it (int64 arrays aligned with the inputs). Costs one binary search per
    new term, not a sort of every term."""
    before = np.array([bisect.bisect_left(old_terms, t) for t in new_terms], dtype=np.int64)
    old_place = np.arange(len(old_terms), dtype=np.int64) + np.searchsorted(before, np.arange(len(old_terms)),
                                                                             side="right")
    new_place = before + np.arange(len(new_terms), dtype=np.int64)
    terms = [""] * (len(old_terms) + len(new_terms))
    for i, t in chain(zip(old_place.tolist(), old_terms), zip(new_place.tolist(), new_terms)):
        terms[i] = t
    return terms, old_place, new_place


def update_postings(indptr: np.ndarray, indices: np.ndarray, tf: np.ndarray, new_row: np.ndarray,
                    old_place: np.ndarray, num_terms: int, place: np.ndarray, new_indices: np.ndarray,
                    new_tf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Postings in column order after an edit of the corpus. The old columns ``indptr`` /
    ``indices`` / ``tf`` keep the postings of passages with ``new_row[p] >= 0`` (renumbered
    to it; -1 drops one), old column ``c`` becomes column ``old_place[c]`` of ``num_terms``
    (:func:`merge_terms`), and the new postings ``(place, new_indices, new_tf)`` (any order,
    none of them duplicating a kept one) are added. Returns ``(df, indices, tf)``, passages
    ascending within each column. When the kept passages keep their order, each new run of a
    column is placed by one binary search within it; otherwise every posting is sorted again."""
    doc = new_row.astype(np.int32)[indices]
    keep = doc >= 0
    gone = np.flatnonzero(~keep)
    per_column = np.diff(indptr) - np.bincount(np.searchsorted(indptr, gone, side="right") - 1,
                                               minlength=len(old_place))
    if len(gone):
        doc, tf = doc[keep], np.asarray(tf)[keep]
    order = np.lexsort((new_indices, place))
    place, new_indices, new_tf = place[order], new_indices[order], new_tf[order]
    df = np.zeros(num_terms, dtype=np.int64)
    df[old_place] = per_column
    df += np.bincount(place, minlength=num_terms)
    kept = new_row[new_row >= 0]
    if not bool((kept[1:] > kept[:-1]).all()):
        column = np.concatenate([np.repeat(old_place, per_column), place])
        doc, tf = np.concatenate([doc, new_indices]), np.concatenate([tf, new_tf])
        order = np.lexsort((doc, column))
        return df, doc[order], tf[order]
    start = np.concatenate([[0], np.cumsum(per_column)])  # each old column's first kept posting
    column = np.searchsorted(old_place, place)  # a term's old column, or (a new term) the old column after it
    at = start[column]
    same = old_place[np.minimum(column, len(old_place) - 1)] == place if len(old_place) else column < 0
    runs = pairwise([0, *(np.flatnonzero(np.diff(place)) + 1).tolist(), len(place)]) if len(place) else ()
    for a, z in runs:  # one run of postings per column
        if same[a]:
            c = column[a]
            at[a:z] += np.searchsorted(doc[start[c]:start[c + 1]], new_indices[a:z])
    return df, np.insert(doc, at, new_indices), np.insert(tf, at, new_tf)
