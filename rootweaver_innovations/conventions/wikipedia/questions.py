"""The two things an English comparison question weighs: "..., X or Y?", "Are X and Y both ...?".

:func:`comparison_entities` gives the compared entities the hop planner looks up one by one;
:func:`choice_options` the two options a choice question offers a reader (and the date rule).
Pure functions of the question.
"""

from __future__ import annotations

import re

from rootweaver_innovations.text import entity_spans

__all__ = ["choice_options", "comparison_entities"]

_QUESTION_WORD = re.compile(
    r"^(?:Which|What|Who|Whom|Whose|Was|Were|Is|Are|Did|Do|Does|Has|Have)\b\s*(?:(?:The|A|An)\s+)?"
)
_LOWER_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_MAX_OPTION_WORDS = 10


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


def _named(text: str) -> bool:
    return bool(text) and (text[0].isupper() or text[0].isdigit()) and len(text.split()) <= _MAX_OPTION_WORDS


def _literal_options(question: str) -> tuple[str, str] | None:
    """"..., A or B?" read literally: A after the last comma, B up to the question mark
    (a lower-case leading article dropped), so "In the Company of Men" stays whole."""
    head, sep, tail = question.rstrip(" ?.").rpartition(" or ")
    if not sep or ", " not in head or "," in tail:
        return None
    a = _LOWER_ARTICLE.sub("", head.rpartition(", ")[2].strip(" ,"))
    b = _LOWER_ARTICLE.sub("", tail.strip())
    return (a, b) if _named(a) and _named(b) and a != b else None


def choice_options(question: str) -> tuple[str, str] | None:
    """The two options a choice question offers ("Which ..., A or B?", "Between A and B,
    who ...?", "Was A or B ...?"), for a reader to choose from and for :func:`compare_dates`;
    ``None`` for any other question, a yes/no one such as "Are A and B both ...?" included.

    After a comma the options are read literally (each at most ten words, starting with a
    capital or a digit); otherwise they are entity spans, without a leading question word
    ("Was A or B ...?") or an article after it.
    """
    question = " ".join(question.split())
    literal = _literal_options(question)
    if literal is not None:
        return literal
    options = comparison_entities(question)
    if options is None:
        return None
    _, sep, tail = question.rpartition(" or ")
    if not (sep and options[1] in tail) and not question.startswith("Between "):
        return None
    a, b = (_QUESTION_WORD.sub("", option) for option in options)
    return (a, b) if a and b and a != b else None
