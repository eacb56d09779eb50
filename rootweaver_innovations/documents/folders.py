"""A folder of a user's own files as passages: one passage per chunk, with its provenance.

:func:`iter_document_passages` walks a folder recursively (each folder's files by name, then
its subfolders by name, so the result is deterministic), reads every supported file and cuts
it into chunks:

- ``.txt``/``.text``, ``.md``/``.markdown``, ``.html``/``.htm``, ``.pdf`` and the text kinds
  gzip-compressed, each read into its sections by :mod:`~rootweaver_innovations.documents.formats`.
- Each section is chunked by ``langchain-text-splitters``' ``RecursiveCharacterTextSplitter``,
  sentence-aware (paragraphs, then lines, then sentence ends, then clauses, then words),
  with size and overlap in reader tokens (the Qwen2.5 tokenizer of the budgets).
- A chunk becomes a :class:`~rootweaver_innovations.documents.corpus.Passage`: id ``"<path>#<n>"``,
  title the document's title (its front matter's ``title``, its first top heading, the HTML
  ``<title>`` or the PDF's title; in a document without one, its first heading above the
  chunk, else the name its paragraph's lead sentence is about, carried to the chunks that
  continue it, else the file name), sentences split as a JSONL corpus's are except after an
  initial or a common abbreviation, and a
  :class:`~rootweaver_innovations.documents.corpus.Source`: file path relative to the folder,
  heading path, position in the document, the ids of its neighbouring chunks and the
  document's metadata (:class:`~rootweaver_innovations.documents.metadata.DocumentMeta`: front
  matter, HTML ``<meta>`` tags, PDF document information; see
  :mod:`~rootweaver_innovations.documents.formats`).

Nothing is skipped silently: every file not chunked is reported as a :class:`SkippedFile`
with its reason (``on_skip`` hears each as it happens), every file chunked with a problem
(a front matter not read whole, a date that is not one) as a
:class:`~rootweaver_innovations.documents.corpus.FileNotice` (heard by
``on_notice``, by default a warning of the ``rootweaver.documents`` logger), and a folder
with no chunk at all raises :class:`~rootweaver_innovations.documents.corpus.CorpusError`.
Hidden files and directories (name starting with ``.``) are counted, not entered. Needs the
extra ``documents`` (``langchain-text-splitters``, ``pypdf``, ``python-frontmatter``);
without it, a one-line ``CorpusError`` says how to install it.
"""

from __future__ import annotations

import bisect
import importlib.util
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.documents.corpus import (
    CorpusError,
    FileNotice,
    Passage,
    Source,
    split_sentences,
    warn_notice,
)
from rootweaver_innovations.documents.formats import DOCUMENT_TYPES, Unreadable, kind_of, read_document
from rootweaver_innovations.defaults import CHUNK_TOKENS, MAX_FILE_BYTES, OVERLAP_TOKENS

__all__ = ["DOCUMENT_TYPES", "READING_FILE", "ChunkingSettings", "DocumentScan", "FileNotice", "ReadingBudget",
           "SkippedFile", "count_by_reason", "iter_document_files", "iter_document_passages", "load_documents",
           "load_reading_budget", "no_document_error", "passage_record", "warn_notice"]

INSTALL_HINT = "pip install 'rootweaver[documents]'"
READING_FILE = Path(__file__).resolve().parents[1] / "data" / "reading_budget.json"
_READING_SAMPLE = 512  # passages whose mean length stands for the corpus's
_CHUNK_PROBE = 16  # JSONL records whose mean length tells chunks from paragraphs
_BLOCK_CHARS = 1 << 16  # text handed to the splitter at once (a section is cut into such blocks)
_SPLITTER = "langchain-text-splitters RecursiveCharacterTextSplitter"
# coarsest first: paragraphs, lines, sentence ends, clause marks, words, characters
_SEPARATORS = (r"\n\s*\n", r"\n", r"(?<=[.!?])\s+", r"(?<=[;:,])\s+", r"\s+", "")


