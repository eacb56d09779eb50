"""What a packer chooses from: source-grounded snippets, and hop headers they travel with.

A :class:`Candidate` carries no evaluation label (no gold flag, no answer): selectors see
only text, provenance and a relevance score computed from the query.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Candidate", "Header", "rank_key"]


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One snippet a packer may put in the reader context.

    ``id`` names the snippet (non-empty); ``doc_id`` the document it came from;
    ``text`` the exact text that is copied whole into the packet (it must contain a
    non-whitespace character); ``position`` its 0-based place in the source order (the
    packet is rendered in position order); ``relevance`` a finite score >= 0 against the
    query (higher is better). ``source`` and ``version`` are optional provenance: two
    version labels for one source (``source``, or ``doc_id`` when ``source`` is None)
    among the candidates block that source (see :mod:`rootweaver_innovations.selection`).
    Invalid fields raise ``ValueError``.
    """

    id: str
    doc_id: str
    text: str
    position: int
    relevance: float
    version: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"candidate id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.doc_id, str):
            raise ValueError(f"candidate {self.id!r}: doc_id must be a str, got {self.doc_id!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"candidate {self.id!r}: text must be a str with visible content")
        _check_int(f"candidate {self.id!r}: position", self.position, 0)
        rel = self.relevance
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not math.isfinite(rel) or rel < 0:
            raise ValueError(f"candidate {self.id!r}: relevance must be a finite number >= 0, got {rel!r}")
        for name in ("version", "source"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"candidate {self.id!r}: {name} must be a str or None, got {value!r}")

    @property
    def provenance(self) -> tuple[str, str | None, str | None]:
        """``(doc_id, source, version)``: what must agree when one id appears twice."""
        return (self.doc_id, self.source, self.version)

    @property
    def source_key(self) -> str:
        """The source whose version labels must agree: ``source``, else ``doc_id``."""
        return self.source if self.source is not None else self.doc_id


def rank_key(candidate: Candidate, index: int) -> tuple[float, int, int]:
    """Sort key of the candidate ranking: relevance descending, then position, then input index."""
    return (-float(candidate.relevance), candidate.position, index)


@dataclass(frozen=True, slots=True)
class Header:
    """A line emitted once, just before the first kept candidate that belongs to it.

    Used for hop headers (``"From query: ..."``) in the synthesis context: the header's
    text and separator count against the budget only when one of its candidates is kept.
    ``position`` orders it among the candidates when the packet is rendered.
    """

    position: int
    text: str

    def __post_init__(self) -> None:
        _check_int("header position", self.position, 0)
        if not isinstance(self.text, str) or "\n" in self.text:
            raise ValueError(f"header text must be a single-line str, got {self.text!r}")
