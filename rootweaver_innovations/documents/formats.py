"""Reading one file of a known kind into its title, its sections of text and its metadata.

``DOCUMENT_TYPES`` maps a suffix to a kind: plain text, Markdown (split at its headings by
``MarkdownHeaderTextSplitter``), HTML (``html.parser``; scripts, styles and the head left out,
split at ``h1``..``h6``) and PDF (``pypdf``, one section per page); the text kinds may be
gzip-compressed. :func:`read_document` gives a :class:`Document` or raises
:class:`Unreadable` with the reason reported for the file. File I/O only.

A Markdown or text file that opens with a YAML front matter block (a ``---`` line, ``key:
value`` lines, a closing ``---`` or ``...`` line, as Jekyll, Hugo and Obsidian write it),
closed within its first 64 Ki characters, is read with ``python-frontmatter``: the block is metadata,
not text. Its ``title`` is the document's title; ``source`` (else ``site_name``, else
``publisher``), ``published`` (else ``date``), ``author`` and ``url`` are the typed fields of a
:class:`~rootweaver_innovations.documents.corpus.DocumentMeta`, every other field with a text
value (a list of them joined by ", ") its ``extra``; a nested mapping is left out. A block
that is not valid YAML is read line by line (each top-level ``key: value`` alone, a value
that does not parse kept as written) and a date that is not ISO 8601 is kept in ``extra``:
the document keeps what could be read and :attr:`Document.problem` says what could not. A
block that reads as anything but a mapping (a Markdown rule, then prose) stays text.
"""

from __future__ import annotations

import datetime as dt
import codecs
import gzip
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rootweaver_innovations.documents.corpus import DocumentMeta

__all__ = ["DOCUMENT_TYPES", "FRONT_MATTER_CHARS", "Document", "Sections", "Unreadable", "kind_of", "read_document"]

DOCUMENT_TYPES: Mapping[str, str] = {".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
                                     ".html": "html", ".htm": "html", ".pdf": "pdf"}


class Unreadable(Exception):
    """A file that yields no text; the message is the reason reported for it."""


Sections = list[tuple[tuple[str, ...], str]]
FRONT_MATTER_CHARS = 64 << 10  # a front matter block must close within the file's first 64 Ki characters


@dataclass(frozen=True, slots=True)
class Document:
    """One file read: its own ``title`` (``None`` when it has none), its ``(heading path,
    text)`` sections, its front matter ``meta`` (``None`` without one) and the ``problem`` met
    reading it (``None``, else one line saying what was not read as written)."""

    title: str | None
    sections: Sections
    meta: DocumentMeta | None = None
    problem: str | None = None


_SNIFF_BYTES = 8192  # what is read of a file without a known suffix to tell text from binary
_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")  # control characters text may hold