@dataclass(frozen=True, slots=True)
class ChunkingSettings:
    """How files are cut: ``chunk_tokens`` (>= 8) reader tokens per chunk at most, of which
    ``overlap_tokens`` (0 <= overlap < chunk / 2) repeat the end of the previous chunk; a file
    (decompressed) over ``max_file_bytes`` is skipped with its reason. ``ValueError`` otherwise."""

    chunk_tokens: int = CHUNK_TOKENS
    overlap_tokens: int = OVERLAP_TOKENS
    max_file_bytes: int = MAX_FILE_BYTES

    def __post_init__(self) -> None:
        if not (isinstance(self.chunk_tokens, int) and self.chunk_tokens >= 8):
            raise ValueError(f"chunk_tokens must be an integer >= 8, got {self.chunk_tokens!r}")
        if not (isinstance(self.overlap_tokens, int) and 0 <= 2 * self.overlap_tokens < self.chunk_tokens):
            raise ValueError(f"overlap_tokens must be an integer >= 0 and below half of chunk_tokens "
                             f"({self.chunk_tokens}), got {self.overlap_tokens!r}")
        if not (isinstance(self.max_file_bytes, int) and self.max_file_bytes >= 1):
            raise ValueError(f"max_file_bytes must be an integer >= 1, got {self.max_file_bytes!r}")

    def describe(self) -> dict[str, Any]:
        """What an index manifest records about the chunking."""
        return {"splitter": _SPLITTER, "unit": "reader tokens (Qwen2.5)", "chunk_tokens": self.chunk_tokens,
                "overlap_tokens": self.overlap_tokens, "max_file_bytes": self.max_file_bytes}


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file (or hidden directory) under the folder that yields no passage, and why."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class DocumentScan:
    """A folder read whole: its passages, the number of documents they came from, the skips
    and the files read with a problem."""

    passages: tuple[Passage, ...]
    documents: int
    skipped: tuple[SkippedFile, ...]
    notices: tuple[FileNotice, ...] = ()

    def skipped_by_reason(self) -> dict[str, int]:
        """Skipped files counted by reason, most frequent first."""
        return count_by_reason(self.skipped)


def count_by_reason(skipped: Iterable[SkippedFile]) -> dict[str, int]:
    """Skipped files counted by reason, most frequent first (ties in the order first seen)."""
    return dict(Counter(s.reason for s in skipped).most_common())


@dataclass(frozen=True, slots=True)
class ReadingBudget:
    """What the loop's passage budget means in reading: ``paragraph_tokens``, the mean reader
    tokens of the paragraphs its hop policy was fitted on (see ``provenance``), so that a
    budget of N passages reads as much of a chunked corpus as of N paragraphs."""

    paragraph_tokens: float
    provenance: Mapping[str, Any]

    def passages(self, max_passages: int, passages: Sequence[Passage]) -> int:
        """The loop's passage budget over ``passages``: for a corpus of chunks, as many as hold
        the reader tokens of ``max_passages`` paragraphs, ``round(max_passages *
        paragraph_tokens / mean chunk tokens)`` (at least 1); else ``max_passages``. Chunks are
        the passages of a folder (a ``source`` on the first passage), or records that average
        at most half a paragraph (a JSONL corpus a user chunked: 40-word windows are read 25
        or 26 at a time; whether they do is read off 16 of them, so a corpus of paragraphs
        costs 16 token counts). Means are over evenly strided samples (at most 512 passages for the
        budget), so the result is deterministic."""
        if not passages:
            return max_passages
        if passages[0].source is None and _mean_tokens(passages, _CHUNK_PROBE) > self.paragraph_tokens / 2:
            return max_passages
        return max(1, round(max_passages * self.paragraph_tokens / max(_mean_tokens(passages, _READING_SAMPLE), 1.0)))


