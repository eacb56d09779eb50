"""Per-text memoisation for the packers: a parse that depends on one text is computed once.

A corpus's passages recur across questions, so the packers keep such parses by text: at most
``MEMO_SIZE`` texts per memoised function (least recently used out), and only texts up to
``MEMO_CHARS`` characters (a longer one is parsed on every call), a few MB per function
however long a server runs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypeVar

__all__ = ["MEMO_CHARS", "MEMO_SIZE", "lowered_words", "per_text"]

MEMO_CHARS = 1000
MEMO_SIZE = 8192
_T = TypeVar("_T")
_WORD = re.compile(r"\w+")


def per_text(fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """``fn`` (a pure function of one text) memoised for texts up to ``MEMO_CHARS`` chars,
    at most ``MEMO_SIZE`` of them."""
    cached = functools.lru_cache(maxsize=MEMO_SIZE)(fn)

    @functools.wraps(fn)
    def call(text: str) -> _T:
        return cached(text) if len(text) <= MEMO_CHARS else fn(text)

    return call


@per_text
def lowered_words(text: str) -> frozenset[str]:
    """The distinct ``\\w+`` tokens of ``text`` lowercased (``re``'s ``\\w``: ``str.isalnum()``
    or ``"_"``); memoised (:func:`per_text`)."""
    return frozenset(_WORD.findall(text.lower()))
