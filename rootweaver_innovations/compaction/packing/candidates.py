"""What a packer chooses from: source-grounded snippets, and hop headers they travel with.

A :class:`Candidate` carries no evaluation label (no gold flag, no answer): selectors see
only text, provenance and a relevance score computed from the query.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from rootweaver_innovations.compaction.checks import check_int, check_nonnegative
from rootweaver_innovations.records import Fact
from rootweaver_innovations.memo import Memo
from rootweaver_innovations.retrieval.bm25_matrix import length_norm, okapi_idf, saturation
from rootweaver_innovations.text import bm25_tokenize

__all__ = ["Candidate", "Header", "fact_candidates", "rank_order"]

OKAPI_K1 = 1.5  # rank-bm25's BM25Okapi defaults, reproduced by _okapi
OKAPI_B = 0.75
OKAPI_EPSILON = 0.25


class _CandidateFields(NamedTuple):
    id: str
    doc_id: str
    text: str
    position: int
    relevance: float
    version: str | None = None
    source: str | None = None
    body: str | None = None
    hop: int | None = None
    sub_query: str | None = None
    id_title: bool = False


class Candidate(_CandidateFields):
    """One snippet a packer may put in the reader context.

    ``id`` names the snippet (non-empty); ``doc_id`` the document it came from;
    ``text`` the exact text that is copied whole into the packet (it must contain a
    non-whitespace character); ``position`` its 0-based place in the source order (the
    packet is rendered in position order); ``relevance`` a finite score >= 0 against the
    query (higher is better). ``source`` and ``version`` are optional provenance: two
    version labels for one source (``source``, or ``doc_id`` when ``source`` is None)
    among the candidates block that source (see :mod:`rootweaver_innovations.compaction.packing.selection`).
    ``hop`` (0-based loop iteration that retrieved it) and ``sub_query`` (the query that
    hop issued) are optional retrieval provenance, read by the ``evidence`` packer;
    ``id_title`` says the snippet's document is titled by an id that names nothing (its
    ``source`` is then the name the document is about, when known), which picks the evidence
    model's untitled weights. Invalid fields raise ``ValueError`` (on construction, ``_make``
    and ``_replace`` alike).

    An immutable named tuple rather than a frozen dataclass: every compaction builds one per
    fact, and a tuple is built in a quarter of the time.
    """

    __slots__ = ()

    def __new__(cls, id: str, doc_id: str, text: str, position: int, relevance: float,
                version: str | None = None, source: str | None = None, body: str | None = None,
                hop: int | None = None, sub_query: str | None = None, id_title: bool = False) -> Candidate:
        self = tuple.__new__(cls, (id, doc_id, text, position, relevance, version, source, body, hop, sub_query,
                                   id_title))
        self._check()
        return self

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Candidate:
        return cls(*iterable)

    def _replace(self, **changes: Any) -> Candidate:
        unknown = changes.keys() - set(self._fields)
        if unknown:
            raise ValueError(f"candidate {self.id!r}: no fields {sorted(unknown)}")
        return type(self)(*[changes.get(name, value) for name, value in zip(self._fields, self)])

    def _check(self) -> None:
        rel, hop = self.relevance, self.hop
        if (  # the common case, all fields plainly valid, in one pass; anything else is checked one by one
            type(self.id) is str and self.id and type(self.doc_id) is str and type(self.text) is str
            and self.text and not self.text.isspace() and type(self.position) is int and self.position >= 0
            and type(rel) is float and 0.0 <= rel < math.inf and (hop is None or (type(hop) is int and hop >= 0))
            and (self.version is None or type(self.version) is str) and (self.source is None or type(self.source) is str)
            and (self.body is None or type(self.body) is str) and (self.sub_query is None or type(self.sub_query) is str)
            and type(self.id_title) is bool
        ):
            return
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"candidate id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.doc_id, str):
            raise ValueError(f"candidate {self.id!r}: doc_id must be a str, got {self.doc_id!r}")
        if not isinstance(self.text, str) or not self.text or self.text.isspace():
            raise ValueError(f"candidate {self.id!r}: text must be a str with visible content")
        check_int(f"candidate {self.id!r}: position", self.position, 0)
        check_nonnegative(f"candidate {self.id!r}: relevance", rel)
        if hop is not None:
            check_int(f"candidate {self.id!r}: hop", hop, 0)
        for name, value in (("version", self.version), ("source", self.source), ("body", self.body),
                            ("sub_query", self.sub_query)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"candidate {self.id!r}: {name} must be a str or None, got {value!r}")
        if not isinstance(self.id_title, bool):
            raise ValueError(f"candidate {self.id!r}: id_title must be a bool, got {self.id_title!r}")

    @property
    def content(self) -> str:
        """``body`` when set, else ``text``."""
        return self.body if self.body is not None else self.text

    @property
    def provenance(self) -> tuple[str, str | None, str | None]:
        """``(doc_id, source, version)``: what must agree when one id appears twice."""
        return (self.doc_id, self.source, self.version)

    @property
    def source_key(self) -> str:
        """The source whose version labels must agree: ``source``, else ``doc_id``."""
        return self.source if self.source is not None else self.doc_id


def rank_order(candidates: Sequence[Candidate]) -> list[int]:
    """Indices of ``candidates`` in rank order: relevance descending, then position, then input order."""
    keys = [(-float(c.relevance), c.position) for c in candidates]
    return sorted(range(len(keys)), key=keys.__getitem__)  # a stable sort keeps input order on ties


@dataclass(frozen=True, slots=True)
class Header:
    """A line emitted once, just before the first kept candidate that belongs to it.

    Used for hop headers (:func:`~rootweaver_innovations.compaction.synth_context.format_header`): the header's
    text and separator count against the budget only when one of its candidates is kept.
    ``position`` orders it among the candidates when the packet is rendered.
    """

    position: int
    text: str

    def __post_init__(self) -> None:
        check_int("header position", self.position, 0)
        if not isinstance(self.text, str) or "\n" in self.text:
            raise ValueError(f"header text must be a single-line str, got {self.text!r}")


@dataclass(frozen=True, slots=True)
class _DocTerms:
    """A tokenised doc as BM25 reads it: its length in tokens and each term's count."""

    length: int
    counts: Mapping[str, int]


