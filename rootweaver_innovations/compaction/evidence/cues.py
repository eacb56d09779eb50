"""What the evidence features read of one text: a sentence's capitalised words, numbers, year,
opening pronoun and life dates, a document's lead entity, a question's kind and head words.

Pure functions of one string, memoised for short texts (:func:`per_text`), shared by the
document and sentence features of :mod:`~rootweaver_innovations.compaction.evidence.features`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypeVar

from rootweaver_innovations.conventions.wikipedia.subjects import has_life_dates
from rootweaver_innovations.text import STOP_WORDS, WORD

__all__ = ["bare_title", "head_words", "lead_entity", "parse", "question_capitals", "question_kind", "sub_entity", "words"]

_T = TypeVar("_T")
YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
NUMBER = re.compile(r"\d+")
CAPITAL = re.compile(r"\b[A-Z][\w'\-]*")
PRONOUN = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|This|These)\b")
PAREN = re.compile(r"\s*\(.*\)$")
ENTITY_SKIP = frozenset({"the", "a", "an"})  # dropped at the start of a lead entity
ENTITY_JOIN = frozenset({"of", "de", "the", "and", "von", "van", "der", "da", "del", "la", "le", "du", "&"})
ENTITY_MIN = 4  # chars: shorter lead entities ("He", "It", "U.S") are not matched



def question_kind(question: str) -> tuple[bool, bool, bool, bool, bool, bool]:
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


MEMO_CHARS = 1000  # texts up to this long are memoised by per_text; longer ones are computed every time
MEMO_SIZE = 8192  # texts kept per memoised function (at most about 8 MB each however long a server runs)


def per_text(fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """``fn`` (a pure function of one text) memoised for texts up to ``MEMO_CHARS`` chars,
    at most ``MEMO_SIZE`` of them (least recently used out)."""
    cached = functools.lru_cache(maxsize=MEMO_SIZE)(fn)

    @functools.wraps(fn)
    def call(text: str) -> _T:
        return cached(text) if len(text) <= MEMO_CHARS else fn(text)

    return call


@per_text
def parse(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool, bool]:
    """Question-independent parse of a sentence: ``(lowercased capitalised words, numbers, has a
    year, starts with a pronoun, birth bracket)`` (memoised, :func:`per_text`)."""
    return (
        tuple(w.lower() for w in CAPITAL.findall(text)),
        tuple(NUMBER.findall(text)),
        YEAR.search(text) is not None,
        PRONOUN.match(text) is not None,
        has_life_dates(text),
    )


@per_text
def words(text: str) -> frozenset[str]:
    """The distinct ``\\w+`` words of ``text`` (memoised, :func:`per_text`)."""
    return frozenset(WORD.findall(text))


@per_text
def lead_entity(text: str) -> str:
    """The leading run of capitalised words of ``text`` (lowercased), the name a lead sentence
    is about when it has no title: ``"The Oberoi Group is ..."`` gives ``"oberoi group"``.
    Lowercase joiners (of, de, van, ...) are kept between capitalised words; a run shorter than
    ``ENTITY_MIN`` chars, a pronoun or a leading stop word gives ``""``. Memoised (:func:`per_text`)."""
    out: list[str] = []
    pending: list[str] = []
    for k, raw in enumerate(text.split()):
        w = raw.strip(",;:\"“”()")
        if not w or raw[0] == "(":
            break
        if not out:  # the name's first word: after an optional leading article, never a stop word
            low = w.lower()
            if k == 0 and low in ENTITY_SKIP:
                continue
            if low in STOP_WORDS:  # "In 1912, ...", "As the ...": no name leads
                return ""
            if not (w[0].isupper() or w[0].isdigit()):
                break
        elif w[0].isupper() or w[0].isdigit():
            out += pending
            pending = []
        elif w.lower() in ENTITY_JOIN:
            pending.append(w)
            continue
        else:
            break
        out.append(w)
        if raw != w and not raw.endswith("'s"):  # punctuation ends the name
            break
    name = " ".join(out)
    low = name.lower()
    return "" if len(low) < ENTITY_MIN or PRONOUN.match(name) else low


@per_text
def bare_title(title: str) -> str:
    """``title`` lowercased, without a trailing ``"(...)"`` (``"Mercury (planet)"`` gives ``"mercury"``;
    memoised, :func:`per_text`)."""
    return (PAREN.sub("", title) if "(" in title else title).lower()


@per_text
def question_capitals(question: str) -> frozenset[str]:
    """The question's capitalised words after its first word, lowercased (memoised, :func:`per_text`)."""
    return frozenset(w.lower() for w in CAPITAL.findall(question)[1:])


@per_text
def head_words(question: str) -> tuple[str, ...]:
    """The question's words 2-6 (lowercased) that are not stop words (memoised, :func:`per_text`)."""
    return tuple(w for w in WORD.findall(question.lower())[1:6] if w not in STOP_WORDS)


def sub_entity(sub_query: str | None, query: str) -> str:
    """The entity a follow-up sub-query leads with (``""`` for the question itself or none)."""
    if not sub_query or sub_query == query:
        return ""
    return lead_entity(sub_query)


