"""``plain``: only what any document gives, for news, reports, manuals and notes.

No lead subjects, name forms or question templates: a chunk is titled by its document's
headings or file name, the index keys a passage by its title alone, and every question is
searched as it is asked. Nothing here names a word of any language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from rootweaver_innovations.fingerprint import code_fingerprint

__all__ = ["Plain"]


@dataclass(frozen=True, slots=True)
class Plain:
    """The ``plain`` member of the conventions registry (see :class:`~rootweaver_innovations.conventions.base.Conventions`)."""

    name: str = "plain"

    def lead_subject(self, sentence: str) -> str | None:
        return None

    def subject_names(self, sentence: str) -> tuple[str, ...]:
        return ()

    def usual_name(self, sentence: str, mentions: Callable[[str], int]) -> str | None:
        return None

    def compared_entities(self, question: str) -> tuple[str, str] | None:
        return None

    def choice_options(self, question: str) -> tuple[str, str] | None:
        return None

    def fingerprint(self) -> str:
        return _fingerprint()


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    return code_fingerprint((__name__,))
