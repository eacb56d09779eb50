"""What a document says about itself, whatever kind of file it is: one :class:`DocumentMeta`.

A Markdown or text file's front matter, an HTML page's ``<meta>`` tags, a PDF's document
information and a JSONL record's fields beyond its text are all read by :func:`meta_of`
from ``key -> value`` pairs: :data:`FIELD_KEYS` names, for each typed field, the keys that
fill it (matched whatever their case; the first one present wins), and every other key
with a text value is ``extra`` (kept only where a format asks for it). :func:`parse_date`
reads the date: ISO 8601, a PDF date (``D:YYYYMMDDHHmmSS+HH'mm'``) or what
``python-dateutil`` reads (``Fri, 06 Oct 2023 21:31:00 GMT``, ``October 6, 2023``), its
offset kept when it has one. A date that is none of these stays in ``extra`` as written and
:func:`meta_of` says so in one line; the rest of the record is kept.

:class:`MetaSummary` counts what a corpus's documents carry, for ``rootweaver index info``.
"""

from __future__ import annotations

import datetime as dt
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FIELD_KEYS", "META_FIELDS", "DocumentMeta", "MetaSummary", "meta_of", "meta_text", "parse_date"]

META_FIELDS = ("title", "source", "published", "author", "url")  # DocumentMeta's typed fields, in order

# the keys (lower case) that fill each typed field, the first one present winning; see docs/documents.md
FIELD_KEYS: Mapping[str, tuple[str, ...]] = {
    "title": ("title", "og:title", "dc.title", "headline"),
    "source": ("source", "site_name", "publisher", "og:site_name", "dc.publisher"),
    "published": ("published", "published_at", "date", "pubdate", "publish_date", "datepublished",
                  "article:published_time", "dc.date", "dc.date.issued", "dcterms.date", "dcterms.issued",
                  "dcterms.created", "creationdate"),
    "author": ("author", "authors", "byline", "dc.creator", "dcterms.creator"),
    "url": ("url", "canonical", "og:url", "link"),
}


@dataclass(frozen=True, slots=True)
class DocumentMeta:
    """What a document says about itself (``None`` for a field it leaves out or empty):
    ``title``, ``source`` (the publication), ``published`` (an ISO 8601 date or time, with its
    offset when it had one), ``author``, ``url``, and ``extra``, every other field with a
    text value as ``(key, value)`` in the order written."""

    title: str | None = None
    source: str | None = None
    published: str | None = None
    author: str | None = None
    url: str | None = None
    extra: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this record: the fields that are set, ``extra`` as an object."""
        out: dict[str, Any] = {k: v for k in META_FIELDS if (v := getattr(self, k)) is not None}
        if self.extra:
            out["extra"] = dict(self.extra)
        return out


def meta_of(fields: Mapping[str, Any], *, keep_extra: bool = True) -> tuple[DocumentMeta | None, str | None]:
    """``(meta, problem)`` of a document's ``key -> value`` pairs: each typed field from the
    first of its :data:`FIELD_KEYS` with a value (:func:`meta_text`), the date read by
    :func:`parse_date`; with ``keep_extra``, every other key with a value in ``extra``.
    ``meta`` is ``None`` when nothing has a value. A date that does not read stays in
    ``extra`` as written and ``problem`` says ``"'<key>' is not a date ('<value>'); kept as
    text"`` (else ``None``)."""
    values = {k: v for k, v in ((str(k), meta_text(v)) for k, v in fields.items()) if v is not None}
    lower = {k.lower(): k for k in reversed(values)}  # a key as first written, whatever its case
    typed: dict[str, str | None] = dict.fromkeys(META_FIELDS)
    problem, kept = None, set()
    for name, keys in FIELD_KEYS.items():
        key = next((lower[k] for k in keys if lower.get(k) in values), None)
        if key is None:
            continue
        typed[name] = parse_date(values[key]) if name == "published" else values[key]
        if typed[name] is None:  # a date that does not read: kept as written
            problem, kept = f"{key!r} is not a date ({values[key][:40]!r}); kept as text", {key}
        else:
            del values[key]
    extra = tuple((k, v) for k, v in values.items() if keep_extra or k in kept)
    meta = DocumentMeta(*(typed[k] for k in META_FIELDS), extra)
    return (None if meta == DocumentMeta() else meta), problem


def meta_text(value: Any) -> str | None:
    """A metadata value as one line of text: a scalar, or a list of scalars joined by ", ";
    ``None`` for an empty value or a nested mapping."""
    if isinstance(value, list):
        return ", ".join(t for v in value if not isinstance(v, (list, dict)) and (t := meta_text(v)) is not None) or None
    if isinstance(value, dict) or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return " ".join(str(value).split()) or None


_PDF_DATE = re.compile(r"D:(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})?(\d{2})?)?(?:(Z)|([+-])(\d{2})'?(\d{2})?'?)?")


