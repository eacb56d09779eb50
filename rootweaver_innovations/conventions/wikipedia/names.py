"""Other forms of a person's name that texts use: nicknames of an English given name.

"Michael Taylor" is also "Mick Taylor" to other pages; the table is the ``nicknames`` package's
(English given names and their diminutives, read once, on first use).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

__all__ = ["nicknamed"]


@lru_cache(maxsize=1)
def _nicknames() -> Callable[[str], set[str]]:
    from nicknames import NickNamer  # the package's table of English given names and their nicknames

    return NickNamer().nicknames_of


def nicknamed(name: str) -> list[str]:
    """``name`` of two capitalised words with its first one replaced by each of its nicknames
    that start with the same letter (``nicknames`` package): "Michael Taylor" -> "Micah Taylor",
    "Mick Taylor", ... (a page opening "Michael Kevin Taylor" is "Mick Taylor" to others)."""
    words = name.split()
    if len(words) != 2 or not all(w.isalpha() and w[0].isupper() for w in words):
        return []
    first = words[0].lower()
    return [f"{n.capitalize()} {words[1]}" for n in sorted(_nicknames()(first)) if n[0] == first[0]]
