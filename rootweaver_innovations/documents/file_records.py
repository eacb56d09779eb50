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
from collections.abc import Callable, Iterable, Iterator, Mapping
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

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "bytes": self.bytes, "mtime_ns": self.mtime_ns, "sha256": self.sha256,
               "chunks": self.chunks}
        return out if self.skipped is None else {**out, "skipped": self.skipped}


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """A file met by :func:`scan_folder`: its new record, and its chunks when it was read
    (``None``: unchanged since the earlier scan, its chunks are the ones recorded then)."""

    record: FileRecord
    passages: list[Passage] | None


def records_bytes(records: Iterable[FileRecord]) -> bytes:
    """The records as JSON lines (UTF-8), one per file in walk order."""
    return b"".join(json.dumps(r.to_json(), ensure_ascii=False).encode("utf-8") + b"\n" for r in records)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_records(path: Path) -> list[FileRecord]:
    """The records written by :func:`records_bytes`; ``ValueError`` naming ``path`` and the
    line for one of the wrong shape."""
    out = []
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                obj = None
            if not (isinstance(obj, dict) and set(obj) - {"skipped"} == {"path", "bytes", "mtime_ns", "sha256", "chunks"}
                    and isinstance(obj["path"], str) and isinstance(obj["sha256"], str)
                    and all(_is_int(obj[k]) for k in ("bytes", "mtime_ns", "chunks"))
                    and isinstance(obj.get("skipped", ""), str)):
                raise ValueError(f"{path}:{lineno}: not a file record")
            out.append(FileRecord(**obj))
    return out


def _sha256(path: Path) -> str:
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
    for rel, path, chunk in iter_document_files(root, settings, skip, conventions, on_notice):
        prev = earlier.get(rel)
        try:
            st = path.stat()
            size, mtime = st.st_size, st.st_mtime_ns
            same = (prev is not None and (prev.bytes, prev.mtime_ns) == (size, mtime)
                    and mtime < trusted_before_ns - _CLOCK_SLACK_NS)
            sha = "" if same or size > settings.max_file_bytes else _sha256(path)
        except OSError:  # gone or unreadable since the walk: chunk() reports why
            size, mtime, sha, same = 0, 0, "", False
        if same or (prev is not None and sha and (prev.sha256, prev.bytes) == (sha, size)):
            record = FileRecord(rel, size, mtime, prev.sha256, prev.chunks, prev.skipped)
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