def parse_date(text: str) -> str | None:
    """``text`` as an ISO 8601 date (``2023-10-06``) or date and time with its offset when it
    gives one (``2023-10-06T21:31:00+00:00``), else ``None``. Read in turn as ISO 8601
    (``datetime.fromisoformat``), as a PDF date (``D:20231006213100+02'00'``) and by
    ``python-dateutil`` (numeric day and month read month first); a text without a year,
    month and day is no date. A time zone named by an abbreviation (``EDT``) is not
    understood and the time is kept without an offset."""
    text = text.strip()
    for parse in (dt.date.fromisoformat, dt.datetime.fromisoformat):  # a date stays a date
        try:
            return parse(text).isoformat()
        except ValueError:
            continue
    if text.startswith("D:"):
        return _pdf_date(text)
    return _dateutil_date(text)


def _pdf_date(text: str) -> str | None:
    """A PDF date (ISO 32000 7.9.4; the apostrophes of its offset optional) in ISO 8601."""
    if (m := _PDF_DATE.fullmatch(text)) is None:
        return None
    year, month, day, hour, minute, second, zulu, sign, off_h, off_m = m.groups()
    try:
        if hour is None:
            return dt.date(int(year), int(month), int(day)).isoformat()
        zone = None
        if zulu or sign:
            offset = dt.timedelta(hours=int(off_h or 0), minutes=int(off_m or 0))
            zone = dt.timezone(-offset if sign == "-" else offset)
        return dt.datetime(int(year), int(month), int(day), int(hour), int(minute or 0), int(second or 0),
                           tzinfo=zone).isoformat()
    except ValueError:
        return None


def _dateutil_date(text: str) -> str | None:
    """``text`` read by ``python-dateutil``, once under each of two defaults: a part that
    differs between them was not in the text (no year, month or day: no date; no hour: a
    date alone)."""
    from dateutil import parser

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown zone name: the time is kept without an offset
            a = parser.parse(text, default=dt.datetime(2000, 1, 1, 0, 0, 0))
            b = parser.parse(text, default=dt.datetime(2001, 2, 2, 1, 1, 1))
    except (ValueError, OverflowError):
        return None
    if a.date() != b.date():
        return None
    return a.date().isoformat() if a.hour != b.hour else a.isoformat()


@dataclass(slots=True)
class MetaSummary:
    """What the documents of a corpus carry: ``documents`` counted, ``with_meta`` of them with
    any metadata, ``fields`` (how many carry each typed field and ``extra``), ``sources`` (how
    many name each source) and ``first``/``last``, the earliest and latest published day
    (``YYYY-MM-DD``). Counted one document at a time (:meth:`add`), merged from parts
    (:meth:`merge`), less a part (:meth:`without`), read back from a manifest (:meth:`from_json`)."""

    documents: int = 0
    with_meta: int = 0
    fields: Counter[str] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)
    first: str | None = None
    last: str | None = None

    def add(self, meta: DocumentMeta | None) -> None:
        """Count one document, whose metadata is ``meta``."""
        self.documents += 1
        if meta is None:
            return
        self.with_meta += 1
        self.fields.update(k for k in (*META_FIELDS, "extra") if getattr(meta, k))
        if meta.source:
            self.sources[meta.source] += 1
        if meta.published:
            self._span([meta.published[:10]])

    def merge(self, other: MetaSummary) -> None:
        """Add the counts of ``other`` (a later part of the same corpus)."""
        self.documents += other.documents
        self.with_meta += other.with_meta
        self.fields.update(other.fields)
        self.sources.update(other.sources)
        self._span(d for d in (other.first, other.last) if d)

    def without(self, part: MetaSummary) -> MetaSummary | None:
        """These counts less those of ``part`` (documents counted here), or ``None`` when a day
        of ``part`` is this summary's first or last (the span of the others is then unknown)."""
        if part.first is not None and (part.first == self.first or part.last == self.last):
            return None
        return MetaSummary(self.documents - part.documents, self.with_meta - part.with_meta,
                           self.fields - part.fields, self.sources - part.sources, self.first, self.last)

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> MetaSummary | None:
        """The summary :meth:`to_json` wrote, or ``None`` when ``entry`` lists only the most
        named sources (the others' counts were not kept)."""
        if entry["source_count"] != len(entry["sources"]):
            return None
        span = entry["published"] or {}
        return cls(entry["documents"], entry["with_meta"], Counter(entry["fields"]), Counter(entry["sources"]),
                   span.get("first"), span.get("last"))

    def _span(self, days: Iterable[str]) -> None:
        for day in days:
            self.first = day if self.first is None or day < self.first else self.first
            self.last = day if self.last is None or day > self.last else self.last

    def to_json(self, top_sources: int = 10) -> dict[str, Any]:
        """The manifest's ``metadata`` component: the counts, the ``top_sources`` most named
        sources (most first, ties by name) and ``source_count``, how many there are."""
        top = sorted(self.sources.items(), key=lambda kv: (-kv[1], kv[0]))[:top_sources]
        return {"documents": self.documents, "with_meta": self.with_meta,
                "fields": {k: self.fields[k] for k in (*META_FIELDS, "extra") if self.fields[k]},
                "sources": dict(top), "source_count": len(self.sources),
                "published": {"first": self.first, "last": self.last} if self.first else None}