def _mean_tokens(passages: Sequence[Passage], k: int) -> float:
    """Mean reader tokens of an evenly strided sample of at most ``k`` of ``passages`` (non-empty)."""
    count = default_token_counter().count
    sample = [passages[i] for i in range(0, len(passages), max(1, len(passages) // k))][:k]
    return sum(count(p.text) for p in sample) / len(sample)


@lru_cache(maxsize=2)
def load_reading_budget(path: Path = READING_FILE) -> ReadingBudget:
    """The shipped :class:`ReadingBudget` (read once per path); ``ValueError`` when malformed."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    tokens = data.get("paragraph_tokens") if isinstance(data, dict) else None
    if not (isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and tokens > 0):
        raise ValueError(f"{path}: paragraph_tokens must be a number > 0")
    return ReadingBudget(float(tokens), dict(data.get("provenance", {})))


def passage_record(p: Passage) -> dict[str, Any]:
    """The JSONL corpus object of ``p`` (what :func:`~rootweaver_innovations.documents.corpus.passage_from_object`
    reads back): ``{"id", "title", "sentences"}`` and, for a chunk of a document, ``"source"``
    (with ``"meta"`` only for a document with metadata); a record's own metadata as its fields
    (``headline`` for its title, ``source``, ``published``, ``author``, ``url`` and the extra ones)."""
    out: dict[str, Any] = {"id": p.id, "title": p.title, "sentences": list(p.sentences)}
    if p.meta is not None:
        typed = {"headline" if k == "title" else k: v for k, v in p.meta.to_json().items() if k != "extra"}
        out |= {**dict(p.meta.extra), **typed}
    if p.source is not None:
        s = p.source
        out["source"] = {"path": s.path, "headings": list(s.headings), "position": s.position,
                         "prev": s.prev, "next": s.next}
        if s.meta is not None:
            out["source"]["meta"] = s.meta.to_json()
    return out


def load_documents(root: str | Path, settings: ChunkingSettings = ChunkingSettings(),
                   on_skip: Callable[[SkippedFile], None] | None = None,
                   conventions: Conventions | None = None,
                   on_notice: Callable[[FileNotice], None] = warn_notice) -> DocumentScan:
    """Every chunk of the folder ``root`` as passages (see the module docstring), untitled
    text named under ``conventions`` (the default member when ``None``)."""
    skipped: list[SkippedFile] = []
    notices: list[FileNotice] = []

    def note(s: SkippedFile) -> None:
        skipped.append(s)
        if on_skip is not None:
            on_skip(s)

    def notice(n: FileNotice) -> None:
        notices.append(n)
        on_notice(n)

    passages = tuple(iter_document_passages(root, settings, note, conventions or default_conventions(), notice))
    return DocumentScan(passages, len({p.source.path for p in passages}), tuple(skipped), tuple(notices))


def iter_document_passages(root: str | Path, settings: ChunkingSettings, on_skip: Callable[[SkippedFile], None],
                           conventions: Conventions,
                           on_notice: Callable[[FileNotice], None] = warn_notice) -> Iterator[Passage]:
    """The chunks of every supported file under ``root``, file by file in :func:`_walk`'s order,
    untitled text named by its paragraphs' lead subjects under ``conventions``;
    ``on_skip`` is called for each file that yields none, ``on_notice`` once for each file
    chunked with a problem (before its chunks). :class:`CorpusError` when ``root`` is
    not a readable directory, when the extra ``documents`` is missing, or when no file yields a
    chunk (the message counts the skips by reason, :func:`no_document_error`)."""
    skipped: list[SkippedFile] = []

    def skip(s: SkippedFile) -> None:
        skipped.append(s)
        on_skip(s)

    found = 0
    for _rel, _entry, chunk in iter_document_files(root, settings, skip, conventions, on_notice):
        for p in chunk():
            found += 1
            yield p
    if not found:
        raise no_document_error(Path(root), skipped)


def no_document_error(root: Path, skipped: Iterable[SkippedFile]) -> CorpusError:
    """The error of a folder ``root`` that gave no chunk, counting its ``skipped`` files by reason."""
    counts = ", ".join(f"{n} {r}" for r, n in count_by_reason(skipped).items()) or "no files"
    return CorpusError(f"{root}: no document to index ({counts}); supported: "
                       f"{', '.join(sorted(DOCUMENT_TYPES))}, any other UTF-8 text file, and .gz of the text ones")


def iter_document_files(root: str | Path, settings: ChunkingSettings, on_skip: Callable[[SkippedFile], None],
                        conventions: Conventions, on_notice: Callable[[FileNotice], None] = warn_notice
                        ) -> Iterator[tuple[str, os.DirEntry, Callable[[], list[Passage]]]]:
    """``(path relative to root, entry, chunk)`` of every regular file under ``root`` in
    :func:`_walk`'s order, without reading it (``entry``: its :class:`os.DirEntry`, whose
    ``stat()`` follows a link): ``chunk()`` reads and cuts the file as
    :func:`iter_document_passages` does and returns its chunks, or ``[]`` after telling
    ``on_skip`` why (a caller may leave a file unread, e.g. one unchanged since an index
    recorded it). What the walk itself skips goes to ``on_skip`` as it is met. :class:`CorpusError`
    when ``root`` is not a directory or the extra ``documents`` is missing."""
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{root}: not a directory")
    split = _splitter(settings)

    def skip(rel: str, reason: str) -> None:
        on_skip(SkippedFile(rel, reason))

    for rel, entry in _walk(root, skip):
        yield rel, entry, lambda rel=rel, entry=entry: _file_chunks(rel, Path(entry.path), split, settings, conventions,
                                                                   skip, on_notice)


def _file_chunks(rel: str, path: Path, split: Callable[[str], list[str]], settings: ChunkingSettings,
                 conventions: Conventions, skip: Callable[[str, str], None],
                 on_notice: Callable[[FileNotice], None]) -> list[Passage]:
    """The chunks of the file ``path`` (``rel`` in its folder), or ``[]`` after ``skip(rel, reason)``."""
    kind = kind_of(path, rel)
    if kind is None:
        skip(rel, f"unsupported type {''.join(Path(rel).suffixes[-2:]) or '(no suffix)'}")
        return []
    try:
        doc = read_document(path, rel, kind, settings.max_file_bytes)
    except Unreadable as exc:
        skip(rel, str(exc))
        return []
    chunks = [(headings, text, subject) for headings, body in doc.sections
              for text, subject in _subjects(body, split(body), doc.title, conventions)]
    if not chunks:
        skip(rel, "no text" if doc.problem is None else f"no text ({doc.problem})")
        return []
    if doc.problem is not None:
        on_notice(FileNotice(rel, doc.problem))
    ids = [f"{rel}#{n}" for n in range(len(chunks))]
    fallback = re.sub(r"[_\-]+", " ", Path(rel.removesuffix(".gz")).stem).strip() or rel
    carried = None
    out = []
    for n, (headings, text, subject) in enumerate(chunks):
        carried = subject or carried  # untitled text: the name its paragraph is about, over cuts and sections
        out.append(Passage(ids[n], doc.title or (headings[0] if headings else None) or carried or fallback,
                           split_sentences(text, abbreviations=True),
                           Source(rel, headings, n, ids[n - 1] if n else None,
                                  ids[n + 1] if n + 1 < len(ids) else None, doc.meta)))
    return out


_BLANK_LINE = re.compile(r"\n[ \t]*\n")  # between paragraphs


def _subjects(body: str, chunks: list[str], title: str | None,
              conventions: Conventions) -> Iterator[tuple[str, str | None]]:
    """Each chunk of ``body`` with the name the paragraph it starts in is about (``None``
    when that paragraph names none, or when the document has a ``title``).

    A paragraph (text between blank lines) is about its lead sentence's subject
    (``conventions.lead_subject``), else about the last paragraph's that
    named one, so a chunk cut in the middle of a paragraph, or starting with the end of one
    paragraph and holding the next, takes the name of the paragraph it starts in, never
    that of a sentence in the middle. A chunk is placed by its first 64 characters, searched
    from the previous chunk's place on.
    """
    if title is not None:
        yield from ((c, None) for c in chunks)
        return
    starts, names, name = [], [], None
    for at in chain([0], (m.end() for m in _BLANK_LINE.finditer(body))):
        head = body[at:at + 2000]  # a lead sentence is read from the paragraph's first 2,000 characters
        head = head[: cut.start()] if (cut := _BLANK_LINE.search(head)) else head
        if head.strip():
            name = conventions.lead_subject(split_sentences(head, abbreviations=True)[0]) or name
            starts.append(at)
            names.append(name)
    at = 0
    for chunk in chunks:
        found = body.find(chunk[:64], at)
        at = found if found >= 0 else at
        k = bisect.bisect_right(starts, at) - 1
        yield chunk, names[k] if k >= 0 else None


def _walk(root: Path, skip: Callable[[str, str], None]) -> Iterator[tuple[str, os.DirEntry]]:
    """``(path relative to root, entry)`` of every file under ``root``: each folder's files by
    name, then its subfolders by name (not followed when linked); hidden entries and anything
    that is not a regular file (or a link to one) are reported to ``skip``. One ``scandir`` per
    folder: an entry's type comes with it, so a regular file costs no ``stat`` here."""
    pending = [("", root)]
    while pending:
        prefix, here = pending.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skip(prefix.rstrip("/") or ".", f"unreadable directory ({exc.strerror})")
            continue
        dirs = [e for e in entries if _is_dir(e)]
        names = {e.name for e in dirs}
        for e in dirs:
            if e.name.startswith(".") or e.is_symlink():
                skip(prefix + e.name, "hidden directory" if e.name.startswith(".") else "linked directory (not followed)")
        for e in entries:
            if e.name in names:
                continue
            if e.name.startswith("."):
                skip(prefix + e.name, "hidden file")
            elif not _is_file(e):
                skip(prefix + e.name, "not a regular file")
            else:
                yield prefix + e.name, e
        pending.extend((prefix + e.name + "/", here / e.name) for e in reversed(dirs)
                       if not e.name.startswith(".") and not e.is_symlink())


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _splitter(settings: ChunkingSettings) -> Callable[[str], list[str]]:
    """``text -> chunks`` under ``settings``; :class:`CorpusError` naming the extra when the
    text splitters are not installed. The extra is checked here, before any file is read; the
    splitter and its tokenizer are loaded by the first text cut (a scan that reads no file
    loads neither)."""
    if any(importlib.util.find_spec(name) is None for name in ("frontmatter", "pypdf", "langchain_text_splitters")):
        raise CorpusError(f"reading a folder of documents needs the extra 'documents': {INSTALL_HINT}")
    return lambda text: [c for block in _blocks(text) for c in _recursive_splitter(settings).split_text(block)
                         if c.strip()]


@lru_cache(maxsize=4)
def _recursive_splitter(settings: ChunkingSettings) -> Any:
    """The ``RecursiveCharacterTextSplitter`` of ``settings`` (sizes in reader tokens)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=settings.chunk_tokens, chunk_overlap=settings.overlap_tokens,
        length_function=default_token_counter().count, separators=list(_SEPARATORS), is_separator_regex=True,
        keep_separator="end", strip_whitespace=True)


def _blocks(text: str, size: int = _BLOCK_CHARS) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut after its last paragraph
    break, else line break, else space (a hard cut only where there is none), so the
    splitter's memory and time follow the block, not the file (a 50 MB one-line file)."""
    while len(text) > size:
        head = text[:size]
        cut = next((at + len(sep) for sep in ("\n\n", "\n", " ") if (at := head.rfind(sep)) > 0), size)
        yield text[:cut]
        text = text[cut:]
    yield text
