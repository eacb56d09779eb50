"""What each passage's document says about itself, by row: its source (the publication) and
its publication day, so a hop can keep to the documents a question names.

A question names a source when it holds one of the index's source names, or the part of
one before ``" | "`` (``"The Roar"`` for ``"The Roar | Sports Writers Blog"``), as whole
words, case aside, written with a capital (``"fortune"`` in "made a fortune" is not
Fortune). It names a day when it holds a full date (``"October 2, 2023"``, ``"2 October
2023"``, ``"2023-10-02"``, month names long or short). A passage's day is the date its
document's ``published`` value gives, as written (its own time zone, not UTC). A day named
in a question that also names sources picks the documents of that day from those sources
("the TechCrunch report of October 31, 2023"), or every document of that day when none of
them has one.

:class:`Facets` holds the distinct source names (first-seen order), an int32 source number
per passage (-1 for none) and an int32 day per passage (days since 1970-01-01, :data:`NO_DAY`
for none); an index computes them from its records when it is opened.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.documents.corpus import Passage

__all__ = ["NO_DAY", "Facets", "NamedFacet", "day_number"]

NO_DAY = np.iinfo(np.int32).min
_EPOCH = dt.date(1970, 1, 1)
_MONTHS = {m: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for m in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATES = re.compile(
    rf"\b(?:(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y1>\d{{4}})"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m2>{_MONTH})\.?,?\s+(?P<y2>\d{{4}})"
    rf"|(?P<y3>\d{{4}})-(?P<m3>\d{{2}})-(?P<d3>\d{{2}}))\b", re.IGNORECASE)


def day_number(published: str | None) -> int:
    """Days since 1970-01-01 of the date an ISO 8601 ``published`` value starts with
    (``"2023-10-06T21:31:00+00:00"`` -> that day as written); :data:`NO_DAY` for ``None`` or
    a value that does not start with a valid ``YYYY-MM-DD``."""
    try:
        return (dt.date.fromisoformat((published or "")[:10]) - _EPOCH).days
    except ValueError:
        return int(NO_DAY)


@dataclass(frozen=True, slots=True)
class NamedFacet:
    """A source or a day a question names: ``label`` as the question wrote it, ``rows`` the
    passages (rows of the index) it picks, ascending, and ``kind`` (``"source"`` or ``"day"``)."""

    kind: str
    label: str
    rows: np.ndarray


@dataclass(frozen=True, slots=True)
class Facets:
    """Source and day by row (see the module docstring); rows align with the index's passages."""

    sources: tuple[str, ...]
    source_rows: np.ndarray
    days: np.ndarray

    @classmethod
    def of_passages(cls, passages: Iterable[Passage]) -> Facets:
        """The facets of ``passages`` in order: a chunk's document metadata, a record's own (a
        passage with neither has no source and no day)."""
        names: dict[str, int] = {}
        source_rows, days = [], []
        for p in passages:
            meta = p.source.meta if p.source is not None else p.meta
            name = (meta.source or "").strip() if meta is not None else ""
            source_rows.append(names.setdefault(name, len(names)) if name else -1)
            days.append(day_number(meta.published if meta is not None else None))
        return cls(tuple(names), np.asarray(source_rows, dtype=np.int32), np.asarray(days, dtype=np.int32))

    def __bool__(self) -> bool:
        """Whether any passage has a source or a day (an index of plain text has neither)."""
        return bool(self.sources) or bool((self.days != NO_DAY).any())

    def named(self, question: str) -> list[NamedFacet]:
        """The sources and days ``question`` names that some passage has, in the order it names
        them; a source or day named twice is listed twice (two reports from one source). A
        day's rows keep to the named sources' documents when any of them is of that day."""
        found: list[tuple[int, NamedFacet]] = []
        taken: list[tuple[int, int]] = []
        for label, numbers in self._source_names():
            for m in re.finditer(rf"(?<!\w){re.escape(label)}(?!\w)", question, re.IGNORECASE):
                span = m.span()
                if not m.group()[0].isupper() or any(a < span[1] and span[0] < b for a, b in taken):
                    continue
                taken.append(span)
                rows = np.flatnonzero(np.isin(self.source_rows, numbers))
                found.append((span[0], NamedFacet("source", m.group(), rows)))
        of_sources = np.concatenate([f.rows for _, f in found]) if found else None  # found holds sources alone here
        for m in _DATES.finditer(question):
            day = _day_of(m)
            rows = np.flatnonzero(self.days == day) if day is not None else np.empty(0, dtype=np.intp)
            if of_sources is not None:
                keep = np.isin(rows, of_sources)
                rows = rows[keep] if keep.any() else rows
            if rows.size:
                found.append((m.start(), NamedFacet("day", m.group(), rows)))
        return [f for _, f in sorted(found, key=lambda sf: sf[0])]

    def _source_names(self) -> list[tuple[str, list[int]]]:
        """``(name, source numbers)`` to look for, longest first: each full name and its part
        before ``" | "``; a short name shared by several sources picks them all."""
        by_name: dict[str, list[int]] = {}
        for i, full in enumerate(self.sources):
            for name in dict.fromkeys((full, full.split(" | ")[0].strip())):
                if re.search(r"\w", name):
                    by_name.setdefault(name.lower(), []).append(i)
        return sorted(by_name.items(), key=lambda kv: -len(kv[0]))


def _day_of(m: re.Match[str]) -> int | None:
    """The day number of a :data:`_DATES` match; ``None`` for an impossible date."""
    y, mo, d = ((m["y1"], m["m1"], m["d1"]) if m["y1"] else (m["y2"], m["m2"], m["d2"]) if m["y2"]
                else (m["y3"], m["m3"], m["d3"]))
    month = int(mo) if mo.isdigit() else _MONTHS[mo.lower()]
    try:
        return (dt.date(int(y), month, int(d)) - _EPOCH).days
    except ValueError:
        return None

