"""The ``evidence`` packing policy: which documents are evidence, which sentence holds the
answer, then an exact covering knapsack.

Why the other packers lose on multi-hop questions: their scores are lexical relevance, and
the sentence that holds the answer of a bridge question usually shares few words with the
question (it is in the *second* paragraph, reached through an entity the first one names).
Per-token gains make it worse by favouring short, low-information sentences.

This policy uses two fixed linear models over what every policy sees (texts, titles,
relevance, document order, the question), never a label, then packs by an exact programme:

1. **Documents** (:func:`document_features`, the model file's ``document`` section): ``q_d``, a logistic
   model of "document ``d`` is needed evidence", from its retrieval rank, relevance, title
   links (its title is named by another document, it names another's title, *second-order*
   links through a document whose title the question names) and the question's words, and
   the same links without titles: each document's *lead entity* (the capitalised name its
   first sentence opens with, :func:`_lead_entity`) named by another document or by the
   question, how relevant the sentence that names it (by title or lead entity) is, the hop
   that retrieved it and how well it matches the sub-query of that hop
   (``Candidate.hop`` / ``Candidate.sub_query``), so documents with opaque ids keep most of
   the signal.
2. **Sentences** (:func:`evidence_features`, the model file's ``sentence`` section): ``p_i``, the share of
   "this sentence holds the answer" among the problem's candidates (a softmax, so the ``p``
   of a problem sum to 1), from relevance, lead / second sentence of its document (a
   Wikipedia paragraph's first sentence names its entity), answer-type cues (years for
   *when*, numbers for *how many*, birth brackets for *who*), new capitalised words, title
   and lead-entity links, its hop and share of its sub-query's terms, the question's head
   words, cost and its document's ``q_d``.
3. **Pack** (:func:`evidence_policy`): maximise
   ``sum_i (p_i - price) + coverage * sum_{d covered} q_d`` under the token (or
   char) capacity, where each document contributes one or two sentences among its
   ``options_per_doc`` best by ``p`` and its cheapest one: a multiple-choice knapsack
   solved exactly by dynamic programming over the integer capacity. The second term is
   the expected number of needed documents the context covers: a document is worth at most
   ``coverage`` beside answer shares that sum to 1, so a document the model is sure of (the
   one the question names, on a chain of hops) does not outbid the later hop that holds
   the answer.
   The chosen sentences are taken best first, then the budget left is filled, best first
   by ``p + fill_evidence * q_d``, with any candidate that fits.

Both models are fitted state: weights by feature name, the packing parameters and their
provenance live in ``rootweaver_innovations/data/evidence_model.json``, written by
``scripts/fit_evidence_weights.py`` and read by one :class:`EvidenceModel` object. Features
are computed by name and matched to the file's names, never by position. Features that look
at wording read a candidate's ``content`` (its bare sentence), its title is its ``source``
when set, else its ``doc_id``. Ties break by input order, so the policy is deterministic.
When every candidate fits (within the snippet cap) it takes them all, so packing its own
output is a no-op.
"""

from __future__ import annotations

import functools
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from importlib import resources
from itertools import accumulate, chain, combinations
from pathlib import Path
from typing import Any, TypeVar

import ahocorasick
import numpy as np

from ..compaction import STOP_WORDS
from ..retrieval import bm25_tokenize
from .objective import term_incidence
from .policies import PackingProblem, Selection, register_policy

