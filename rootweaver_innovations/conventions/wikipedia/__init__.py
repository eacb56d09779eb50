"""``wikipedia``: the conventions of encyclopedia pages in English.

A page opens with its subject ("Harvey Lawrence Pekar (October 8, 1939 - ...) was ..."), people
are cited by first and last name or a nickname, and questions compare two named things
("Who was born first, A or B?"). Subjects and their name forms (:mod:`.subjects`, :mod:`.names`),
comparison questions (:mod:`.questions`); the ``date_comparison`` answer rule reads lead
sentences' dates (:mod:`.dates`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version

from rootweaver_innovations.conventions.wikipedia.names import nicknamed
from rootweaver_innovations.conventions.wikipedia.questions import choice_options, comparison_entities
from rootweaver_innovations.conventions.wikipedia.subjects import lead_subject, subject_names, usual_name
from rootweaver_innovations.fingerprint import code_fingerprint

__all__ = ["Wikipedia"]


@dataclass(frozen=True, slots=True)
class Wikipedia:
    """The ``wikipedia`` member of the conventions registry (see :class:`~rootweaver_innovations.conventions.base.Conventions`)."""

    name: str = "wikipedia"

    def lead_subject(self, sentence: str) -> str | None:
        return lead_subject(sentence)

    def subject_names(self, sentence: str) -> tuple[str, ...]:
        """:func:`~.subjects.subject_names`, then the first name with the nicknames of its
        given name (:func:`~.names.nicknamed`)."""
        names = subject_names(sentence)
        return (*names, *nicknamed(names[0])) if names else ()

    def usual_name(self, sentence: str, mentions: Callable[[str], int]) -> str | None:
        return usual_name(sentence, mentions)

    def compared_entities(self, question: str) -> tuple[str, str] | None:
        return comparison_entities(question)

    def choice_options(self, question: str) -> tuple[str, str] | None:
        return choice_options(question)

    def fingerprint(self) -> str:
        return _fingerprint()


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    package = __name__
    return code_fingerprint((package, f"{package}.subjects", f"{package}.names", f"{package}.questions"),
                            (f"nicknames=={version('nicknames')}",))
