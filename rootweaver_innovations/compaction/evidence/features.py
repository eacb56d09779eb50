"""Named features of a packing problem's documents and sentences, what the evidence model reads.

Pure functions of a problem (:class:`EvidenceProblem`: what every packing policy sees, texts,
titles, relevance, document order, the question, never a label); :class:`ProblemFeatures`
parses a problem once and gives its two feature tables by name:

- **document** features (:meth:`ProblemFeatures.documents`, one column over the documents in
  ``doc_index`` order): retrieval rank, relevance, title links (its title is named by another
  document, it names another's title, *second-order* links through a document whose title
  the question names) and the question's words, and the same links without titles: each
  document's *lead entity* (the capitalised name its first sentence opens with,
  :func:`~rootweaver_innovations.compaction.evidence.cues.lead_entity`) named by another document or by the question, how relevant the
  sentence that names it (by title or lead entity) is, the hop that retrieved it and how well
  it matches the sub-query of that hop (``hop`` / ``sub_query`` of its candidates), so
  documents with opaque ids keep most of the signal;
- **sentence** features (:meth:`ProblemFeatures.sentences`, one column over the candidates):
  relevance, lead / second sentence of its document (a Wikipedia paragraph's first sentence
  names its entity), answer-type cues (years for *when*, numbers for *how many*, birth
  brackets for *who*), new capitalised words, title and lead-entity links, its hop and share
  of its sub-query's terms, the question's head words, cost and its document's evidence
  likelihood ``q_d`` (given, from a document model).

Features that look at wording read a candidate's ``content`` (its bare sentence); its title
is its ``source_key`` (``source`` when set, else ``doc_id``). Shared text knowledge (stop
words, the word pattern, BM25 tokens) comes from :mod:`rootweaver_innovations.text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rootweaver_innovations.compaction.evidence import cues
from rootweaver_innovations.compaction.evidence.links import Sentences, link_matrix, term_incidence
from rootweaver_innovations.text import WORD, bm25_tokenize

__all__ = ["CostLedger", "EvidenceCandidate", "EvidenceProblem", "ProblemFeatures", "term_incidence"]

class EvidenceCandidate(Protocol):
    """What the features read of a candidate (:class:`~rootweaver_innovations.compaction.packing.Candidate` is one)."""

    @property
    def content(self) -> str: ...  # the bare sentence
    @property
    def source_key(self) -> str: ...  # the title: ``source``, else ``doc_id``
    @property
    def position(self) -> int: ...  # its 0-based place in the source order
    @property
    def hop(self) -> int | None: ...  # the loop iteration that retrieved it
    @property
    def sub_query(self) -> str | None: ...  # the query that hop issued
    @property
    def id_title(self) -> bool: ...  # its document is titled by an id (the title is then its subject)


class CostLedger(Protocol):
    """The cost side of a problem: ``item[i]`` is candidate i's cost in the budget's unit."""

    @property
    def item(self) -> np.ndarray: ...


class EvidenceProblem(Protocol):
    """What the features read of a problem (:class:`~rootweaver_innovations.compaction.packing.PackingProblem` is one).

    ``relevance`` and ``doc_index`` are per candidate (documents numbered ``0..n_doc - 1``),
    ``incidence`` is ``bool[n, T]``: which of the query's ``T`` content terms each candidate holds.
    """

    @property
    def candidates(self) -> Sequence[EvidenceCandidate]: ...
    @property
    def query(self) -> str: ...
    @property
    def relevance(self) -> np.ndarray: ...
    @property
    def doc_index(self) -> np.ndarray: ...
    @property
    def incidence(self) -> np.ndarray: ...
    @property
    def knapsack(self) -> CostLedger: ...


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
    sentences: Sentences  # the contents lowercased, for substring search
    links: np.ndarray  # (n_doc, n_doc) bool: document j has a sentence naming document k's title
    bridge_out: np.ndarray  # per sentence: names another document's title
    title_in_q: np.ndarray  # per document
    entities: list[str]  # per document: the lead entity of its first sentence (see cues.lead_entity)
    entity_links: np.ndarray  # (n_doc, n_doc) bool: document j has a sentence naming document k's entity
    entity_out: np.ndarray  # per sentence: names another document's lead entity
    entity_in_q: np.ndarray  # per document: its lead entity occurs in the question
    named_by_rel: np.ndarray  # per document: the highest rel of another document's sentence naming its title or entity
    doc_hop: np.ndarray  # per document: the earliest hop that retrieved it (0 when unknown)
    sub_entity: np.ndarray  # per sentence: contains the lead entity of the sub-query that retrieved it
    sub_coverage: np.ndarray  # per sentence: share of its sub-query's terms it contains


def _structure(problem: EvidenceProblem) -> _Structure:
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
    titles = [cues.bare_title(cands[first_of[d]].source_key) if d in first_of else "" for d in range(n_doc)]
    contents = [c.content for c in cands]
    entities = [""] * n_doc
    for i in (in_doc == 0).nonzero()[0].tolist():
        entities[doc_list[i]] = cues.lead_entity(contents[i])
    by_sub: dict[str, list[int]] = {}  # sub-query (the question when unknown) -> its candidates
    for i, c in enumerate(cands):
        by_sub.setdefault(c.sub_query or problem.query, []).append(i)
    sub_entities = {sq: cues.sub_entity(sq, problem.query) for sq in by_sub}
    sentences = Sentences.of(contents, {*titles, *entities, *sub_entities.values(),
                                         *cues.question_capitals(problem.query), *cues.head_words(problem.query)})
    links, bridge_out, title_named_rel = link_matrix(titles, doc, rel, sentences)
    q_low = problem.query.lower()
    title_in_q = np.array([1.0 if t and t in q_low else 0.0 for t in titles])

    entity_links, entity_out, entity_named_rel = link_matrix(entities, doc, rel, sentences)
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


def _document_features(problem: EvidenceProblem, s: _Structure) -> dict[str, np.ndarray]:
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
    q_words = set(WORD.findall(q_low))
    overlap = np.array([len(w & q_words) / max(1, len(w)) for w in map(cues.words, s.titles)])
    q_caps = cues.question_capitals(problem.query)
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
        # title-free: the same links through each document's lead entity (see cues.lead_entity)
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


def _sentence_features(problem: EvidenceProblem, s: _Structure, q: np.ndarray) -> dict[str, np.ndarray]:
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
    when, how_many, who, where, comparison, which = cues.question_kind(question)
    q_capitals = cues.question_capitals(question)
    head = cues.head_words(question)
    in_q = q_low.__contains__
    n_q_capitals, n_head = max(1, len(q_capitals)), max(1, len(head))
    title_head = [t[:20] if t else None for t in s.titles]
    caps, numbers, has_year, pronoun, born = zip(*map(cues.parse, s.contents))
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
        "born_on_who": born * who,  # a life-dates bracket (cues.parse) on a who-question
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


class ProblemFeatures:
    """One problem's document and sentence features by name, from one parse of the problem.

    ``ProblemFeatures(problem)`` needs a problem with at least one candidate (else
    ``ValueError``). Every column is a numpy array (bool or float) over the documents
    (:meth:`documents`, ``n_documents`` long) or the candidates (:meth:`sentences`).
    """

    __slots__ = ("_problem", "_structure")

    def __init__(self, problem: EvidenceProblem) -> None:
        if not problem.candidates:
            raise ValueError("an evidence problem needs at least one candidate")
        self._problem = problem
        self._structure = _structure(problem)

    @property
    def n_documents(self) -> int:
        """How many documents the problem's candidates come from."""
        return len(self._structure.titles)

    def documents(self) -> dict[str, np.ndarray]:
        """The document features by name, each a column over the documents (``doc_index`` order)."""
        return _document_features(self._problem, self._structure)

    def sentences(self, doc_likelihood: np.ndarray) -> dict[str, np.ndarray]:
        """The sentence features by name, each a column over the candidates.

        ``doc_likelihood`` is ``q_d`` per document (``doc_index`` order), from a document
        model (:meth:`~rootweaver_innovations.compaction.evidence.EvidenceModel.document_likelihood`).
        """
        return _sentence_features(self._problem, self._structure, doc_likelihood)