__all__ = [
    "EvidenceModel",
    "EvidenceParams",
    "answer_likelihood",
    "document_features",
    "document_likelihood",
    "evidence_features",
    "evidence_policy",
]

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\d+")
_CAPITAL = re.compile(r"\b[A-Z][\w'\-]*")
_PRONOUN = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|This|These)\b")
_PAREN = re.compile(r"\s*\(.*\)$")
_WORD = re.compile(r"\w+")
_ENTITY_SKIP = frozenset({"the", "a", "an"})  # dropped at the start of a lead entity
_ENTITY_JOIN = frozenset({"of", "de", "the", "and", "von", "van", "der", "da", "del", "la", "le", "du", "&"})
_ENTITY_MIN = 4  # chars: shorter lead entities ("He", "It", "U.S") are not matched
_Q_CLIP = 1e-4  # q_d is kept in [1e-4, 1 - 1e-4]
MODEL_FILE = "evidence_model.json"
MODEL_FORMAT = 1
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class EvidenceParams:
    """Packing parameters (chosen on the tuning half, see ``docs/packing_results.md``).

    ``coverage`` (>= 0) weighs the expected number of needed documents covered (the summed
    ``q_d`` of the documents the knapsack takes a sentence of) against the summed answer
    shares; ``price`` (>= 0) is charged per sentence the knapsack takes, so a sentence whose
    share is below it is taken there only to cover its document; ``fill_evidence`` (>= 0) is
    the weight of a sentence's document likelihood ``q_d`` beside its share ``p`` when the
    budget left after the knapsack is filled (``p + fill_evidence * q_d``, best first,
    anything that fits); ``options_per_doc`` (>= 1) how many of a document's best sentences
    by ``p`` the knapsack considers (its cheapest sentence is always considered too),
    ``max_per_doc`` (1 or 2) how many it may take from one document; ``max_cover_docs``
    (>= 1) how many documents, those with the largest coverage bonus, enter the knapsack (the
    rest can still be taken by the fill), which bounds its memory at
    ``2 x (max_cover_docs + 1) x (capacity + 1)`` cells however long the input. Bad values raise
    ``ValueError``.
    """

    coverage: float = 0.4
    price: float = 0.02
    fill_evidence: float = 0.02
    options_per_doc: int = 3
    max_per_doc: int = 2
    max_cover_docs: int = 64

    def __post_init__(self) -> None:
        for name in ("coverage", "price", "fill_evidence"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        opts = self.options_per_doc
        if isinstance(opts, bool) or not isinstance(opts, int) or opts < 1:
            raise ValueError(f"options_per_doc must be an int >= 1, got {self.options_per_doc!r}")
        if self.max_per_doc not in (1, 2) or isinstance(self.max_per_doc, bool):
            raise ValueError(f"max_per_doc must be 1 or 2, got {self.max_per_doc!r}")
        cover = self.max_cover_docs
        if isinstance(cover, bool) or not isinstance(cover, int) or cover < 1:
            raise ValueError(f"max_cover_docs must be an int >= 1, got {cover!r}")


def _question_kind(question: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """``(when, how_many, who, where, comparison, which)`` cues from the question's wording."""
    q = question.lower()
    when = q.startswith("when") or any(k in q for k in ("what year", "which year", "what date"))
    how_many = any(k in q for k in ("how many", "how much", "how long", "how old", "how tall"))
    who = q.startswith("who") or " who " in q or "what person" in q
    where = q.startswith("where") or any(
        k in q for k in ("what city", "what country", "which city", "which country", "what state")
    )
    comparison = " or " in q or "both" in q
    which = q.startswith(("which", "what"))
    return when, how_many, who, where, comparison, which


_MEMO_CHARS = 1000  # texts up to this long are memoised by _per_text; longer ones are computed every time
_MEMO_SIZE = 8192  # texts kept per memoised function (at most about 8 MB each however long a server runs)


def _per_text(fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """``fn`` (a pure function of one text) memoised for texts up to ``_MEMO_CHARS`` chars,
    at most ``_MEMO_SIZE`` of them (least recently used out)."""
    cached = functools.lru_cache(maxsize=_MEMO_SIZE)(fn)

    @functools.wraps(fn)
    def call(text: str) -> _T:
        return cached(text) if len(text) <= _MEMO_CHARS else fn(text)

    return call


@_per_text
def _parse(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool, bool]:
    """Question-independent parse of a sentence: ``(lowercased capitalised words, numbers, has a
    year, starts with a pronoun, birth bracket)`` (memoised, :func:`_per_text`)."""
    return (
        tuple(w.lower() for w in _CAPITAL.findall(text)),
        tuple(_NUMBER.findall(text)),
        _YEAR.search(text) is not None,
        _PRONOUN.match(text) is not None,
        "(born" in text or (" – " in text[:120] and "(" in text[:80]),
    )


@_per_text
def _words(text: str) -> frozenset[str]:
    """The distinct ``\\w+`` words of ``text`` (memoised, :func:`_per_text`)."""
    return frozenset(_WORD.findall(text))


@_per_text
def _lead_entity(text: str) -> str:
    """The leading run of capitalised words of ``text`` (lowercased), the name a lead sentence
    is about when it has no title: ``"The Oberoi Group is ..."`` gives ``"oberoi group"``.
    Lowercase joiners (of, de, van, ...) are kept between capitalised words; a run shorter than
    ``_ENTITY_MIN`` chars, a pronoun or a leading stop word gives ``""``. Memoised (:func:`_per_text`)."""
    out: list[str] = []
    pending: list[str] = []
    for k, raw in enumerate(text.split()):
        w = raw.strip(",;:\"“”()")
        if not w or raw[0] == "(":
            break
        if not out:  # the name's first word: after an optional leading article, never a stop word
            low = w.lower()
            if k == 0 and low in _ENTITY_SKIP:
                continue
            if low in STOP_WORDS:  # "In 1912, ...", "As the ...": no name leads
                return ""
            if not (w[0].isupper() or w[0].isdigit()):
                break
        elif w[0].isupper() or w[0].isdigit():
            out += pending
            pending = []
        elif w.lower() in _ENTITY_JOIN:
            pending.append(w)
            continue
        else:
            break
        out.append(w)
        if raw != w and not raw.endswith("'s"):  # punctuation ends the name
            break
    name = " ".join(out)
    low = name.lower()
    return "" if len(low) < _ENTITY_MIN or _PRONOUN.match(name) else low


@_per_text
def _bare_title(title: str) -> str:
    """``title`` lowercased, without a trailing ``"(...)"`` (``"Mercury (planet)"`` gives ``"mercury"``;
    memoised, :func:`_per_text`)."""
    return (_PAREN.sub("", title) if "(" in title else title).lower()


@_per_text
def _question_capitals(question: str) -> frozenset[str]:
    """The question's capitalised words after its first word, lowercased (memoised, :func:`_per_text`)."""
    return frozenset(w.lower() for w in _CAPITAL.findall(question)[1:])


@_per_text
def _head_words(question: str) -> tuple[str, ...]:
    """The question's words 2-6 (lowercased) that are not stop words (memoised, :func:`_per_text`)."""
    return tuple(w for w in _WORD.findall(question.lower())[1:6] if w not in STOP_WORDS)


def _sub_entity(sub_query: str | None, query: str) -> str:
    """The entity a follow-up sub-query leads with (``""`` for the question itself or none)."""
    if not sub_query or sub_query == query:
        return ""
    return _lead_entity(sub_query)


def _holders(names: Collection[str], joined: str, ends: list[int]) -> dict[str, list[int]]:
    """For each distinct non-empty name, the texts of ``joined`` (``"\n"``-joined, text ``i``
    ending before ``ends[i]``) that contain it as a substring, in order; one Aho-Corasick pass
    over ``joined`` for all names. An empty name is held by no text."""
    found: dict[str, list[int]] = {name: [] for name in names}
    automaton = ahocorasick.Automaton()
    for name in found:
        if name:
            automaton.add_word(name, (name, len(name) - 1))
    if not len(automaton):
        return found
    automaton.make_automaton()
    for end, (name, width) in automaton.iter(joined):
        i = bisect_right(ends, end - width)
        if end + 1 < ends[i]:  # inside text i (a name holding "\n" may span two texts: it is in neither)
            held = found[name]
            if not held or held[-1] != i:
                held.append(i)
    return found


@dataclass(frozen=True, slots=True, eq=False)
class _Sentences:
    """A problem's lowercased sentences and which of them hold each of a fixed set of names."""

    lowered: list[str]  # per sentence: lowercased text
    found: dict[str, list[int]]  # name -> the sentences containing it, in order

    @classmethod
    def of(cls, texts: list[str], names: Collection[str]) -> _Sentences:
        """``texts`` lowercased and searched for every name of ``names`` (lowercase) at once."""
        lowered = [t.lower() for t in texts]  # lowercasing may change lengths: offsets from these
        return cls(lowered, _holders(names, "\n".join(lowered), list(accumulate(len(t) + 1 for t in lowered))))

    def holding(self, name: str) -> list[int]:
        """The sentences containing ``name``, in order; ``name`` must be one searched by :meth:`of`."""
        return self.found[name]


def _link_matrix(names: list[str], doc: np.ndarray, rel: np.ndarray, sentences: _Sentences
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(links, out, named_rel)``: ``links[j, k]`` when a sentence of document j contains
    document k's name (never ``j == k``); ``out[i]`` when sentence i contains another
    document's name; ``named_rel[k]`` the highest ``rel`` of a sentence of another document
    containing document k's name (``-inf`` when none). A sentence contains a name as a
    substring (:meth:`_Sentences.holding`); ``doc`` is each sentence's document.

    Memory is bounded by the input, not by the (sentence, named document) pairs: documents
    sharing one name (a lead entity every line repeats) are handled as one group, so
    4,558 lines naming one entity cost the ``links`` matrix and O(lines) arrays, not 20
    million pairs.
    """
    n_doc = len(names)
    links = np.zeros((n_doc, n_doc), dtype=bool)
    out = np.zeros(len(doc))
    named_rel = np.full(n_doc, -np.inf)
    groups: dict[str, list[int]] = {}
    for d, name in enumerate(names):
        groups.setdefault(name, []).append(d)
    for name, members in groups.items():
        held = np.asarray(sentences.holding(name), dtype=np.int64)
        if not held.size:
            continue
        group = np.asarray(members, dtype=np.int64)
        held_doc = doc[held]
        links[np.ix_(np.unique(held_doc), group)] = True  # the diagonal is cleared below
        others = held if len(group) > 1 else held[held_doc != group[0]]
        out[others] = 1.0
        best = int(held[np.argmax(rel[held])])  # the best sentence, then the best of another document
        rest = held[held_doc != doc[best]]
        second = float(rel[rest].max()) if rest.size else -np.inf
        named_rel[group] = np.where(group == doc[best], second, rel[best])
    np.fill_diagonal(links, False)
    return links, out, named_rel


@dataclass(frozen=True, slots=True, eq=False)
class _Structure:
    """What both models read: per-sentence document facts and the documents' title links."""

    rel: np.ndarray  # relevance / max relevance
    positions: np.ndarray  # per sentence: Candidate.position
    doc_best: np.ndarray  # per document: its highest rel
    doc_share: np.ndarray  # per document: its share of the total relevance (0 when there is none)
    doc_rank: np.ndarray  # per sentence: its document's retrieval rank
    in_doc: np.ndarray  # per sentence: its index inside its document (position order)
    titles: list[str]  # per document: lowercased title without a trailing "(...)"
    contents: list[str]  # per sentence: Candidate.content
    sentences: _Sentences  # the contents lowercased, for substring search
    links: np.ndarray  # (n_doc, n_doc) bool: document j has a sentence naming document k's title
    bridge_out: np.ndarray  # per sentence: names another document's title
    title_in_q: np.ndarray  # per document
    entities: list[str]  # per document: the lead entity of its first sentence (see _lead_entity)
    entity_links: np.ndarray  # (n_doc, n_doc) bool: document j has a sentence naming document k's entity
    entity_out: np.ndarray  # per sentence: names another document's lead entity
    entity_in_q: np.ndarray  # per document: its lead entity occurs in the question
    named_by_rel: np.ndarray  # per document: the highest rel of another document's sentence naming its title or entity
    doc_hop: np.ndarray  # per document: the earliest hop that retrieved it (0 when unknown)
    sub_entity: np.ndarray  # per sentence: contains the lead entity of the sub-query that retrieved it
    sub_coverage: np.ndarray  # per sentence: share of its sub-query's terms it contains


def _structure(problem: PackingProblem) -> _Structure:
    cands, doc = problem.candidates, problem.doc_index
    n = len(cands)
    relevance = problem.relevance
    top = relevance.max()
    rel = relevance / top if top > 0 else np.zeros(n)
    positions = np.fromiter((c.position for c in cands), dtype=np.int64, count=n)
    n_doc = int(doc.max()) + 1
    by_doc = np.lexsort((np.arange(n), positions, doc))  # grouped by document, in position order
    sorted_doc = doc[by_doc]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_doc[1:] != sorted_doc[:-1]
    starts = new_group.nonzero()[0]
    in_doc = np.empty(n)
    in_doc[by_doc] = np.arange(n) - starts.repeat(np.concatenate((starts[1:], [n])) - starts)
    first = np.full(n_doc, np.iinfo(np.int64).max)
    first[sorted_doc[starts]] = positions[by_doc[starts]]
    doc_rank = first.argsort(kind="stable").argsort(kind="stable")[doc]
    doc_best = np.zeros(n_doc)
    np.maximum.at(doc_best, doc, rel)
    doc_share = np.bincount(doc, weights=relevance, minlength=n_doc)
    total = doc_share.sum()
    if total > 0:
        doc_share /= total

    doc_list = doc.tolist()
    first_of = dict(zip(reversed(doc_list), range(n - 1, -1, -1)))  # document -> its first candidate
    titles = [_bare_title(cands[first_of[d]].source_key) if d in first_of else "" for d in range(n_doc)]
    contents = [c.content for c in cands]
    entities = [""] * n_doc
    for i in (in_doc == 0).nonzero()[0].tolist():
        entities[doc_list[i]] = _lead_entity(contents[i])
    by_sub: dict[str, list[int]] = {}  # sub-query (the question when unknown) -> its candidates
    for i, c in enumerate(cands):
        by_sub.setdefault(c.sub_query or problem.query, []).append(i)
    sub_entities = {sq: _sub_entity(sq, problem.query) for sq in by_sub}
    sentences = _Sentences.of(contents, {*titles, *entities, *sub_entities.values(),
                                         *_question_capitals(problem.query), *_head_words(problem.query)})
    links, bridge_out, title_named_rel = _link_matrix(titles, doc, rel, sentences)
    q_low = problem.query.lower()
    title_in_q = np.array([1.0 if t and t in q_low else 0.0 for t in titles])

    entity_links, entity_out, entity_named_rel = _link_matrix(entities, doc, rel, sentences)
    entity_in_q = np.array([1.0 if e and e in q_low else 0.0 for e in entities])
    named_by_rel = np.maximum(title_named_rel, entity_named_rel)  # the best rel of a sentence naming it, else 0
    named_by_rel[named_by_rel == -np.inf] = 0.0
    doc_hop = np.full(n_doc, np.iinfo(np.int64).max)
    hops = np.fromiter((c.hop or 0 for c in cands), dtype=np.int64, count=n)
    np.minimum.at(doc_hop, doc, hops)
    sub_entity = np.zeros(n)
    sub_coverage = np.zeros(n)
    for sq, members in by_sub.items():
        ent = sub_entities[sq]
        if ent:  # the sentences holding the entity the sub-query leads with
            sub_entity[list(set(sentences.holding(ent)).intersection(members))] = 1.0
        terms = tuple(dict.fromkeys(bm25_tokenize(sq)))  # share of the sub-query's bm25 terms among the sentence's
        if terms:
            sub_coverage[members] = term_incidence(terms, [sentences.lowered[i] for i in members]).sum(axis=1) / len(terms)
    return _Structure(rel, positions, doc_best, doc_share, doc_rank, in_doc, titles, contents, sentences,
                      links, bridge_out, title_in_q, entities, entity_links, entity_out, entity_in_q, named_by_rel,
                      doc_hop.astype(np.float64),
                      sub_entity, sub_coverage)


def _document_features(problem: PackingProblem, s: _Structure) -> dict[str, np.ndarray]:
    doc = problem.doc_index
    n_doc = len(s.titles)
    rank = np.zeros(n_doc, dtype=np.int64)
    rank[doc] = s.doc_rank
    lead_rel = np.zeros(n_doc)
    lead = s.in_doc == 0
    lead_rel[doc[lead]] = s.rel[lead]
    named_by = s.links.any(axis=0)  # some other document names d
    names = s.links.any(axis=1)
    tq = s.title_in_q.astype(bool)
    named_by_q = s.links[tq].any(axis=0)  # named by a document the question names (never itself)
    names_q = s.links[:, tq].any(axis=1)
    q_low = problem.query.lower()
    q_words = set(_WORD.findall(q_low))
    overlap = np.array([len(w & q_words) / max(1, len(w)) for w in map(_words, s.titles)])
    q_caps = _question_capitals(problem.query)
    caps = np.zeros(n_doc)  # per document: how many of q_caps a sentence of it contains (none spans a "\n")
    doc_list = doc.tolist()
    for w in q_caps:
        caps[list({doc_list[i] for i in s.sentences.holding(w)})] += 1.0
    caps /= max(1, len(q_caps))
    ent_named_by = s.entity_links.any(axis=0)
    eq = s.entity_in_q.astype(bool)
    ent_named_by_q = s.entity_links[eq].any(axis=0)
    doc_sub_entity = np.zeros(n_doc)
    np.maximum.at(doc_sub_entity, doc, s.sub_entity)
    doc_sub_cov = np.zeros(n_doc)
    np.maximum.at(doc_sub_cov, doc, s.sub_coverage)
    return {
        "rank_1": rank == 1,  # retrieval rank (0-based; rank 0 is the base)
        "rank_2": rank == 2,
        "rank_3": rank == 3,
        "rank_4+": rank >= 4,
        "best_relevance": s.doc_best,  # its best sentence's relevance / the problem's best
        "relevance_mass": s.doc_share,  # its share of the problem's total relevance
        "lead_relevance": lead_rel,  # its first sentence's relevance / the problem's best
        "named_by_other": named_by,  # its title occurs in another document's sentence
        "names_other": names,  # one of its sentences names another document's title
        "title_in_question": tq,
        "title_word_overlap": overlap,  # share of its title's words that are question words
        "question_capitals": caps,  # share of the question's capitalised words it contains
        "named_by_other_x_title_in_question": named_by & tq,
        "names_other_x_title_in_question": names & tq,
        "named_by_question_document": named_by_q,  # named by a document whose title the question names
        "names_question_document": names_q,  # names the title of a document the question names
        # title-free: the same links through each document's lead entity (see _lead_entity)
        "entity_named_by_other": ent_named_by,  # its lead entity occurs in another document's sentence
        "entity_names_other": s.entity_links.any(axis=1),  # names another document's lead entity
        "entity_in_question": s.entity_in_q,  # its lead entity occurs in the question
        "entity_named_by_question_document": ent_named_by_q,  # named by a document whose entity the question names
        "named_by_relevance": s.named_by_rel,  # relevance of the likeliest bridge: the best sentence naming it
        "hop_1": s.doc_hop == 1,  # retrieved first by the loop's first follow-up hop
        "hop_2+": s.doc_hop >= 2,
        "sub_query_entity": doc_sub_entity,  # a sentence holds the entity its sub-query leads with
        "sub_query_coverage": doc_sub_cov,  # its best sentence's share of its sub-query's terms
    }


def _sentence_features(problem: PackingProblem, s: _Structure, q: np.ndarray) -> dict[str, np.ndarray]:
    cands, doc = problem.candidates, problem.doc_index
    n = len(cands)
    n_doc = len(s.titles)
    relevance = problem.relevance
    rank = np.empty(n)
    rank[np.lexsort((np.arange(n), s.positions, -relevance))] = np.arange(n)
    terms = problem.incidence.shape[1]
    coverage = problem.incidence.sum(axis=1) / terms if terms else np.zeros(n)

    question = problem.query
    q_low = question.lower()
    when, how_many, who, where, comparison, which = _question_kind(question)
    q_capitals = _question_capitals(question)
    head = _head_words(question)
    in_q = q_low.__contains__
    n_q_capitals, n_head = max(1, len(q_capitals)), max(1, len(head))
    title_head = [t[:20] if t else None for t in s.titles]
    caps, numbers, has_year, pronoun, born = zip(*map(_parse, s.contents))
    new_caps = np.array([min(5, len(c) - 1 - sum(map(in_q, c[1:])) if c else 0) for c in caps]) / 5
    q_caps = np.array([len(q_capitals.intersection(c)) for c in caps]) / n_q_capitals
    new_number = np.array([not all(map(in_q, x)) for x in numbers], dtype=np.float64)
    digit = np.array([bool(x) for x in numbers], dtype=np.float64)
    has_year, pronoun, born = (np.array(x, dtype=np.float64) for x in (has_year, pronoun, born))
    starts_title = np.array([t is not None and low.startswith(t)
                             for t, low in zip(map(title_head.__getitem__, doc.tolist()), s.sentences.lowered)], dtype=np.float64)
    head_words = np.zeros(n)  # how many head words each sentence contains (a word never spans a "\n")
    for w in head:
        head_words[s.sentences.holding(w)] += 1.0
    head_words /= n_head
    lead = (s.in_doc == 0).astype(np.float64)
    bridge_in = s.links.any(axis=0)[doc].astype(np.float64)
    q_doc = q[doc]
    top_two = np.zeros(n_doc)
    top_two[(-q).argsort(kind="stable")[:2]] = 1.0
    not_in_q = 1.0 - s.title_in_q[doc]
    doc_rank = s.doc_rank
    wh = float(which or who)
    ent_in = s.entity_links.any(axis=0)[doc].astype(np.float64)
    return {
        "relevance": s.rel,  # relevance / max relevance
        "relevance_rank": 1.0 / (1.0 + rank),  # rank by relevance
        "doc_best": s.rel >= s.doc_best[doc],  # the best-scored sentence of its document
        "lead": lead,  # first sentence of its document
        "second": s.in_doc == 1,
        "doc_rank_1": doc_rank == 1,  # document retrieval rank (0-based; rank 0 is the base)
        "doc_rank_2": doc_rank == 2,
        "doc_rank_3": doc_rank == 3,
        "doc_rank_4+": doc_rank >= 4,
        "query_coverage": coverage,  # share of query content terms in the sentence
        "year_cue": has_year * when,  # a when/what-year question and a year in the sentence
        "number_cue": digit * how_many,  # a how-many/much/long/old question and a digit in the sentence
        "new_capitals": new_caps,  # capitalised words absent from the question (after the 1st word), /5 capped
        "bridge_out": s.bridge_out,  # names another candidate document's title
        "bridge_in": bridge_in,  # its document's title is named by another document's sentence
        "title_in_question": s.title_in_q[doc],
        "log_cost": np.log(np.maximum(problem.knapsack.item, 1)),  # log of the ledger cost
        "pronoun_start": pronoun,  # starts with He/She/It/They/His/Her/Its/Their/This/These
        "doc_mass": s.doc_share[doc],  # its document's share of the total relevance
        "new_number": new_number,  # a number absent from the question
        "question_capitals": q_caps,  # share of the question's capitalised words it contains
        "who_new_capitals": new_caps * who,
        "where_new_capitals": new_caps * where,  # on a where/which-city/country question
        "lead_of_top_doc": lead * (doc_rank == 0),
        "relevance_x_lead": s.rel * lead,
        "comparison_option": q_caps * comparison,  # question_capitals on an either/or or "both" question
        "bridge_in_lead": bridge_in * lead,
        "any_year": has_year,
        "starts_with_title": starts_title,  # begins with its document's title (first 20 characters)
        "born_on_who": born * who,  # a birth bracket ("(born", "(1909 – 1992)") on a who-question
        "head_words": head_words,  # share of the question's first content words (words 2-6) it contains
        "born": born,
        "doc_evidence": q_doc,  # q_d of its document
        "doc_top_two": top_two[doc],  # its document is among the two with the highest q_d
        "lead_x_doc_evidence": lead * q_doc,
        "lead_x_doc_evidence_title_not_in_question": lead * q_doc * not_in_q,
        "starts_with_title_x_doc_evidence_title_not_in_question": starts_title * q_doc * not_in_q,
        "doc_evidence_title_not_in_question": q_doc * not_in_q,
        "head_words_x_doc_evidence": head_words * q_doc,
        "lead_title_not_in_question_on_which_who": lead * not_in_q * wh,  # a which/what/who question's entity lead
        # title-free
        "entity_bridge_out": s.entity_out,  # names another candidate document's lead entity
        "entity_bridge_in": ent_in,  # its document's lead entity is named by another document
        "entity_in_question": s.entity_in_q[doc],  # its document's lead entity occurs in the question
        "lead_entity_not_in_question_on_which_who": lead * (1.0 - s.entity_in_q[doc]) * wh,
        "doc_hop_1": s.doc_hop[doc] == 1,
        "doc_hop_2+": s.doc_hop[doc] >= 2,
        "sub_query_entity": s.sub_entity,  # holds the entity its sub-query leads with
        "sub_query_coverage": s.sub_coverage,  # share of its sub-query's terms
    }


def _matrix(columns: Mapping[str, Any], names: tuple[str, ...], rows: int) -> np.ndarray:
    """Stack named feature columns in ``names`` order (``ValueError`` naming any missing feature)."""
    missing = [n for n in names if n not in columns]
    if missing:
        raise ValueError(f"evidence model names features the code does not compute: {missing}")
    out = np.empty((rows, len(names)))
    for j, name in enumerate(names):
        out[:, j] = columns[name]  # scalars and bool columns broadcast / cast here
    return out


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


@dataclass(frozen=True, slots=True, eq=False)
class EvidenceModel:
    """The two fitted models and the packing parameters, as read from one model file.

    ``document_weights`` / ``sentence_weights`` map feature names to weights (a name this
    module does not compute is a ``ValueError`` when the model is used); ``document_bias`` is the logistic intercept;
    ``provenance`` says what data, rows, command and date produced the weights. Build it with
    :meth:`load` (a JSON file; the shipped one by default) or directly for experiments.
    """

    document_weights: Mapping[str, float]
    document_bias: float
    sentence_weights: Mapping[str, float]
    params: EvidenceParams = EvidenceParams()
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for section in ("document_weights", "sentence_weights"):
            table = getattr(self, section)
            bad = [k for k, v in table.items() if not isinstance(v, (int, float)) or not np.isfinite(v)]
            if bad:
                raise ValueError(f"evidence model {section}: non-finite or non-numeric weights for {bad}")

    @classmethod
    def load(cls, path: str | Path | None = None) -> EvidenceModel:
        """Read a model file (format 1); ``None``: the shipped ``data/evidence_model.json``.

        Raises ``ValueError`` naming the file and the problem for a missing file, bad JSON,
        another format version or a missing key.
        """
        if path is None:
            return _shipped_model()
        where = str(path)
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{where}: cannot read the evidence model ({exc})") from None
        return cls.from_mapping(raw, source=where)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, source: str = "<mapping>") -> EvidenceModel:
        """Build from the decoded JSON of a model file (see :meth:`load`)."""
        try:
            if raw["format"] != MODEL_FORMAT:
                raise ValueError(f"format {raw['format']!r}, expected {MODEL_FORMAT}")
            return cls(
                document_weights=dict(raw["document"]["weights"]),
                document_bias=float(raw["document"]["bias"]),
                sentence_weights=dict(raw["sentence"]["weights"]),
                params=EvidenceParams(**raw.get("params", {})),
                provenance=dict(raw.get("provenance", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: not an evidence model file ({exc})") from None

    def to_mapping(self) -> dict[str, Any]:
        """The JSON-ready form :meth:`from_mapping` reads."""
        p = self.params
        return {
            "format": MODEL_FORMAT,
            "provenance": dict(self.provenance),
            "params": {"coverage": p.coverage, "price": p.price, "fill_evidence": p.fill_evidence,
                       "options_per_doc": p.options_per_doc,
                       "max_per_doc": p.max_per_doc, "max_cover_docs": p.max_cover_docs},
            "document": {"bias": self.document_bias, "weights": dict(self.document_weights)},
            "sentence": {"weights": dict(self.sentence_weights)},
        }

    def document_likelihood(self, columns: Mapping[str, Any], n_doc: int) -> np.ndarray:
        """``q_d`` from named document features, clipped to ``[1e-4, 1 - 1e-4]``."""
        names = tuple(self.document_weights)
        z = _matrix(columns, names, n_doc) @ np.array([self.document_weights[n] for n in names]) + self.document_bias
        return np.clip(1.0 / (1.0 + np.exp(-z)), _Q_CLIP, 1.0 - _Q_CLIP)

    def answer_shares(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """``p_i`` from named sentence features: a softmax over the problem's candidates."""
        names = tuple(self.sentence_weights)
        return _softmax(_matrix(columns, names, n) @ np.array([self.sentence_weights[k] for k in names]))

    def likelihoods(self, problem: PackingProblem) -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)``: per-candidate answer shares and per-document evidence likelihoods."""
        s = _structure(problem)
        q = self.document_likelihood(_document_features(problem, s), len(s.titles))
        return self.answer_shares(_sentence_features(problem, s, q), len(problem.candidates)), q


@functools.cache
def _shipped_model() -> EvidenceModel:
    ref = resources.files("rootweaver_innovations") / "data" / MODEL_FILE
    with resources.as_file(ref) as path:
        return EvidenceModel.load(path)


def document_features(problem: PackingProblem) -> dict[str, np.ndarray]:
    """The problem's document features by name, each a column over its documents (``doc_index`` order)."""
    if not problem.candidates:
        return {}
    return _document_features(problem, _structure(problem))


def document_likelihood(problem: PackingProblem, model: EvidenceModel | None = None) -> np.ndarray:
    """Each document's modelled probability of being needed evidence (the shipped model by default)."""
    if not problem.candidates:
        return np.zeros(0)
    s = _structure(problem)
    return (model or _shipped_model()).document_likelihood(_document_features(problem, s), len(s.titles))


def evidence_features(problem: PackingProblem, doc_likelihood: np.ndarray) -> dict[str, np.ndarray]:
    """The problem's sentence features by name, each a column over its candidates.

    ``doc_likelihood`` is ``q_d`` per document (``doc_index`` order), from a model's
    :meth:`EvidenceModel.document_likelihood` (the fitting script passes its own).
    """
    if not problem.candidates:
        return {}
    return _sentence_features(problem, _structure(problem), doc_likelihood)


def answer_likelihood(problem: PackingProblem, model: EvidenceModel | None = None) -> np.ndarray:
    """Each candidate's modelled share of "holds the answer" (non-negative, sums to 1)."""
    if not problem.candidates:
        return np.zeros(0)
    return (model or _shipped_model()).likelihoods(problem)[0]


@functools.lru_cache(maxsize=16)
def _option_slots(options_per_doc: int, max_per_doc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A document's knapsack options over its ``options_per_doc + 1`` member places, as
    ``(first, second, single)`` arrays (read-only): each place alone, then (``max_per_doc`` 2)
    each pair of places in order; ``first`` is an option's place, ``second`` its pair's second
    place (0 for a single) and ``single`` whether it has one place only."""
    places = range(options_per_doc + 1)
    pairs = list(combinations(places, 2)) if max_per_doc == 2 else []
    first = np.array([*places, *(i for i, _ in pairs)], dtype=np.int64)
    second = np.array([0 for _ in places] + [j for _, j in pairs], dtype=np.int64)
    single = np.arange(len(first)) < len(places)
    for slots in (first, second, single):
        slots.flags.writeable = False
    return first, second, single


def _cover(p: np.ndarray, bonus: np.ndarray, problem: PackingProblem, params: EvidenceParams) -> list[int]:
    """Exact multiple-choice knapsack: at most one option per document, most total value within capacity.

    A document's members are its ``options_per_doc`` best candidates by ``p`` and its cheapest
    (the first in ``p`` order among the cheapest) when that is not among them; its options
    are each member alone, then (``max_per_doc`` 2) each pair of members in member order,
    an option of ``k`` candidates worth ``bonus[d] + sum(p) - k * price``. On equal value the
    earlier option, and not taking the document at all, win. Only the ``max_cover_docs``
    documents with the largest bonus (ties: lower index) take part.

    Memory: the DP table spans the capacity any packing of these options can use (the
    budget, or the sum of each document's dearest option when that is less: the same
    answer). When that table would pass :data:`_COVER_DP_BYTES` (a budget of 1,000,000
    chars took 1 GB), costs are rounded up to a coarser unit first so it fits: the
    packing is then exact on the rounded costs and never over the budget.
    """
    cost = problem.knapsack.item
    cap = int(problem.knapsack.capacity)
    doc = problem.doc_index
    n = len(doc)
    if len(bonus) > params.max_cover_docs:
        keep = np.zeros(len(bonus), dtype=bool)
        keep[(-bonus).argsort(kind="stable")[: params.max_cover_docs]] = True
        among = keep[doc].nonzero()[0]
    else:
        among = np.arange(n)
    grouped = among[np.lexsort((among, -p[among], doc[among]))]  # by document, then p descending
    m = len(grouped)
    grouped_doc = doc[grouped]
    starts = np.concatenate(([True], grouped_doc[1:] != grouped_doc[:-1])).nonzero()[0]
    n_groups = len(starts)
    size = np.concatenate((starts[1:], [m])) - starts
    group_of = np.arange(n_groups).repeat(size)
    rank = np.arange(m) - starts[group_of]  # place in its document's p order
    g_cost, g_p = cost[grouped], p[grouped]
    cheapest = np.minimum.reduceat(np.where(g_cost == np.minimum.reduceat(g_cost, starts)[group_of], np.arange(m), m),
                                   starts)
    opts = params.options_per_doc
    members = np.full((n_groups, opts + 1), -1)  # per document: positions in `grouped`, -1 pads
    best = rank < opts
    members[group_of[best], rank[best]] = best.nonzero()[0]
    extra = rank[cheapest] >= opts
    members[extra, opts] = cheapest[extra]
    # Option slots per document (see _option_slots); a slot whose member is padding is invalid
    first, second, single = _option_slots(opts, params.max_per_doc)
    a, b = members[:, first], np.where(single, -1, members[:, second])
    valid = (a >= 0) & (single | (b >= 0))
    bonus_r = bonus[grouped_doc[starts]][:, None]
    a_cost, a_p = g_cost[a], g_p[a]
    opt_cost = np.where(single, a_cost, a_cost + g_cost[b])
    opt_value = np.where(single, bonus_r + a_p - params.price, bonus_r + (a_p + g_p[b]) - 2 * params.price)
    # Document r's DP rows, rows[r]:rows[r + 1] of `shift` and `gain`: leaving it out, then each valid
    # option except those worth less than nothing that cost something. An invalid option would only
    # repeat leaving the document out; one worth < 0 is never on the packing the backtracking finds:
    # the same packing without it is worth at least as much (float sums are monotone) in less
    # capacity, which the first argmax prefers. shift indexes `window[r]`: window[r, cap + 1 - c][w] = hist[r, w - c]
    live = np.column_stack((np.ones(n_groups, dtype=bool), valid & ((opt_value >= 0) | (opt_cost < 1))))
    cap, opt_cost = _dp_capacity(cap, opt_cost, live[:, 1:], n_groups)
    shift = np.column_stack((np.full(n_groups, cap + 1), cap + 1 - np.minimum(opt_cost, cap + 1)))[live]
    gain = np.column_stack((np.zeros(n_groups), opt_value))[live][:, None]
    rows = [0, *accumulate(live.sum(axis=1).tolist())]
    # hist[r, cap + 1 + w]: most value over the documents before r at used capacity w; -inf absorbs w < 0
    hist = np.full((n_groups + 1, 2 * (cap + 1)), -np.inf)
    hist[0, cap + 1] = 0.0
    cell = hist.itemsize
    window = np.ndarray((n_groups + 1, cap + 2, cap + 1), hist.dtype, hist, strides=(hist.strides[0], cell, cell))
    shift_at, gain_at = shift.tolist(), gain.ravel().tolist()
    for r in range(n_groups):
        lo, hi = rows[r], rows[r + 1]
        if hi - lo == 1:  # only leaving it out (adding 0.0 would change nothing: no cell holds -0.0)
            hist[r + 1] = hist[r]
        elif hi - lo == 2:  # leaving it out or its one option: the same maximum, from a slice instead of a gather
            np.maximum(hist[r, cap + 1:], window[r, shift_at[lo + 1]] + gain_at[lo + 1], out=hist[r + 1, cap + 1:])
        else:
            value = window[r, shift[lo:hi]]  # a copy
            value += gain[lo:hi]
            np.maximum.reduce(value, axis=0, out=hist[r + 1, cap + 1:])
    w = int(hist[n_groups, cap + 1:].argmax())
    chosen: list[int] = []
    at_w = hist[:, cap + 1 + w].tolist()  # every row's value at capacity w
    for r in range(n_groups - 1, -1, -1):
        if at_w[r + 1] > at_w[r]:  # this document's best option improved capacity w: it was taken
            row = hist[r, cap + 1:]
            costs = opt_cost[r].tolist()
            option = [row[w - c] + v if ok and c <= w else -np.inf
                      for c, v, ok in zip(costs, opt_value[r].tolist(), valid[r].tolist())]
            k = option.index(max(option))  # the first best option, as argmax over the options picks it
            chosen.extend(grouped[[a[r, k]] if single[k] else [a[r, k], b[r, k]]].tolist())
            w -= costs[k]
            at_w = hist[:, cap + 1 + w].tolist()
    return chosen


_COVER_DP_BYTES = 64 << 20  # the cover's DP table (float64, documents x twice the capacity) at most


def _dp_capacity(cap: int, opt_cost: np.ndarray, live: np.ndarray, n_groups: int) -> tuple[int, np.ndarray]:
    """``(capacity, option costs)`` for the cover's DP (see :func:`_cover`): the capacity no
    packing can pass, and, when the table would be over :data:`_COVER_DP_BYTES`, both in
    units of ``scale`` (costs rounded up, the capacity down)."""
    span = int(min(cap, np.where(live, opt_cost, 0).max(axis=1, initial=0).sum()))
    scale = -(-(n_groups + 1) * 2 * (span + 1) * 8 // _COVER_DP_BYTES)
    if scale <= 1:
        return span, opt_cost
    opt_cost = -(-opt_cost // scale)
    return int(min(cap // scale, np.where(live, opt_cost, 0).max(axis=1, initial=0).sum())), opt_cost


def evidence_policy(problem: PackingProblem, model: EvidenceModel | None = None) -> Selection:
    """Pack ``problem`` (see the module docstring) with ``model`` (the shipped one by default).

    Gains are the answer shares ``p``.
    """
    model = model or _shipped_model()
    params = model.params
    knap = problem.knapsack
    knap.reset()
    n = len(problem.candidates)
    if n == 0:
        return Selection((), ())
    p, q = model.likelihoods(problem)
    if n <= problem.cap and int(knap.item.sum() + knap.group_cost.sum()) <= knap.capacity:
        return Selection(tuple(range(n)), tuple(float(x) for x in p))
    by_score = np.lexsort((np.arange(n), -p))
    chosen = set(_cover(p, params.coverage * q, problem, params))
    fill = np.lexsort((np.arange(n), -(p + params.fill_evidence * q[problem.doc_index])))
    order: list[int] = []
    taken: set[int] = set()
    marginal = knap.marginal().tolist()
    for i in chain([i for i in by_score.tolist() if i in chosen], fill.tolist()):  # the cover, then the fill
        if len(order) == problem.cap:
            break
        if i not in taken and knap.used + marginal[i] <= knap.capacity:
            knap.take(i)
            taken.add(i)
            order.append(i)
            marginal = knap.marginal().tolist()  # a header paid makes its other candidates cheaper
    p_of = p.tolist()
    return Selection(tuple(order), tuple(p_of[i] for i in order))


register_policy("evidence", evidence_policy)
