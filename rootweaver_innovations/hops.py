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
ranked by BM25 of the question plus that passage's lead sentences; a proper-noun span of a first-hop passage (no title needed, so it also works for
opaque titles) is the next, ranked by how many question terms its sentence shares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .corpus import Passage
from .retrieval import Retriever
from .text import LEADING_WORDS, STOP_WORDS, WORD, bm25_tokenize, entity_spans

__all__ = [
    "POLICY_FILE",
    "REASON_COMPARISON",
    "REASON_FILL",
    "REASON_QUESTION",
    "REASON_QUESTION_ENTITY",
    "REASON_SPAN",
    "REASON_TITLE_LINK",
    "HopPolicyParams",
    "HopSchedule",
    "Mention",
    "Proposal",
    "TitleIndex",
    "comparison_entities",
    "entity_spans",
    "load_hop_policy",
    "plan_bridges",
    "title_keys",
]

POLICY_FILE = Path(__file__).resolve().parent / "data" / "hop_policy.json"

REASON_QUESTION = "question"
REASON_COMPARISON = "comparison entity"
REASON_QUESTION_ENTITY = "question names a title"
REASON_TITLE_LINK = "title linked from hop 1"
REASON_SPAN = "entity in hop 1"
REASON_FILL = "question, next best passages"

_PAREN = re.compile(r"\s*\([^)]*\)")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
def comparison_entities(question: str) -> tuple[str, str] | None:
    """The two compared entities of "..., X or Y?" / "Are X and Y ...?" questions, else ``None``."""
    question = " ".join(question.split())
    head, sep, tail = question.rstrip("?").rpartition(" or ")
    if sep:
        left = entity_spans(head.rpartition(",")[2], skip_initial=False)
        right = entity_spans(tail, skip_initial=False)
        if left and right and tail[:1].isupper():
            return left[-1], right[0]
    m = re.match(r"^(?:Between|Are|Were|Is|Was|Do|Did)\s+(.+?)\s+and\s+(.+)$", question.rstrip("?"))
    if m:
        left = entity_spans(m.group(1), skip_initial=False)
        right = entity_spans(m.group(2), skip_initial=False)
        if left and right and m.group(2)[:1].isupper():
            return left[0], right[0]
    return None


