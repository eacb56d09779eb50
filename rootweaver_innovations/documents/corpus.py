"""Passages and the loaders that turn files into them.

A user's corpus is JSONL, one ``{"id", "title", "text"}`` object per line (its other fields,
``source``, ``published_at``, ``author``, ``url``..., are the record's
:class:`~rootweaver_innovations.documents.metadata.DocumentMeta`), or a folder of files that
:mod:`rootweaver_innovations.documents.folders` cuts into such passages. (The multi-hop dev
sets the evals read are loaded by :mod:`evals.qa_rows`.)
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rootweaver_innovations.defaults import MAX_RECORD_BYTES
from rootweaver_innovations.documents.metadata import META_FIELDS, DocumentMeta, MetaSummary, meta_of
from rootweaver_innovations.text import MONTHS

__all__ = [
    "CorpusError",
    "DocumentMeta",
    "FileNotice",
    "MAX_RECORD_BYTES",
    "Passage",
    "Source",
    "bounded_lines",
    "load_corpus_jsonl",
    "meta_summary",
    "passage_from_object",
    "read_jsonl",
    "record_object",
    "split_sentences",
    "warn_notice",
]


class CorpusError(ValueError):
    """A corpus or dataset file is missing or malformed; the message names file and line."""


def bounded_lines(fh: Any, path: Path, max_record_bytes: int) -> Iterator[bytes]:
    """The lines of the binary file ``fh`` (newline kept), each read with
    ``readline(max_record_bytes + 1)`` so a longer record is never held whole: it raises
    :class:`CorpusError` naming ``path``, the line and the limit as soon as its first
    ``max_record_bytes + 1`` bytes are read (cost: the limit, not the record)."""
    lineno = 0
    while line := fh.readline(max_record_bytes + 1):
        lineno += 1
        if len(line) > max_record_bytes:
            raise CorpusError(f"{path}:{lineno}: record longer than the per-record limit of {max_record_bytes:,} "
                              "bytes (--max-record-bytes, retriever.max_record_bytes); split it or raise the limit")
        yield line


@dataclass(frozen=True, slots=True)
class FileNotice:
    """A file (or a corpus line, ``path`` then ``"corpus.jsonl:7"``) read with what could be
    read, and the ``problem`` with the rest (one line)."""

    path: str
    problem: str


def warn_notice(notice: FileNotice) -> None:
    """The default hearer of :class:`FileNotice`: one warning of the ``rootweaver.documents``
    logger naming the file and the problem."""
    logging.getLogger("rootweaver.documents").warning("read %s with a problem: %s", notice.path, notice.problem)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a chunk of a user's document came from: ``path`` (relative to the corpus folder),
    ``headings`` (the Markdown/HTML heading path, or ``("page N",)`` in a PDF), ``position``
    (0-based chunk number in its document), the ids of the chunks before and after it
    (``None`` at either end) and the document's metadata ``meta`` (``None`` without any)."""

    path: str
    headings: tuple[str, ...] = ()
    position: int = 0
    prev: str | None = None
    next: str | None = None
    meta: DocumentMeta | None = None


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrievable unit. ``sentences`` is the text split into facts (at least one);
    ``source`` is set for a chunk of a document (:mod:`rootweaver_innovations.documents.folders`),
    which carries its document's metadata; ``meta`` is a record's own (a JSONL record's fields
    beyond its text, :func:`passage_from_object`), ``None`` for a chunk."""

    id: str
    title: str
    sentences: tuple[str, ...]
    source: Source | None = None
    meta: DocumentMeta | None = None

    @property
    def text(self) -> str:
        return " ".join(s.strip() for s in self.sentences)


_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


_MONTH_CUTS = "|".join([m[:3].lower() for m in MONTHS if len(m) > 3] + ["sept"])  # jan ... dec; May is never cut
# a word before a full stop that does not end a sentence: an initial, or a common abbreviation
_ABBREVIATION = re.compile(r"(?:^|[\s(\[\"'\u201c\u2018])(?:[A-Za-z]|ca|c|cf|fl|approx|e\.g|i\.e|etc|vs|no|vol|pp?|fig|"
                           rf"st|mt|dr|mr|mrs|ms|prof|jr|sr|inc|ltd|co|corp|{_MONTH_CUTS}|u\.s|u\.k)\.$", re.IGNORECASE)


def split_sentences(text: str, *, abbreviations: bool = False) -> tuple[str, ...]:
    """Split ``text`` at sentence ends followed by a capital, digit or quote; with
    ``abbreviations``, not after an initial or a common abbreviation ("ca. 2400 BC",
    "J. S. Bach", "St. Louis"). A corpus record's ``text`` and documents
    (:mod:`rootweaver_innovations.documents.folders`) use ``abbreviations``; the dev sets' own
    paragraphs (MuSiQue's ``paragraph_text``) keep the plain rule the evals were measured with.

    Deterministic and model-free; returns ``(text,)`` for text with no such break.
    """
    parts = [p.strip() for p in _SENT_SPLIT.split(text.strip()) if p.strip()]
    if abbreviations:
        merged: list[str] = []
        for part in parts:
            if merged and _ABBREVIATION.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {part}"
            else:
                merged.append(part)
        parts = merged
    return tuple(parts) or (text.strip(),)


def read_jsonl(path: Path, max_record_bytes: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` per non-blank line of a JSONL file (``.gz`` read transparently).

    Raises :class:`CorpusError` naming the file (and line) for a missing or unreadable file,
    a line longer than ``max_record_bytes`` (refused before it is read whole, see
    :func:`bounded_lines`), a line that is not UTF-8, malformed or too deeply nested JSON,
    or a line that is not a JSON object.
    """
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rb") as fh:
            for lineno, raw in enumerate(bounded_lines(fh, path, max_record_bytes), 1):
                if raw.strip():
                    yield lineno, record_object(path, lineno, raw)
    except (OSError, EOFError, zlib.error) as exc:  # unreadable file, bad or truncated gzip
        raise CorpusError(f"{path}:{lineno + 1}: cannot read ({exc})") from None


def record_object(path: Path, lineno: int, raw: bytes) -> dict[str, Any]:
    """The JSON object of one non-blank corpus line; :class:`CorpusError` naming ``path:lineno``
    for bytes that are not UTF-8, malformed or too deeply nested JSON, or a value that is not
    an object. Read by :func:`load_corpus_jsonl` and the index build alike."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}:{lineno}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                          f"{exc.start + 1})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ("" if lineno > 1 or _is_jsonl_name(path)
                else "; a corpus file must be JSONL: to index documents, give their folder")
        raise CorpusError(f"{path}:{lineno}: malformed JSON ({exc.msg}){hint}") from None
    except RecursionError:
        raise CorpusError(f"{path}:{lineno}: JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise CorpusError(f"{path}:{lineno}: expected a JSON object")
    return obj


def _is_jsonl_name(path: Path) -> bool:
    """Whether ``path`` is named like JSON lines (``.jsonl``, ``.ndjson``, ``.json``, or one of
    them ``.gz``): a first line that does not parse in any other file is likely a document."""
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    return bool(suffixes) and suffixes[0] in (".jsonl", ".ndjson", ".json")


def passage_from_object(obj: dict[str, Any], path: Path, lineno: int,
                        on_notice: Callable[[FileNotice], None] | None = None) -> Passage:
    """The :class:`Passage` of one corpus line (``{"id", "title", "text"}``, or ``sentences``,
    a list of strings, instead of ``text``); :class:`CorpusError` naming ``path:lineno`` and the
    field for a missing, null or mistyped field, or sentences that are all blank.

    A ``source`` object says where a chunk came from (:class:`Source`, with its document's
    metadata); without one, the record's other fields (``source`` as a string, ``published_at``,
    ``author``, ``url``, anything else with a text value) are its ``meta``
    (:func:`~rootweaver_innovations.documents.metadata.meta_of`). A date among them that does
    not read is kept as text and ``on_notice`` hears it once, naming ``path:lineno``."""
    for key in ("id", "title"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise CorpusError(f"{path}:{lineno}: field {key!r} must be a non-empty string, got {_kind(obj.get(key))}")
    if isinstance(obj.get("sentences"), list) and obj["sentences"]:
        try:
            sents = _sentences(obj["sentences"], "sentences")
        except CorpusError as exc:
            raise CorpusError(f"{path}:{lineno}: {exc}") from None
    elif isinstance(obj.get("text"), str) and obj["text"].strip():
        sents = split_sentences(obj["text"], abbreviations=True)
    else:
        raise CorpusError(f"{path}:{lineno}: field 'text' must be a non-empty string, got {_kind(obj.get('text'))}")
    source = meta = None
    if obj.get("source") is not None and not isinstance(obj["source"], str):
        try:
            source = _source(obj["source"])
        except CorpusError as exc:
            raise CorpusError(f"{path}:{lineno}: {exc}") from None
    elif any(k not in _RECORD_FIELDS for k in obj):
        meta, problem = meta_of({k: v for k, v in obj.items() if k not in _RECORD_FIELDS})
        if problem and on_notice is not None:
            on_notice(FileNotice(f"{path}:{lineno}", f"field {problem}"))
    return Passage(obj["id"], obj["title"], sents, source, meta)


_RECORD_FIELDS = frozenset({"id", "title", "text", "sentences"})  # what a record is, not what it says of itself


def _source(value: Any) -> Source:
    """The :class:`Source` of a record's ``source`` object; :class:`CorpusError` naming the field."""
    if not isinstance(value, dict):
        raise CorpusError(f"field 'source' must be an object, got {_kind(value)}")
    path = _string(value.get("path"), "source.path")
    headings = value.get("headings", [])
    if not (isinstance(headings, list) and all(isinstance(h, str) for h in headings)):
        raise CorpusError("field 'source.headings' must be a list of strings")
    position = value.get("position", 0)
    if not (isinstance(position, int) and not isinstance(position, bool) and position >= 0):
        raise CorpusError(f"field 'source.position' must be an integer >= 0, got {_kind(position)}")
    for key in ("prev", "next"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise CorpusError(f"field 'source.{key}' must be a string or null, got {_kind(value[key])}")
    meta = None if value.get("meta") is None else _meta(value["meta"])
    return Source(path, tuple(headings), position, value.get("prev"), value.get("next"), meta)


def _meta(value: Any) -> DocumentMeta:
    """The :class:`DocumentMeta` of a record's ``source.meta`` object; :class:`CorpusError`
    naming the field."""
    if not isinstance(value, dict):
        raise CorpusError(f"field 'source.meta' must be an object, got {_kind(value)}")
    for key in META_FIELDS:
        if value.get(key) is not None:
            _string(value[key], f"source.meta.{key}")
    extra = value.get("extra", {})
    if not (isinstance(extra, dict) and all(isinstance(v, str) for v in extra.values())):
        raise CorpusError("field 'source.meta.extra' must be an object of strings")
    return DocumentMeta(*(value.get(key) for key in META_FIELDS), tuple(extra.items()))


def load_corpus_jsonl(path: str | Path, max_record_bytes: int = MAX_RECORD_BYTES,
                      on_notice: Callable[[FileNotice], None] = warn_notice) -> list[Passage]:
    """Load ``{"id", "title", "text"}`` lines (``sentences``, a list of strings, may replace ``text``;
    an optional ``source`` object, :class:`Source`'s fields, says where a chunk came from; other
    fields are the record's metadata, a date among them that does not read heard by
    ``on_notice``, see :func:`passage_from_object`).

    Raises :class:`CorpusError` naming the file and line for a missing file, a record
    (line) longer than ``max_record_bytes`` (refused before it is read whole), bad JSON,
    a missing or non-string field, sentences that are all blank, a duplicate id, or an
    empty corpus.
    """
    path = Path(path)
    passages: list[Passage] = []
    seen: set[str] = set()
    for lineno, obj in read_jsonl(path, max_record_bytes):
        passage = passage_from_object(obj, path, lineno, on_notice)
        if passage.id in seen:
            raise CorpusError(f"{path}:{lineno}: duplicate id {passage.id!r}")
        seen.add(passage.id)
        passages.append(passage)
    if not passages:
        raise CorpusError(f"{path}: no passages")
    return passages


_JSON_KINDS = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
               list: "an array", dict: "an object"}


