"""What the loop, the hop planner and the index ask of a corpus's conventions.

A :class:`Conventions` member answers, for one kind of document and language, questions that
text alone does not settle: which name a passage is about (its lead subject and the other
forms texts use for it), which name of several a reader knows best, and which two things a
comparison question weighs. The core never names a language's words for these; it asks the
member configured by ``conventions:`` (:mod:`~rootweaver_innovations.conventions.registry`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Conventions"]


@runtime_checkable
class Conventions(Protocol):
    """One member of the conventions registry. Every method is a pure function of its input.

    - ``name``: the registry name (``conventions: NAME`` in the config, ``--conventions NAME``);
    - ``lead_subject(sentence)``: the name an opening sentence is about, or ``None``;
    - ``subject_names(sentence)``: every name it gives its subject, ``lead_subject`` first,
      then other forms texts use (empty when it names none); title-index keys of a record
      titled by an id;
    - ``usual_name(sentence, mentions)``: of those names, the one ``mentions`` (a count of
      occurrences around it) finds most, or ``None``;
    - ``compared_entities(question)``: the two entities a comparison question weighs, each
      looked up by its own hop, or ``None``;
    - ``choice_options(question)``: the two options a choice question offers a reader, or ``None``;
    - ``fingerprint()``: a hex digest of the member's code and data; an index records it and is
      refused by code whose fingerprint differs.
    """

    name: str

    def lead_subject(self, sentence: str) -> str | None: ...

    def subject_names(self, sentence: str) -> tuple[str, ...]: ...

    def usual_name(self, sentence: str, mentions: Callable[[str], int]) -> str | None: ...

    def compared_entities(self, question: str) -> tuple[str, str] | None: ...

    def choice_options(self, question: str) -> tuple[str, str] | None: ...

    def fingerprint(self) -> str: ...
