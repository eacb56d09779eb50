"""A folder's files as an index records them, and a scan that reads only the files that changed.

Each regular file a walk of the folder meets (:func:`~rootweaver_innovations.documents.folders.iter_document_files`)
is a :class:`FileRecord`: its path relative to the folder, size, ``mtime_ns``, SHA-256, and the
number of chunks it gave (an index lists the files' chunks in walk order, so these numbers are
its rows) or the reason it was skipped. :func:`scan_folder` walks the folder against the records
of an earlier scan: a file with the recorded size and mtime is unchanged without being read
(unless the recorded mtime is within 2 s of ``trusted_before_ns``, where an edit that kept the
size could share the clock tick), else its SHA-256 decides; only new and changed files are read
and cut. A file larger than ``max_file_bytes`` is not hashed (SHA-256 recorded as ``""``): it is
skipped or read only up to the limit whatever it holds, so when its size or mtime moves it is
simply read again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.documents.folders import (
    ChunkingSettings,
    FileNotice,
    SkippedFile,
    iter_document_files,
    no_document_error,
    warn_notice,
)

__all__ = ["FileRecord", "ScannedFile", "read_records", "records_bytes", "scan_folder"]

_CLOCK_SLACK_NS = 2_000_000_000  # an mtime this close to the last scan is checked by content


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One file of a folder as scanned: ``path`` relative to the folder (``/``-separated),
    ``bytes`` and ``mtime_ns`` from ``stat``, ``sha256`` of its bytes (``""``: not hashed),
    ``chunks`` it gave, or the reason it was ``skipped`` (then ``chunks`` is 0)."""

    path: str
    bytes: int
    mtime_ns: int
    sha256: str
    chunks: int
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """A file met by :func:`scan_folder`: its new record, and its chunks when it was read
    (``None``: unchanged since the earlier scan, its chunks are the ones recorded then)."""

    record: FileRecord
    passages: list[Passage] | None


_COLUMNS = ("path", "bytes", "mtime_ns", "sha256", "chunks", "skipped")


def records_bytes(records: Sequence[FileRecord]) -> bytes:
    """The records as one JSON object of columns (UTF-8): ``{"path": [...], "bytes": [...],
    "mtime_ns", "sha256", "chunks", "skipped" (a reason or null)}``, files in walk order."""
    return json.dumps({name: [getattr(r, name) for r in records] for name in _COLUMNS}, ensure_ascii=False).encode("utf-8")


def read_records(path: Path) -> list[FileRecord]:
    """The records written by :func:`records_bytes`; ``ValueError`` naming ``path`` (and the
    column) for a file of the wrong shape."""
    try:
        columns = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        columns = None
    if not (isinstance(columns, dict) and list(columns) == list(_COLUMNS)
            and all(isinstance(c, list) and len(c) == len(columns["path"]) for c in columns.values())):
        raise ValueError(f"{path}: not file records (an object of the columns {', '.join(_COLUMNS)})")
    for name, ok in (("path", _is_str), ("sha256", _is_str), ("bytes", _is_count), ("mtime_ns", _is_count),
                     ("chunks", _is_count), ("skipped", lambda v: v is None or type(v) is str)):
        if not all(map(ok, columns[name])):
            raise ValueError(f"{path}: column {name!r} holds a value of the wrong type")
    return list(map(FileRecord, *columns.values()))


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def scan_folder(root: Path, settings: ChunkingSettings, conventions: Conventions,
                on_skip: Callable[[SkippedFile], None], earlier: Mapping[str, FileRecord] | None = None,
                trusted_before_ns: int = 0,
                on_notice: Callable[[FileNotice], None] = warn_notice) -> Iterator[ScannedFile]:
    """Every regular file under ``root`` in walk order, read and cut under ``settings`` and
    ``conventions`` unless ``earlier`` (records by path) shows it unchanged (see the module
    docstring; ``trusted_before_ns``: when the earlier scan ended). Every skip, an unchanged
    skipped file's included, goes to ``on_skip``. :class:`~rootweaver_innovations.documents.corpus.CorpusError`
    (once the walk is over) when no file gives a chunk, or as
    :func:`~rootweaver_innovations.documents.folders.iter_document_files` raises it."""
    earlier = earlier or {}
    skipped: list[SkippedFile] = []

    def skip(s: SkippedFile) -> None:
        skipped.append(s)
        on_skip(s)

    found = 0
    trusted = trusted_before_ns - _CLOCK_SLACK_NS
    for rel, entry, chunk in iter_document_files(root, settings, skip, conventions, on_notice):
        prev = earlier.get(rel)
        try:
            st = entry.stat()
            size, mtime = st.st_size, st.st_mtime_ns
            same = prev is not None and prev.bytes == size and prev.mtime_ns == mtime and mtime < trusted
            sha = "" if same or size > settings.max_file_bytes else _sha256(entry.path)
        except OSError:  # gone or unreadable since the walk: chunk() reports why
            size, mtime, sha, same = 0, 0, "", False
        if same or (prev is not None and sha and (prev.sha256, prev.bytes) == (sha, size)):
            record = prev if same else FileRecord(rel, size, mtime, prev.sha256, prev.chunks, prev.skipped)
            if prev.skipped is not None:
                skip(SkippedFile(rel, prev.skipped))
            found += prev.chunks
            yield ScannedFile(record, None)
            continue
        before = len(skipped)
        passages = chunk()
        reason = skipped[-1].reason if not passages and len(skipped) > before else None
        found += len(passages)
        yield ScannedFile(FileRecord(rel, size, mtime, sha, len(passages), reason), passages)
    if not found:
        raise no_document_error(Path(root), skipped)

