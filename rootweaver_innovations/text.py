"""What the package knows about English text, in one leaf module (it imports nothing of ours).

- :data:`STOP_WORDS`, the one stop-word set (BM25 tokens, key terms, title keys, features);
- :data:`WORD`, the ``\\w+`` word pattern, and :func:`bm25_tokenize`, the retrieval tokens;
- :func:`reasoning_key_terms`, the key terms the loop's answerability check and the line
  compactor share, so the two never disagree about which words matter;
- :data:`MONTHS` and :data:`MONTH_PATTERN`, the English month names;
- :func:`entity_spans`, capitalised (proper-noun-like) spans of a sentence;
- :func:`fold_whitespace`, one space for every whitespace run.

Pure functions of their input; no I/O, no state.
"""

from __future__ import annotations

import re

__all__ = [
    "LEADING_WORDS",
    "MONTHS",
    "MONTH_PATTERN",
    "STOP_WORDS",
    "WORD",
    "bm25_tokenize",
    "entity_spans",
    "fold_whitespace",
    "reasoning_key_terms",
]

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also among an and any are aren't as at be
    because been before being below between both but by can cannot could couldn't did
    didn't do does doesn't doing don't down during each either else ever every few for
    from further had hadn't has hasn't have haven't having he her here hers herself him
    himself his how however i if in into is isn't it it's its itself just least less let
    like many may me might more most much must mustn't my myself neither never no nor not
    now of off often on once only or other others otherwise our ours ourselves out over
    own per perhaps rather same shall she should shouldn't since so some such than that
    that's the their theirs them themselves then there there's these they this those
    though through thus to too under until up upon us very was wasn't we were weren't
    what what's when where whether which while who who's whom whose why will with within
    without won't would wouldn't yet you your yours yourself yourselves
    """.split()
)

WORD = re.compile(r"\w+")

MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July", "August",
                           "September", "October", "November", "December")
MONTH_PATTERN = "|".join(MONTHS)  # for regexes: (?:January|...|December)
_LOWER_MONTHS = frozenset(m.lower() for m in MONTHS)


def fold_whitespace(text: str) -> str:
    """``text`` with every whitespace run (newlines included) folded to one space, ends stripped."""
    return " ".join(text.split())


def bm25_tokenize(text: str) -> list[str]:
    """Lowercase ``\\w+`` tokens of ``text`` minus stop words (order kept)."""
    return [t for t in WORD.findall(text.lower()) if t not in STOP_WORDS]


def reasoning_key_terms(text: str) -> list[str]:
    """The key terms of ``text`` in order of appearance, duplicates kept.

    A key term is a token of ``text.lower().split()`` (whitespace split, punctuation NOT
    stripped) that is longer than 3 characters and not in :data:`STOP_WORDS`.
    """
    return [t for t in text.lower().split() if len(t) > 3 and t not in STOP_WORDS]


_CAP_SPAN = re.compile(
    r"(?:[A-Z][\w'’.\-]*|\d[\w\-]*)(?:\s+(?:(?:of|the|de|and|von|van|del|la|le|du|da)\s+)*"
    r"(?:[A-Z][\w'’.\-]*|\d[\w\-]*))*"
)
LEADING_WORDS = frozenset(  # capitalised only because they open a sentence
    "The A An In On At He She It They His Her Its This That These Those".split())


def entity_spans(text: str, skip_initial: bool = True) -> list[str]:
    """Capitalised spans (proper-noun-like) of ``text``, a leading article stripped.

    Skipped: spans starting with a digit or a month name, one-word spans shorter than
    3 chars, and (with ``skip_initial``) one-word spans opening ``text``, which are
    capitalised anyway.
    """
    spans = []
    for m in _CAP_SPAN.finditer(text):
        words = m.group(0).rstrip(".").split()
        while words and words[0] in LEADING_WORDS:
            words = words[1:]
        if not words or words[0][0].isdigit() or words[0].lower() in _LOWER_MONTHS:
            continue
        if len(words) == 1 and (len(words[0]) < 3 or (skip_initial and not text[: m.start()].strip())):
            continue
        spans.append(" ".join(words))
    return spans
