"""Date comparisons computed from the trajectory's facts instead of guessed by a small reader.

"Who was born first, A or B?", "Which film was released later, A or B?": the answer is the
option whose year is earlier (or later). The 1.5B reader, shown both dates, got none of
the three such questions in an 80-question even-row sample right, so :func:`compare_dates`
reads the two years from the facts and compares them; :func:`date_comparison_answer` is
that comparison as an answer rule (registered as ``date_comparison``): it sees every fact
the loop read, not only the compacted synth context, and a question it cannot settle goes
to the reader.

The year of an option comes from its own passage (a fact whose title is the option):
for *born* / *older* / *younger* the first year of the passage's lead sentence, for
*died* / *passed away* the second year of the lead sentence, otherwise the first year of
the option's lowest-numbered sentence that has one. "Which film has the director who was
born first, A or B?" (or "whose director"): the same year of each film's director, the
person named after "directed by" in the film's own passage. No year for either option,
equal years, a question with both or neither direction word, or one that compares another
related entity's date ("the film whose producer died first"): no comparison (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rootweaver_innovations.conventions.wikipedia.questions import choice_options
from rootweaver_innovations.loop.result import Answer
from rootweaver_innovations.retrieval.titles import title_keys
from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import MONTH_PATTERN, entity_spans

__all__ = ["COMPARISON_METHOD", "DateComparison", "compare_dates", "date_comparison_answer"]

COMPARISON_METHOD = "computed: date comparison"

_EARLY = re.compile(r"\b(?:first|earlier|earliest|older|oldest|before|sooner)\b", re.IGNORECASE)
_LATE = re.compile(r"\b(?:later|latest|last|younger|youngest|newer|newest|more recent(?:ly)?|most recent(?:ly)?)\b",
                   re.IGNORECASE)
_DEATH = re.compile(r"\b(?:died|die|death|passed away)\b", re.IGNORECASE)
_BIRTH = re.compile(r"\b(?:born|birth|older|oldest|younger|youngest)\b", re.IGNORECASE)
# a year also when run into a word or into the next date's day: "(April 28, 1926February 19,
# 2016)", "( 21 February 188524 July 1957)" (the dash lost in extraction)
_YEAR = re.compile(rf"(?<!\d)(1[0-9]{{3}}|20[0-9]{{2}})(?=\d{{1,2}} (?:{MONTH_PATTERN})\b|\D|$)")
_DIRECTOR = re.compile(r"\bwhose director\b|\b(?:has|with) the director\b", re.IGNORECASE)
_RELATION = re.compile(r"\bwhose\b|\b(?:has|with) the \w+ (?:who|that)\b", re.IGNORECASE)  # another entity's date
_DIRECTED_BY = re.compile(r"\bdirected by\s+")


@dataclass(frozen=True, slots=True)
class DateComparison:
    """The chosen option (as the question names it), each option's year, and the facts the
    years came from (for a director comparison: each film's fact naming its director, then
    the director's dated fact, per option)."""

    answer: str
    years: tuple[int, int]
    facts: tuple[Fact, ...]


def _own(name: str, facts: Sequence[Fact]) -> list[Fact]:
    keys = set(title_keys(name))
    return sorted((f for f in facts if keys & set(title_keys(f.title))), key=lambda f: f.sentence_index)


def _option_year(option: str, facts: Sequence[Fact], event: str) -> tuple[int, tuple[Fact, ...]] | None:
    own = _own(option, facts)
    if event != "other":
        lead = next((f for f in own if f.sentence_index == 0), None)
        years = _YEAR.findall(lead.body) if lead is not None else []
        index = 0 if event == "birth" else 1
        return (int(years[index]), (lead,)) if len(years) > index else None
    for fact in own:
        m = _YEAR.search(fact.body)
        if m:
            return int(m.group(1)), (fact,)
    return None


def _director_year(film: str, facts: Sequence[Fact], event: str) -> tuple[int, tuple[Fact, ...]] | None:
    """``event``'s year of the person named right after "directed by" in ``film``'s passage."""
    for fact in _own(film, facts):
        m = _DIRECTED_BY.search(fact.body)
        tail = fact.body[m.end():] if m else ""
        names = entity_spans(tail, skip_initial=False)
        if names and tail.startswith(names[0]):
            found = _option_year(names[0], facts, event)
            return (found[0], (fact, *found[1])) if found is not None else None
    return None


def compare_dates(question: str, facts: Sequence[Fact]) -> DateComparison | None:
    """The answer to an earlier/later comparison of two named options (or of their
    directors), read from ``facts``; ``None`` when ``question`` is not one or the facts do
    not settle it (see the module)."""
    options = choice_options(question)
    early, late = _EARLY.search(question), _LATE.search(question)
    if options is None or bool(early) == bool(late):
        return None
    by_director = bool(_DIRECTOR.search(question))
    if not by_director and _RELATION.search(question):
        return None
    event = "death" if _DEATH.search(question) else "birth" if _BIRTH.search(question) else "other"
    if by_director and event == "other":
        return None
    year_of = _director_year if by_director else _option_year
    found = [year_of(option, facts, event) for option in options]
    if found[0] is None or found[1] is None or found[0][0] == found[1][0]:
        return None
    (y0, f0), (y1, f1) = found
    pick = 0 if (y0 < y1) == bool(early) else 1
    return DateComparison(answer=options[pick], years=(y0, y1), facts=(*f0, *f1))


def date_comparison_answer(question: str, facts: Sequence[Fact]) -> Answer | None:
    """The answer rule ``date_comparison``: :func:`compare_dates` over the
    trajectory's ``facts`` as an :class:`Answer` (method :data:`COMPARISON_METHOD` with the
    two years, citing the facts behind them), or ``None`` so that the reader answers."""
    found = compare_dates(question, facts)
    if found is None:
        return None
    return Answer(text=found.answer, citations=tuple(found.facts),
                  method=f"{COMPARISON_METHOD} ({found.years[0]} vs {found.years[1]})")