def _kind(value: Any) -> str:
    """How a JSON value is named in an error: ``null``, ``an empty string``, ``a number``..."""
    if value == "":
        return "an empty string"
    if isinstance(value, str) and not value.strip():
        return "a blank string"
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _string(value: Any, name: str) -> str:
    """``value`` when it is a non-blank string, else a :class:`CorpusError` naming field ``name``."""
    if not isinstance(value, str) or not value.strip():
        raise CorpusError(f"field {name!r} must be a non-empty string, got {_kind(value)}")
    return value


def _sentences(value: Any, name: str) -> tuple[str, ...]:
    """The stripped non-blank strings of the list ``value``; an error when there is none."""
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise CorpusError(f"field {name!r} must be a list of strings")
    sents = tuple(s.strip() for s in value if s.strip())
    if not sents:
        raise CorpusError(f"field {name!r} has no non-blank sentence")
    return sents


def meta_summary(records: Path) -> MetaSummary:
    """The :class:`~rootweaver_innovations.documents.metadata.MetaSummary` of an index's records
    file, counting each record, or the first chunk of each document, once (what ``index build``
    counts while it reads); :class:`CorpusError` naming the file and line for a bad record."""
    meta = MetaSummary()
    for lineno, obj in read_jsonl(records):
        p = passage_from_object(obj, records, lineno, lambda _notice: None)
        if p.source is None or p.source.position == 0:
            meta.add(p.meta if p.source is None else p.source.meta)
    return meta