def kind_of(path: Path, rel: str) -> str | None:
    """How to read the file at ``path`` (``rel`` its name in the folder): the kind its suffix
    names (:data:`DOCUMENT_TYPES`, under a ``.gz``), else ``"text"`` when its first 8 KiB
    (decompressed for ``.gz``) are UTF-8 with no NUL and at most 1% other control characters
    (``README``, ``NEWS``, ``COPYING``, ``CHANGES.gz``); ``None`` for anything else (a binary
    file, a gzipped PDF, a ``.gz`` that does not decompress)."""
    gz = rel.endswith(".gz")
    kind = DOCUMENT_TYPES.get(Path(rel.removesuffix(".gz")).suffix.lower())
    if kind is not None:
        return None if kind == "pdf" and gz else kind
    try:
        with (gzip.open if gz else open)(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    controls = sum(1 for c in text if c < " " and c not in _TEXT_CONTROLS)
    return "text" if text.strip() and "\x00" not in text and controls <= len(text) / 100 else None


def read_document(path: Path, rel: str, kind: str, cap: int) -> Document:
    """The :class:`Document` of the file at ``path`` (``rel`` its name in the folder, ``kind``
    one of :data:`DOCUMENT_TYPES`' values, ``cap`` the most bytes read); :class:`Unreadable`."""
    if kind == "pdf":
        return Document(*_read_pdf(path, cap))
    raw = _bytes(path, cap, rel.endswith(".gz"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if kind == "html":
        parser = _HTMLSections()
        parser.feed(text)
        parser.close()
        return Document(parser.title or None, parser.sections)
    fields, text, problems = _front_matter(text)
    meta = _meta(fields, problems) if fields else None
    title, sections = _markdown_sections(text) if kind == "markdown" else (None, [((), text)])
    return Document((meta.title if meta else None) or title, sections, meta, "; ".join(problems) or None)


_SOURCE_KEYS = ("source", "site_name", "publisher")  # the first one set is DocumentMeta.source
_DATE_KEYS = ("published", "date")  # the first one set is DocumentMeta.published
_KEY_LINE = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")  # a top-level `key: value` line
_CLOSE = re.compile(r"^(?:-{3,}|\.{3})[ \t\r]*$", re.MULTILINE)  # the line that ends a front matter block


def _yaml_failures() -> tuple[type[BaseException], ...]:
    """What reading a front matter can raise: not YAML, a timestamp that is no date
    (``ValueError``), a number out of range, nesting too deep."""
    import yaml

    return yaml.YAMLError, ValueError, OverflowError, RecursionError


def _front_matter(text: str) -> tuple[dict[str, Any], str, list[str]]:
    """``(fields, text without the block, problems)`` of ``text`` that opens with a front
    matter block; ``({}, text, [])`` for any other text."""
    if not text.startswith("---"):
        return {}, text, []
    from frontmatter import YAMLHandler

    yaml_block = YAMLHandler()
    opened = yaml_block.FM_BOUNDARY.match(text)
    closed = opened and _CLOSE.search(text, opened.end())
    if not closed or closed.start() > FRONT_MATTER_CHARS:
        return {}, text, []
    block, body = text[opened.end():closed.start()], text[closed.end():].lstrip("\r\n")
    try:
        data = yaml_block.load(block)
    except _yaml_failures() as exc:
        fields = _fields_line_by_line(block, yaml_block)
        if not fields:
            return {}, text, []
        mark, first_line = getattr(exc, "problem_mark", None), text.count("\n", 0, opened.end()) + 1
        where = f"line {first_line + mark.line}: " if mark is not None else ""
        why = " ".join(str(getattr(exc, "problem", None) or exc).split())[:120]
        return fields, body, [f"front matter not read whole ({where}{why}); its fields were read one line at a time"]
    if data is None:
        return {}, body, []
    if not isinstance(data, dict):
        return {}, text, []
    return {str(k): v for k, v in data.items()}, body, []


def _fields_line_by_line(block: str, yaml_block: Any) -> dict[str, Any]:
    """The top-level ``key: value`` lines of a block that is not valid YAML, each value parsed
    alone, else kept as written (one pair of enclosing quotes removed)."""
    fields: dict[str, Any] = {}
    for line in block.splitlines():
        if (m := _KEY_LINE.fullmatch(line)) is None:
            continue
        value = m.group(2) or ""
        try:
            fields[m.group(1)] = yaml_block.load(value)
        except _yaml_failures():
            quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'"
            fields[m.group(1)] = value[1:-1] if quoted else value
    return fields


def _meta(fields: dict[str, Any], problems: list[str]) -> DocumentMeta | None:
    """The :class:`DocumentMeta` of a front matter's fields (``None`` when none has a value);
    a date that is not ISO 8601 goes to ``extra`` and to ``problems``."""
    values = {k: v for k, v in ((k, _text(v)) for k, v in fields.items()) if v is not None}
    lower = {k.lower(): k for k in reversed(values)}  # a key as first written, whatever its case

    def take(*names: str) -> str | None:
        return next((values.pop(lower[n]) for n in names if lower.get(n) in values), None)

    title, source, author, url = take("title"), take(*_SOURCE_KEYS), take("author"), take("url")
    date_key = next((lower[n] for n in _DATE_KEYS if lower.get(n) in values), None)
    published = _iso_date(values[date_key]) if date_key else None
    if date_key and published is None:
        problems.append(f"front matter {date_key!r} is not an ISO 8601 date ({values[date_key][:40]!r}); kept as text")
    elif date_key:
        values.pop(date_key)
    if not (title or source or published or author or url or values):
        return None
    return DocumentMeta(title, source, published, author, url, tuple(values.items()))


def _text(value: Any) -> str | None:
    """A front matter value as one line of text: a scalar, or a list of scalars joined by
    ", "; ``None`` for an empty value or a nested mapping."""
    if isinstance(value, list):
        return ", ".join(t for v in value if not isinstance(v, (list, dict)) and (t := _text(v)) is not None) or None
    if isinstance(value, dict) or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return " ".join(str(value).split()) or None


def _iso_date(text: str) -> str | None:
    """``text`` as an ISO 8601 date or date and time (``datetime.fromisoformat``; its offset,
    when it has one, kept), else ``None``."""
    for parse in (dt.date.fromisoformat, dt.datetime.fromisoformat):  # a date stays a date
        try:
            return parse(text).isoformat()
        except ValueError:
            continue
    return None


def _bytes(path: Path, cap: int, gz: bool) -> bytes:
    """The file's bytes (decompressed for ``gz``), refused past ``cap`` without reading more."""
    try:
        if not gz and path.stat().st_size > cap:
            raise Unreadable(f"larger than the {cap:,}-byte file limit (chunking.max_file_bytes)")
        with (gzip.open if gz else open)(path, "rb") as fh:
            data = fh.read(cap + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise Unreadable(f"unreadable ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    if len(data) > cap:
        raise Unreadable(f"decompresses past the {cap:,}-byte file limit (chunking.max_file_bytes)")
    return data


def _markdown_sections(text: str) -> tuple[str | None, Sections]:
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    levels = [("#" * n, f"h{n}") for n in range(1, 7)]
    docs = MarkdownHeaderTextSplitter(levels, strip_headers=True).split_text(text)
    sections = [(tuple(d.metadata[k] for _, k in levels if k in d.metadata), d.page_content) for d in docs]
    return next((d.metadata["h1"] for d in docs if "h1" in d.metadata), None), sections


def _read_pdf(path: Path, cap: int) -> tuple[str | None, Sections]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        if path.stat().st_size > cap:
            raise Unreadable(f"larger than the {cap:,}-byte file limit (chunking.max_file_bytes)")
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted PDF")
        pages = [((f"page {n}",), page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]
        title = reader.metadata.title if reader.metadata else None
    except Unreadable:
        raise
    except (PyPdfError, OSError, ValueError, KeyError, TypeError) as exc:
        raise Unreadable(f"unreadable PDF ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    return " ".join(str(title or "").split()) or None, pages


class _HTMLSections(HTMLParser):
    """HTML text by heading section: ``sections`` of ``(heading path, text)``, ``title``."""

    _HIDDEN = frozenset({"script", "style", "head", "noscript", "template", "svg"})
    _BLOCKS = frozenset({"p", "div", "li", "br", "tr", "td", "th", "section", "article", "blockquote", "pre",
                         "ul", "ol", "table", "dd", "dt", "figcaption", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[tuple[str, ...], str]] = []
        self.title = ""
        self._path: list[tuple[int, str]] = []
        self._parts: list[str] = []
        self._hidden = 0
        self._heading: tuple[int, list[str]] | None = None
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._HIDDEN:
            self._hidden += 1
        elif tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self._end_heading()
            self._flush()
            self._heading = (int(tag[1]), [])
        elif tag in self._BLOCKS:
            if tag != "br":
                self._end_heading()  # a block inside a heading ends it (an unclosed <h2> keeps no text)
            self._parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag):
            self._end_heading()
        elif tag in self._BLOCKS:
            self._parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = " ".join(f"{self.title} {data}".split())
        elif self._hidden:
            return
        elif self._heading is not None:
            self._heading[1].append(data)
        else:
            self._parts.append(data)

    def close(self) -> None:
        super().close()
        self._end_heading()
        self._flush()

    def _end_heading(self) -> None:
        """The open heading (if any) becomes the last step of the heading path."""
        if self._heading is not None:
            level, words = self._heading
            self._heading = None
            self._path = [(lv, h) for lv, h in self._path if lv < level] + [(level, " ".join("".join(words).split()))]

    def _flush(self) -> None:
        text = "".join(self._parts).strip()
        if text:
            self.sections.append((tuple(h for _, h in self._path if h), text))
        self._parts = []