def _key(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def title_keys(title: str) -> tuple[str, ...]:
    """Normalised keys of a title: whole, without "(qualifier)", before the first comma, and
    that without a leading article.

    A key needs 4+ characters and a token that is not a stop word.
    """
    bare = _PAREN.sub("", title).strip()
    out = []
    for variant in (title, bare, bare.split(",")[0], _ARTICLE.sub("", bare.split(",")[0])):
        key = _key(variant)
        if len(key) >= 4 and any(t not in STOP_WORDS for t in key.split()) and key not in out:
            out.append(key)
    return tuple(out)


def _capital(text: str, at: int) -> bool:
    return text[at].isupper() or text[at].isdigit()


def _inside_longer_name(text: str, words: Sequence[re.Match], start: int, end: int) -> bool:
    """Whether words ``start:end`` are only part of a longer capitalised name: the word
    right after them, or the one right before them (not "The"), is capitalised with only
    spaces in between."""
    if end < len(words) and not text[words[end - 1].end() : words[end].start()].strip() and \
            _capital(text, words[end].start()):
        return True
    if start > 0 and not text[words[start - 1].end() : words[start].start()].strip() and \
            _capital(text, words[start - 1].start()) and words[start - 1].group(0) not in LEADING_WORDS:
        return True
    return False


@dataclass(frozen=True, slots=True)
class Mention:
    """A title key found in a text: the key and the text's own words for it."""

    key: str
    surface: str


class TitleIndex:
    """Normalised passage titles -> passages (corpus order), and title mentions in a text."""

    def __init__(self, passages: Sequence[Passage]):
        pages: dict[str, list[Passage]] = {}
        for p in passages:
            for key in title_keys(p.title):
                pages.setdefault(key, []).append(p)
        self._pages = {k: tuple(v) for k, v in pages.items()}
        lengths: dict[str, set[int]] = {}
        for key in self._pages:
            tokens = key.split()
            lengths.setdefault(tokens[0], set()).add(len(tokens))
        self._lengths = {t: tuple(sorted(ls, reverse=True)) for t, ls in lengths.items()}

    def __len__(self) -> int:
        return len(self._pages)

    def pages(self, key: str) -> tuple[Passage, ...]:
        """Passages with a title under normalised ``key`` (empty when none)."""
        return self._pages.get(key, ())

    def mentions(self, text: str, *, proper_only: bool = True) -> list[Mention]:
        """Title keys mentioned in ``text``, first occurrence order; matches do not overlap.

        Scanning left to right, the longest key starting at a word is taken and the scan
        resumes after it.

        With ``proper_only`` a match must start with a capital letter or a digit in ``text``
        (running prose); questions are matched without it (they are often lower-cased).
        """
        words = list(WORD.finditer(text))
        tokens = [w.group(0).lower() for w in words]
        found: dict[str, Mention] = {}
        i = 0
        while i < len(tokens):
            lengths = self._lengths.get(tokens[i], ())
            if proper_only and not _capital(text, words[i].start()):
                lengths = ()
            n = next((n for n in lengths if i + n <= len(tokens) and " ".join(tokens[i : i + n]) in self._pages), 0)
            if n and proper_only and _inside_longer_name(text, words, i, i + n):
                n = 0
            if n:
                key = " ".join(tokens[i : i + n])
                found.setdefault(key, Mention(key, text[words[i].start() : words[i + n - 1].end()]))
            i += max(n, 1)
        return list(found.values())


@dataclass(frozen=True, slots=True)
class HopSchedule:
    """How one passage budget is spent.

    ``first_hop`` passages for the question; then the bridge beam, one passage per hop:
    the compared entities, up to ``question_links`` titles named in the question (best
    BM25 score for the question first), then ``title_links`` title-linked candidates, ``spans``
    entity spans, then the remaining candidates of both kinds; links are scored by BM25
    of the question plus ``lead_sentences`` of the passage mentioning them (``link_depth``
    results deep); spans come from the best ``span_sources`` first-hop passages.
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
class Proposal:
    """A next hop: its sub-query, why it was chosen, and the passages its entity names."""

    sub_query: str
    reason: str
    pages: tuple[Passage, ...] = ()


def _unresolved(question_terms: Sequence[str], known: set[str]) -> list[str]:
    return [t for t in dict.fromkeys(question_terms) if t not in known]


def _query(entity: str, terms: Sequence[str]) -> str:
    return " ".join([entity, *terms])


def plan_bridges(
    question: str,
    first_hop: Sequence[Passage],
    ranked: Sequence[Passage],
    retriever: Retriever,
    index: TitleIndex,
    schedule: HopSchedule,
) -> list[Proposal]:
    """The ordered bridge sub-queries after the first hop (see the module docstring).

    ``ranked`` is the retriever's ranking for the question (``first_hop`` is its head),
    ``schedule.link_depth`` deep; it orders the titles the question names.

    Title links are read from the first-hop passages and from the passages the compared
    and question-named entities point to (which the head of the plan will take).
    Every proposal's sub-query is its entity plus the question terms (BM25 tokens) that
    the entity's own passage or sentence does not already hold. Entities already covered by
    a first-hop passage's title are not proposed again; duplicates keep their first place.
    """
    q_terms = bm25_tokenize(question)
    q_lower = question.lower()
    seen_ids = {p.id for p in first_hop}
    used: set[str] = {k for p in first_hop for k in title_keys(p.title)}
    head: list[Proposal] = []

    def entity_proposal(name: str, reason: str) -> None:
        key = _key(name)
        if not key or key in used:
            return
        used.add(key)
        pages = tuple(p for p in index.pages(key) if p.id not in seen_ids)
        head.append(Proposal(_query(name, _unresolved(q_terms, set(key.split()))), reason, pages))

    for name in comparison_entities(question) or ():
        entity_proposal(name, REASON_COMPARISON)
    q_rank = {p.id: r for r, p in enumerate(ranked[: schedule.link_depth])}
    named = [m for m in index.mentions(question, proper_only=False)
             if any(p.id not in seen_ids for p in index.pages(m.key))]
    named.sort(key=lambda m: min(q_rank.get(p.id, len(q_rank)) for p in index.pages(m.key)))
    for m in named[: schedule.question_links]:
        entity_proposal(m.surface, REASON_QUESTION_ENTITY)

    links: dict[str, tuple[float, Proposal]] = {}
    named_pages = [p.pages[0] for p in head if p.pages]  # the passages the head hops will take
    for source in [*first_hop, *named_pages]:
        hits = retriever.search(_query(question, source.sentences[: schedule.lead_sentences]), schedule.link_depth)
        score = {h.passage.id: h.score for h in hits}
        top = hits[0].score if hits and hits[0].score > 0 else 1.0
        known = set(bm25_tokenize(source.text))
        for m in index.mentions(source.text):
            pages = tuple(p for p in index.pages(m.key) if p.id not in seen_ids)
            if not pages or m.key in used:
                continue
            value = max(score.get(p.id, 0.0) for p in pages) / top
            if m.key not in links or value > links[m.key][0]:
                sub_query = _query(m.surface, _unresolved(q_terms, known))
                links[m.key] = (value, Proposal(sub_query, REASON_TITLE_LINK, pages))
    ranked_links = [p for _, p in sorted(links.values(), key=lambda vp: -vp[0])]  # stable: first mention wins ties
    used.update(links)

    spans: list[tuple[int, int, int, Proposal]] = []
    for rank, source in enumerate(first_hop[: schedule.span_sources]):
        for j, sentence in enumerate(source.sentences):
            known = set(bm25_tokenize(sentence))
            overlap = len(known.intersection(q_terms))
            for span in entity_spans(sentence):
                key = _key(span)
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
