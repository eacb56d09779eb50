"""The default hop policy of the multi-hop loop: title links, bridge entities, a passage budget.

No LLM, no labels, deterministic. Three parts:

- :class:`TitleIndex`, built once over the corpus beside the retriever: every passage
  title under its normalised keys (lowercase ``\\w+`` tokens of the title, of the title
  without a parenthesised qualifier, and of the part before the first comma), and
  :meth:`TitleIndex.mentions`, the titles a text mentions (a span of the text whose tokens
  equal a key). Opaque titles (ids) simply never match anything.
- :class:`HopSchedule` / :class:`HopPolicyParams`: how many passages the first hop takes
  and how the bridge beam is ordered, per passage budget, fitted on the even dev rows and
  loaded from ``data/hop_policy.json`` (provenance inside).
- :func:`plan_bridges`: after the first hop, the ordered next sub-queries, each with the
  reason it was chosen and the passages its entity names exactly (the title index).

Why hops are chosen in this order (measured on the even HotpotQA / 2Wiki / MuSiQue rows):
an entity of the question that is a passage title is evidence by itself (comparison
questions need one passage per compared entity); a title mentioned in a first-hop passage
(or in the passage of an entity the question names) is the strongest bridge evidence,
ranked by the BM25 score of the linked passage for the question plus the linking
passage's lead sentences, relative to the linking passage's own; a proper-noun span of a
first-hop passage (no title needed, so it also works for opaque titles) is the next,
ranked by how many question terms its sentence shares.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import islice
from pathlib import Path

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.retrieval.retrievers import Retriever
from rootweaver_innovations.text import bm25_tokenize, entity_spans
from rootweaver_innovations.retrieval.titles import Mention, TitleIndex, key_of, passage_keys, title_keys

__all__ = [
    "POLICY_FILE",
    "REASON_COMPARISON",
    "REASON_FILL",
    "REASON_FILL_NAMED",
    "REASON_NAMED",
    "REASON_QUESTION",
    "REASON_QUESTION_ENTITY",
    "REASON_SPAN",
    "REASON_TITLE_LINK",
    "HopPolicyParams",
    "HopSchedule",
    "Mention",
    "Proposal",
    "Ranking",
    "TitleIndex",
    "entity_spans",
    "load_hop_policy",
    "plan_bridges",
    "ranking_of",
    "title_keys",
]

POLICY_FILE = Path(__file__).resolve().parents[1] / "data" / "hop_policy.json"

REASON_QUESTION = "question"
REASON_COMPARISON = "comparison entity"
REASON_QUESTION_ENTITY = "question names a title"
REASON_TITLE_LINK = "title linked from hop 1"
REASON_NAMED = "question names the {kind} {label!r}"
REASON_SPAN = "entity in hop 1"
REASON_FILL = "question, next best passages"
REASON_FILL_NAMED = "question, next best passages, in turn from the named sources and days and from all"

@dataclass(frozen=True, slots=True)
class HopSchedule:
    """How one passage budget is spent.

    ``first_hop`` passages for the question; then the bridge beam, one passage per hop:
    the compared entities, up to ``question_links`` titles named in the question (best
    BM25 score for the question first), then ``title_links`` title-linked candidates, ``spans``
    entity spans, then the remaining candidates of both kinds; links are scored by BM25
    of the question plus ``lead_sentences`` of the passage mentioning them, relative to
    that passage's own score (a retriever that cannot score given passages: its top
    ``link_depth`` results, relative to the best); the question's ranking is ``link_depth``
    deep; spans come from the best ``span_sources`` first-hop passages.
    """

    first_hop: int
    question_links: int
    title_links: int
    spans: int
    span_sources: int
    lead_sentences: int
    link_depth: int


@dataclass(frozen=True, slots=True)
class HopPolicyParams:
    """Schedules by passage budget plus the provenance of the fit (see ``data/hop_policy.json``)."""

    schedules: tuple[tuple[int, HopSchedule], ...]  # (budget, schedule), ascending budget
    provenance: dict

    def for_budget(self, max_passages: int) -> HopSchedule:
        """The schedule of the largest fitted budget <= ``max_passages`` (the smallest one below all)."""
        fitting = [s for b, s in self.schedules if b <= max_passages]
        return fitting[-1] if fitting else self.schedules[0][1]

    @classmethod
    def from_mapping(cls, data: dict) -> HopPolicyParams:
        """Parse the JSON payload; ``ValueError`` on a missing or malformed schedule."""
        try:
            schedules = tuple(sorted((int(b), HopSchedule(**s)) for b, s in data["schedules"].items()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed hop policy: {exc}") from None
        if not schedules or any(b < 1 or s.first_hop < 1 for b, s in schedules):
            raise ValueError("hop policy needs schedules with budget >= 1 and first_hop >= 1")
        return cls(schedules, dict(data.get("provenance", {})))


@lru_cache(maxsize=4)
def load_hop_policy(path: Path = POLICY_FILE) -> HopPolicyParams:
    """The fitted hop policy shipped with the package (read once per path)."""
    return HopPolicyParams.from_mapping(json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass(frozen=True, slots=True)
class Ranking:
    """A retriever's best passages for one query, best first: each one's row in the title
    index's passages (-1 for one outside them) and its score; ``read(i)`` reads the ``i``-th
    passage only when called (from a saved index, reading is most of a search's cost)."""

    rows: tuple[int, ...]
    scores: tuple[float, ...]
    read: Callable[[int], Passage]

    def __len__(self) -> int:
        return len(self.rows)

    def unseen(self, seen: Container[str], k: int) -> list[tuple[int, Passage]]:
        """``(row, passage)`` of the first ``k`` passages whose ids are not in ``seen``, best
        first (reading no further)."""
        read = ((self.rows[i], self.read(i)) for i in range(len(self.rows)))
        return list(islice(((row, p) for row, p in read if p.id not in seen), k))


def ranking_of(retriever: Retriever, index: TitleIndex, query: str, k: int,
               within: np.ndarray | None = None) -> Ranking:
    """The :class:`Ranking` of ``retriever.search(query, k)``. A retriever that ranks rows of
    the title index's own passages (``top_rows``, e.g. a saved index's BM25) reads none;
    any other is searched and its hits mapped to rows by id. Each passage is read at most once
    (the first hop and the fill both walk the question's ranking from the top). ``within``
    (ascending rows) keeps the ranking to those rows; only a retriever that ranks rows can,
    any other gives an empty ranking then."""
    top_rows = getattr(retriever, "top_rows", None)
    if top_rows is not None and getattr(retriever, "passages", None) is index.passages:
        rows, scores = top_rows(query, k) if within is None else top_rows(query, k, within)
        return Ranking(tuple(rows), tuple(scores), cache(lambda i: index.passages[rows[i]]))
    if within is not None:
        return Ranking((), (), lambda i: index.passages[i])
    hits = retriever.search(query, k)
    return Ranking(tuple(index.row_of(h.passage.id) for h in hits), tuple(h.score for h in hits),
                   lambda i: hits[i].passage)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A next hop: its sub-query, why it was chosen, and ``(row, passage)`` of the passages
    its entity names (rows of the title index)."""

    sub_query: str
    reason: str
    pages: tuple[tuple[int, Passage], ...] = ()


def _unresolved(question_terms: Sequence[str], known: set[str]) -> list[str]:
    return [t for t in dict.fromkeys(question_terms) if t not in known]


def _link_values(retriever: Retriever, index: TitleIndex, query: str, source: int,
                 rows: Sequence[int], depth: int) -> dict[int, float]:
    """Each linked passage's (``rows``) BM25 score for the link ``query`` relative to that
    of the passage at row ``source``, which links them (its lead sentences are in the query).

    A retriever that scores rows of the title index's own passages (``row_scores``, BM25)
    scores just these rows and ``source``; any other is searched ``depth`` deep, a row
    outside its hits counts 0, and its best hit stands in for ``source``. A normaliser
    <= 0 counts as 1.
    """
    row_scores = getattr(retriever, "row_scores", None)
    if row_scores is not None and getattr(retriever, "passages", None) is index.passages:
        top, *scores = row_scores(query, [source, *rows])
        score = dict(zip(rows, scores))
    else:
        hits = ranking_of(retriever, index, query, depth)
        score = dict(zip(hits.rows, hits.scores))
        top = hits.scores[0] if hits.scores else 0.0
    top = top if top > 0 else 1.0
    return {row: score.get(row, 0.0) / top for row in rows}


def _query(entity: str, terms: Sequence[str]) -> str:
    return " ".join([entity, *terms])


def plan_bridges(
    question: str,
    first_hop: Sequence[tuple[int, Passage]],
    ranking: Ranking,
    retriever: Retriever,
    index: TitleIndex,
    schedule: HopSchedule,
    conventions: Conventions,
) -> list[Proposal]:
    """The ordered bridge sub-queries after the first hop (see the module docstring).

    ``first_hop`` is ``(row, passage)`` of what hop 1 read: the head of ``ranking``, the
    retriever's ranking for the question, then any records hop 1 pulled beside them.
    ``ranking`` is ``schedule.link_depth`` deep; it orders the titles the question names.

    Title links are read from the first-hop passages and from the passages the compared
    and question-named entities point to (which the head of the plan will take).
    Every proposal's sub-query is its entity plus the question terms (BM25 tokens) that
    the entity's own passage or sentence does not already hold. An entity whose every
    passage hop 1 took is not proposed again; duplicates keep their first place.
    """
    q_terms = bm25_tokenize(question)
    q_lower = question.lower()
    seen_ids = {p.id for _, p in first_hop}
    head: list[Proposal] = []
    named_sources: list[tuple[int, Passage]] = []  # (row, passage) of the first page of each head hop

    def unseen_pages(key: str) -> list[tuple[int, Passage]]:
        """``(row, passage)`` of the passages titled under ``key`` that hop 1 did not take."""
        return [(row, p) for row in index.rows(key) if (p := index.passages[row]).id not in seen_ids]

    used: set[str] = {k for _, p in first_hop for k in passage_keys(p, conventions) if not unseen_pages(k)}

    def entity_proposal(name: str, reason: str) -> None:
        key = key_of(name)
        if not key or key in used:
            return
        used.add(key)
        unseen = unseen_pages(key)
        named_sources.extend(unseen[:1])
        head.append(Proposal(_query(name, _unresolved(q_terms, set(key.split()))), reason, tuple(unseen)))

    for name in conventions.compared_entities(question) or ():
        entity_proposal(name, REASON_COMPARISON)
    q_rank: dict[int, int] = {}
    for r, row in enumerate(ranking.rows[: schedule.link_depth]):
        q_rank.setdefault(row, r)
    q_rank.pop(-1, None)
    depth = min(len(ranking), schedule.link_depth)
    named = [m for m in index.mentions(question, proper_only=False)
             if any(p.id not in seen_ids for p in index.pages(m.key))]
    named.sort(key=lambda m: min(q_rank.get(row, depth) for row in index.rows(m.key)))
    for m in named[: schedule.question_links]:
        entity_proposal(m.surface, REASON_QUESTION_ENTITY)

    links: dict[str, tuple[float, Proposal]] = {}
    for source_row, source in [*first_hop, *named_sources]:  # named: what the head hops take
        linked = [(m, unseen) for m in index.mentions(source.text)
                  if m.key not in used and (unseen := unseen_pages(m.key))]
        if not linked:  # nothing to score: no link query
            continue
        values = _link_values(retriever, index, _query(question, source.sentences[: schedule.lead_sentences]),
                              source_row, [row for _, unseen in linked for row, _ in unseen], schedule.link_depth)
        known = set(bm25_tokenize(source.text))
        for m, unseen in linked:
            value = max(values[row] for row, _ in unseen)
            if m.key not in links or value > links[m.key][0]:
                sub_query = _query(m.surface, _unresolved(q_terms, known))
                links[m.key] = (value, Proposal(sub_query, REASON_TITLE_LINK, tuple(unseen)))
    ranked_links = [p for _, p in sorted(links.values(), key=lambda vp: -vp[0])]  # stable: first mention wins ties
    used.update(links)

    spans: list[tuple[int, int, int, Proposal]] = []
    for rank, (_, source) in enumerate(first_hop[: schedule.span_sources]):
        for j, sentence in enumerate(source.sentences):
            known = set(bm25_tokenize(sentence))
            overlap = len(known.intersection(q_terms))
            for span in entity_spans(sentence):
                key = key_of(span)
                if not bm25_tokenize(span) or span.lower() in q_lower or key in used:
                    continue
                used.add(key)
                spans.append((-overlap, rank, j, Proposal(_query(span, _unresolved(q_terms, known)), REASON_SPAN)))
    ranked_spans = [p for *_, p in sorted(spans, key=lambda s: s[:3])]
    return [
        *head,
        *ranked_links[: schedule.title_links],
        *ranked_spans[: schedule.spans],
        *ranked_links[schedule.title_links :],
        *ranked_spans[schedule.spans :],
    ]
