"""Reading one file of a known kind into its title and its sections of text.

``DOCUMENT_TYPES`` maps a suffix to a kind: plain text, Markdown (split at its headings by
``MarkdownHeaderTextSplitter``), HTML (``html.parser``; scripts, styles and the head left out,
split at ``h1``..``h6``) and PDF (``pypdf``, one section per page); the text kinds may be
gzip-compressed. :func:`read_document` gives ``(title or None, [(heading path, text), ...])``
or raises :class:`Unreadable` with the reason reported for the file. File I/O only.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

__all__ = ["DOCUMENT_TYPES", "Sections", "Unreadable", "read_document"]

DOCUMENT_TYPES: Mapping[str, str] = {".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
                                     ".html": "html", ".htm": "html", ".pdf": "pdf"}


class Unreadable(Exception):
    """A file that yields no text; the message is the reason reported for it."""


Sections = list[tuple[tuple[str, ...], str]]


def read_document(path: Path, rel: str, kind: str, cap: int) -> tuple[str | None, Sections]:
    """The document's own title (``None`` when it has none) and its ``(heading path, text)``
    sections; :class:`Unreadable`."""
    if kind == "pdf":
        return _read_pdf(path, cap)
    raw = _bytes(path, cap, rel.endswith(".gz"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if kind == "markdown":
        return _markdown_sections(text)
    if kind == "html":
        parser = _HTMLSections()
        parser.feed(text)
        parser.close()
        return parser.title or None, parser.sections
    return None, [((), text)]


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
