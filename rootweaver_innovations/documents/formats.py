"""Reading one file of a known kind into its title, its sections of text and its metadata.

``DOCUMENT_TYPES`` maps a suffix to a kind: plain text, Markdown (split at its headings by
``MarkdownHeaderTextSplitter``), HTML (``html.parser``; scripts, styles, navigation and the
head left out, split at ``h1``..``h6``) and PDF (``pypdf``, one section per page); the text
kinds may be gzip-compressed. :func:`read_document` gives a :class:`Document` or raises
:class:`Unreadable` with the reason reported for the file. File I/O only.

Metadata (:class:`~rootweaver_innovations.documents.metadata.DocumentMeta`, read by
:func:`~rootweaver_innovations.documents.metadata.meta_of`): an HTML page's ``<meta>`` tags
(``name``, ``property`` or ``itemprop``; its ``og:title``, else its ``<title>``, is the title)
and canonical ``<link>``; a PDF's document information (``/Title``, ``/Author``,
``/CreationDate``); a Markdown or text file's YAML front matter (a ``---`` line, ``key:
value`` lines, a closing ``---`` or ``...`` line, as Jekyll, Hugo and Obsidian write it),
closed within its first 64 Ki characters and read with ``python-frontmatter``: the block is
metadata, not text, and its fields with a text value that fill no typed field are its
``extra`` (a nested mapping is left out). A block that is not valid YAML is read line by
line (each top-level ``key: value`` alone, a value that does not parse kept as written), and
a date that does not read is kept as text: the document keeps what could be read and
:attr:`Document.problem` says what could not. A block that reads as anything but a mapping
(a Markdown rule, then prose) stays text.
"""

from __future__ import annotations

import codecs
import gzip
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rootweaver_innovations.documents.metadata import DocumentMeta, meta_of

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
    text)`` sections, its metadata ``meta`` (``None`` without any) and the ``problem`` met
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
        return _read_pdf(path, cap)
    raw = _bytes(path, cap, rel.endswith(".gz"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if kind == "html":
        parser = _HTMLSections()
        parser.feed(text)
        parser.close()
        title = parser.meta.get("og:title") or parser.title  # og:title has no " - Site name" suffix
        meta, problem = meta_of({**parser.meta, "title": title}, keep_extra=False)
        return Document(meta.title if meta else None, parser.sections, meta, problem and f"<meta> {problem}")
    fields, text, problems = _front_matter(text)
    meta, problem = meta_of(fields) if fields else (None, None)
    if problem:
        problems.append(f"front matter {problem}")
    title, sections = _markdown_sections(text) if kind == "markdown" else (None, [((), text)])
    return Document((meta.title if meta else None) or title, sections, meta, "; ".join(problems) or None)


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


def _read_pdf(path: Path, cap: int) -> Document:
    """A PDF's pages, one section each, and its document information: ``/Title``, ``/Author``
    and ``/CreationDate`` (a PDF date) as :class:`DocumentMeta` (``/Producer`` and the rest
    left out); a creation date that does not read is kept as text and is the problem."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        if path.stat().st_size > cap:
            raise Unreadable(f"larger than the {cap:,}-byte file limit (chunking.max_file_bytes)")
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted PDF")
        pages = [((f"page {n}",), page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]
        info = reader.metadata
        fields = {} if info is None else {"title": info.title, "author": info.author,
                                          "CreationDate": _pdf_string(info.creation_date_raw)}
    except Unreadable:
        raise
    except (PyPdfError, OSError, ValueError, KeyError, TypeError) as exc:
        raise Unreadable(f"unreadable PDF ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    meta, problem = meta_of(fields, keep_extra=False)
    return Document(meta.title if meta else None, pages, meta, problem and f"document info {problem}")


def _pdf_string(value: Any) -> str | None:
    """A document information value as text (``None`` for anything but a string)."""
    return str(value) if isinstance(value, (str, bytes)) else None


class _HTMLSections(HTMLParser):
    """HTML text by heading section: ``sections`` of ``(heading path, text)``, ``title``
    (the ``<title>``) and ``meta`` (the ``<meta>`` and canonical ``<link>`` tags, :meth:`_tag`)."""

    _HIDDEN = frozenset({"script", "style", "head", "noscript", "template", "svg", "nav"})
    _BLOCKS = frozenset({"p", "div", "li", "br", "tr", "td", "th", "section", "article", "blockquote", "pre",
                         "ul", "ol", "table", "dd", "dt", "figcaption", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[tuple[str, ...], str]] = []
        self.title = ""
        self.meta: dict[str, str] = {}
        self._path: list[tuple[int, str]] = []
        self._parts: list[str] = []
        self._hidden = 0
        self._heading: tuple[int, list[str]] | None = None
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("meta", "link"):
            self._tag(tag, dict(attrs))
        elif tag in self._HIDDEN:
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

    def _tag(self, tag: str, attrs: dict[str, str | None]) -> None:
        """A ``<meta>`` tag's ``content`` under its ``name``, ``property`` or ``itemprop``, or a
        ``<link rel="canonical">``'s ``href`` under ``canonical`` (lower case; the first kept)."""
        if tag == "link":
            key = "canonical" if "canonical" in (attrs.get("rel") or "").lower().split() else None
            value = attrs.get("href")
        else:
            key = attrs.get("name") or attrs.get("property") or attrs.get("itemprop")
            value = attrs.get("content")
        if key and value and value.strip():
            self.meta.setdefault(key.strip().lower(), value)

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