def _okapi(docs: Sequence[_DocTerms], query: Sequence[str]) -> list[float]:
    """BM25 Okapi of each counted doc against the tokens ``query`` over the corpus ``docs``.

    The formula and constants of rank-bm25's ``BM25Okapi`` (k1 1.5, b 0.75, a term in more
    than half of the docs gets ``0.25 *`` the mean idf), so its scores are reproduced but for
    the last bits of a float64 (built from
    :func:`~rootweaver_innovations.retrieval.bm25_matrix.okapi_idf` and
    :func:`~rootweaver_innovations.retrieval.bm25_matrix.saturation`, multiplied in another
    order than rank-bm25's); a repeated query term counts once per occurrence. Empty ``docs``: ``[]``.
    Only the query's terms are looked up; the mean idf over every term of the corpus (the
    floor of a term in more than half of the docs) is computed only when a query term needs it.
    """
    n = len(docs)
    terms = list(dict.fromkeys(query))
    if n == 0 or not terms:
        return [0.0] * n
    counts = [d.counts for d in docs]
    tf = np.fromiter([c.get(t, 0) for t in terms for c in counts], dtype=np.float64,  # (docs, terms), by term
                     count=n * len(terms)).reshape(len(terms), n).T
    freq = np.count_nonzero(tf, axis=0)
    present = freq > 0
    if not present.any():  # no query term in any doc (every doc empty included): all zero
        return [0.0] * n
    idf = okapi_idf(freq, n)
    if (idf[present] < 0).any():
        idf = np.where(idf < 0, OKAPI_EPSILON * _mean_idf(docs), idf)
    lengths = np.array([d.length for d in docs], dtype=np.float64)
    norm = length_norm(lengths[:, None], float(lengths.mean()), OKAPI_K1, OKAPI_B)
    gain = (OKAPI_K1 + 1) * idf * saturation(tf, norm)
    column = {t: j for j, t in enumerate(terms)}
    scores = np.zeros(n)
    for term in query:  # summed in query order, once per occurrence
        j = column[term]
        if present[j]:
            scores += gain[:, j]
    return scores.tolist()


