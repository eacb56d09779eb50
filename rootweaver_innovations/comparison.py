"""Choice questions: the two options they offer (:func:`choice_options`, named in the
reader's prompt), and date comparisons computed from the synth facts instead of guessed by
a small reader.

"Who was born first, A or B?", "Which film was released later, A or B?": the answer is the
option whose year is earlier (or later). The 1.5B reader, shown both dates, got none of
the three such questions in an 80-question even-row sample right, so :func:`compare_dates`
reads the two years from the facts and compares them; :class:`DateComparingSynthesizer` answers such questions with it and
hands every other question (and every one it cannot settle) to the reader it wraps.

The year of an option comes from its own passage (a fact whose title is the option):
for *born* / *older* / *younger* the first year of the passage's lead sentence, for
*died* / *passed away* the second year of the lead sentence, otherwise the first year of
the option's lowest-numbered sentence that has one. No year for either option, equal
years, a question with both or neither direction word, or one that compares a related
entity's date ("the film whose director was born first"): no comparison (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .hops import comparison_entities, title_keys
from .multihop import Answer, Synthesizer
from .records import Fact

__all__ = ["COMPARISON_METHOD", "DateComparingSynthesizer", "DateComparison", "choice_options", "compare_dates"]

COMPARISON_METHOD = "computed: date comparison"

_EARLY = re.compile(r"\b(?:first|earlier|earliest|older|oldest|before|sooner)\b", re.IGNORECASE)
_LATE = re.compile(r"\b(?:later|latest|last|younger|youngest|newer|newest|more recent(?:ly)?|most recent(?:ly)?)\b",
                   re.IGNORECASE)
_DEATH = re.compile(r"\b(?:died|die|death|passed away)\b", re.IGNORECASE)
_BIRTH = re.compile(r"\b(?:born|birth|older|oldest|younger|youngest)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_RELATION = re.compile(r"\bwhose\b|\b(?:has|with) the \w+ (?:who|that)\b", re.IGNORECASE)  # another entity's date
_QUESTION_WORD = re.compile(
    r"^(?:Which|What|Who|Whom|Whose|Was|Were|Is|Are|Did|Do|Does|Has|Have)\b\s*(?:(?:The|A|An)\s+)?"
)


def choice_options(question: str) -> tuple[str, str] | None:
    """The two options a choice question offers ("Which ..., A or B?", "Between A and B,
    who ...?"), for a reader to choose from; ``None`` for any other question, a yes/no one
    such as "Are A and B both ...?" included. An option's leading question word ("Was A or
    B ...?") is not part of it, nor an article after it (as entity spans drop it)."""
    question = " ".join(question.split())
    options = comparison_entities(question)
    if options is None:
        return None
    _, sep, tail = question.rpartition(" or ")
    if not (sep and options[1] in tail) and not question.startswith("Between "):
        return None
    a, b = (_QUESTION_WORD.sub("", option) for option in options)
    return (a, b) if a and b and a != b else None


@dataclass(frozen=True, slots=True)
class DateComparison:
    """The chosen option (as the question names it), each option's year and the fact it came from."""

    answer: str
    years: tuple[int, int]
    facts: tuple[Fact, Fact]


def _option_year(option: str, facts: Sequence[Fact], event: str) -> tuple[int, Fact] | None:
    keys = set(title_keys(option))
    own = sorted((f for f in facts if keys & set(title_keys(f.title))), key=lambda f: f.sentence_index)
    if event != "other":
        lead = next((f for f in own if f.sentence_index == 0), None)
        years = _YEAR.findall(lead.body) if lead is not None else []
        index = 0 if event == "birth" else 1
        return (int(years[index]), lead) if len(years) > index else None
    for fact in own:
        m = _YEAR.search(fact.body)
        if m:
            return int(m.group(1)), fact
    return None


def compare_dates(question: str, facts: Sequence[Fact]) -> DateComparison | None:
    """The answer to an earlier/later comparison of two named options, read from ``facts``;
    ``None`` when ``question`` is not one or the facts do not settle it (see the module)."""
    options = comparison_entities(question)
    early, late = _EARLY.search(question), _LATE.search(question)
    if options is None or bool(early) == bool(late) or _RELATION.search(question):
        return None
    event = "death" if _DEATH.search(question) else "birth" if _BIRTH.search(question) else "other"
    found = [_option_year(option, facts, event) for option in options]
    if found[0] is None or found[1] is None or found[0][0] == found[1][0]:
        return None
    (y0, f0), (y1, f1) = found
    pick = 0 if (y0 < y1) == bool(early) else 1
    return DateComparison(answer=options[pick], years=(y0, y1), facts=(f0, f1))


@dataclass(frozen=True, slots=True)
class DateComparingSynthesizer:
    """A ``Synthesizer``: :func:`compare_dates` when it settles the question (method
    :data:`COMPARISON_METHOD`, citing the two dated facts), else ``reader``'s answer."""

    reader: Synthesizer

    def load(self) -> None:
        """Load the wrapped reader now, if it has anything to load."""
        load = getattr(self.reader, "load", None)
        if load is not None:
            load()

    def __call__(self, question: str, synth_context: str, facts: Sequence[Fact]) -> Answer:
        found = compare_dates(question, facts)
        if found is None:
            return self.reader(question, synth_context, facts)
        return Answer(text=found.answer, cited_lines=tuple(f.line for f in found.facts),
                      method=f"{COMPARISON_METHOD} ({found.years[0]} vs {found.years[1]})")