def _mean_idf(docs: Sequence[_DocTerms]) -> float:
    """Mean idf over every distinct term of ``docs``, in first-appearance order."""
    df = Counter(chain.from_iterable(d.counts for d in docs))
    return float(okapi_idf(np.fromiter(df.values(), dtype=np.int64, count=len(df)), len(docs)).mean())


def _doc_terms_bytes(d: _DocTerms) -> int:
    return sys.getsizeof(d.counts) + 80 * len(d.counts)  # the Counter, its term strings and ints


_TEXT_TERMS: Memo[_DocTerms] = Memo(max_entries=16384, max_bytes=32 << 20, max_key_chars=4096,
                                    value_bytes=_doc_terms_bytes)


def _count_terms(text: str) -> _DocTerms:
    terms = bm25_tokenize(text)
    return _DocTerms(len(terms), Counter(terms))


def text_terms(text: str) -> _DocTerms:
    """The :func:`~rootweaver_innovations.retrieval.retrievers.bm25_tokenize` terms of ``text``, counted.

    Memoised (a corpus's passages recur across questions): at most 16,384 texts and about
    32 MiB, and no text over 4,096 chars (:class:`~rootweaver_innovations.memo.Memo`;
    a count cap alone let 16,384 lines of 20 KB hold 3.5 GB). A fact's line is tokenised
    once, here, for its relevance, and the packing problem's query incidence reads the
    same counts.
    """
    return _TEXT_TERMS.memoised(text, _count_terms)


def _document(fact: Fact) -> str:
    """The document a fact belongs to: its passage; for a chunk its file and title; for a record
    titled by an id, that id (the records a user cut from one file and titled by its name; an
    empty title groups nothing)."""
    if fact.source is not None:
        return f"{fact.source.path}\x1f{fact.title}"
    return f"\x1f{fact.title}" if fact.id_title and fact.title.strip() else fact.passage_id


def fact_candidates(question: str, facts: Sequence[Fact]) -> list[Candidate]:
    """One packing candidate per fact: the only way facts become candidates.

    ``text`` is the fact's context line (:attr:`~rootweaver_innovations.records.Fact.line`, what
    the reader sees and the budget pays for), ``body`` its sentence with whitespace folded,
    ``doc_id`` the passage id (a chunk of a user's file: its path and title, so the chunks that
    carry one part of a document on are one document to the packers, as a paragraph's sentences
    are; records titled by one id likewise), ``source`` the title (under an id title the
    file's subject when known, the name the reader sees on the line; ``id_title`` set),
    ``position`` the fact's index in ``facts`` (the loop's hop and rank order), ``relevance``
    BM25 Okapi (rank-bm25's) of the line's terms against ``question``, clipped at 0 (under an id
    title, of the sentence's: the file's subject on the line is for the reader, and scoring it
    cost answers on 2Wiki and MuSiQue, docs/results.md); ``hop`` and ``sub_query``
    the fact's. Facts whose sentence is blank are skipped. The product's compactors, the
    packing eval and the evidence model's fitting script all build candidates here.
    """
    items = [f for f in facts if f.body]
    scores = _okapi([text_terms(f.body if f.id_title else f.line) for f in items], bm25_tokenize(question))
    new = tuple.__new__  # valid by construction (a Fact's fields, a clipped finite score): built unchecked
    return [
        new(Candidate, (f"{f.passage_id}#{f.sentence_index}", _document(f), f.line, k, max(0.0, score), None,
                        (f.subject or f.title) if f.id_title else f.title, f.body, f.hop, f.sub_query, f.id_title))
        for k, (f, score) in enumerate(zip(items, scores))
    ]
