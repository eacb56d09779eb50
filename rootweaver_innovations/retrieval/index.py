"""A retrieval index built once from a JSONL corpus (or a folder of documents, chunked into
one first), saved, versioned and memory-mapped.

Layout of an index directory (``rootweaver index build CORPUS --out DIR``)::

    DIR/manifest.json            format, format_version, corpus fingerprint, tokenizer
                                 settings, and one entry per named component
    DIR/passages/records.jsonl   the corpus's JSON lines, one per passage (blank lines dropped)
    DIR/passages/offsets.npy     int64 byte offsets, N + 1
    DIR/bm25/indptr.npy ...      the BM25Matrix arrays (indices, robertson, lucene) and
    DIR/bm25/vocab.json          the terms in column order
    DIR/titles/*.npy             the loop's title index (:class:`~rootweaver_innovations.loop.titles.TitleArrays`)

Components are named entries of ``manifest["components"]`` (``passages``, ``bm25``,
``titles``, and for a folder ``chunking``: the chunk settings, document count and skips),
each with its own files and parameters, so another index the loop needs is added as a new
component without changing the others; :meth:`OpenIndex.component` refuses a missing one
with a message saying to rebuild. An index built before ``titles`` existed still opens:
the loop then builds its title index from the passages (slow on a large corpus; rebuild).

:func:`open_index` maps every array read-only (worker processes on the same index share
the pages) and refuses, with one :class:`IndexFormatError` line naming the directory or
the file, an index whose format version or tokenizer settings differ from the running
code's, a manifest of the wrong shape or types, a missing file or one whose size is not
the manifest's, an array of the wrong dtype, rank or length, out-of-range passage ids,
an ``indptr`` that does not start at 0 or goes backwards, non-finite scores, offsets
that do not partition the records file, a vocabulary that is not a list of distinct
strings, or (when a corpus file is given) one built from another corpus (SHA-256 of the
file's bytes). A record that fails to parse at query time is refused likewise, naming
the records file and line. :func:`verify_index` adds the SHA-256 of every file against
the manifest (``rootweaver index verify DIR``).

Every file's size and SHA-256 are in ``manifest["files"]``. A build writes into a
temporary sibling directory and renames it when complete; an interrupted build
(exception, SIGINT, SIGTERM) removes it and stops its worker processes, workers die with
their parent (``PR_SET_PDEATHSIG`` on Linux) and ignore SIGINT (the parent handles it),
and a build removes the temporary directories that killed builds (SIGKILL) left beside
its output.

:func:`build_index` streams the corpus: chunks of lines are parsed and tokenised (by
``workers`` processes), written and counted, and their ``(term, passage, tf)`` triples
spill to a temporary file that a second pass scatters into the memory-mapped matrix. So
memory grows with the vocabulary, an id and two integers per passage, and a few chunks,
not with the corpus text.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import mmap
import os
import shutil
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any, overload

import numpy as np

from rootweaver_innovations.retrieval.bm25_matrix import IDFS, BM25Matrix, Vocabulary, count_chunk, scatter_scores
from rootweaver_innovations.documents.corpus import (
    MAX_RECORD_BYTES,
    CorpusError,
    Passage,
    bounded_lines,
    passage_from_object,
    record_object,
)
from rootweaver_innovations.documents.folders import (
    ChunkingSettings,
    SkippedFile,
    count_by_reason,
    iter_document_passages,
    passage_record,
)
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, passage_tokens, tokenizer_settings
from rootweaver_innovations.loop.titles import (
    TITLE_COUNTS,
    TITLE_DTYPES,
    TITLE_FILES,
    TitleArrays,
    TitleBatch,
    TitleIndex,
    file_subjects,
    last_file_subject,
    passage_keys,
)

__all__ = [
    "FORMAT_VERSION",
    "BuildProgress",
    "CorpusFingerprint",
    "IndexFormatError",
    "IndexManifest",
    "OpenIndex",
    "PassageStore",
    "build_index",
    "open_index",
    "read_manifest",
    "verify_index",
]

FORMAT = "rootweaver-index"
FORMAT_VERSION = 4  # 2: per-file sizes and SHA-256 in the manifest; 3: title keys fold accents, id titles get names;
# 4: record text split as documents are (initials), id titles also keyed by middle initials and first two names
MANIFEST = "manifest.json"
_PASSAGE_FILES = ("passages/records.jsonl", "passages/offsets.npy")
_BM25_FILES = ("bm25/indptr.npy", "bm25/indices.npy", "bm25/robertson.npy", "bm25/lucene.npy", "bm25/vocab.json")
_DTYPES = {"bm25/indptr.npy": np.int64, "bm25/indices.npy": np.int32, "bm25/robertson.npy": np.float32,
           "bm25/lucene.npy": np.float32, "passages/offsets.npy": np.int64, **TITLE_DTYPES}
_COMPONENT_FILES = {"passages": _PASSAGE_FILES, "bm25": _BM25_FILES, "titles": TITLE_FILES}
_ALL_FILES = tuple(f for files in _COMPONENT_FILES.values() for f in files)  # what a build writes
_TRIPLE = np.dtype([("term", np.int32), ("doc", np.int32), ("tf", np.int32)])


class IndexFormatError(ValueError):
    """An index directory cannot be used; the message names it and says what to do."""


@dataclass(frozen=True, slots=True)
class CorpusFingerprint:
    """The corpus an index was built from: its path as given, SHA-256 and size of its bytes."""

    path: str
    sha256: str
    bytes: int
    passages: int


@dataclass(frozen=True, slots=True)
class IndexManifest:
    """``manifest.json``: format version, corpus, tokenizer settings, named components, and
    ``files``: every index file's ``{"bytes", "sha256"}`` by its path in the directory."""

    format_version: int
    corpus: CorpusFingerprint
    tokenizer: Mapping[str, Any]
    components: Mapping[str, Mapping[str, Any]]
    files: Mapping[str, Mapping[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``manifest.json``."""
        return {"format": FORMAT, "format_version": self.format_version, "corpus": asdict(self.corpus),
                "tokenizer": dict(self.tokenizer), "components": {k: dict(v) for k, v in self.components.items()},
                "files": {k: dict(v) for k, v in self.files.items()}}


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """One progress report of :func:`build_index`: passages and corpus bytes read so far;
    ``chunking`` while a folder's files are still being cut (no byte total is known then)."""

    passages: int
    bytes_read: int
    bytes_total: int
    seconds: float
    chunking: bool = False

    def line(self) -> str:
        """``"1,200,000 passages  41.0%  52,000/s  ETA 31 s"`` (ETA from the byte rate), or
        ``"chunking: 5,200 chunks  1,300/s"``."""
        if self.chunking:
            return f"chunking: {self.passages:,} chunks  {self.passages / max(self.seconds, 1e-9):,.0f}/s"
        frac = self.bytes_read / self.bytes_total if self.bytes_total else 1.0
        rate = self.passages / self.seconds if self.seconds > 0 else 0.0
        eta = self.seconds * (1 - frac) / frac if frac > 0 else float("inf")
        return f"{self.passages:,} passages  {100 * frac:5.1f}%  {rate:,.0f}/s  ETA {eta:,.0f} s"


class PassageStore(Sequence[Passage]):
    """The passages of an index, read by position from the memory-mapped records file.

    The records are the corpus's own JSON lines (blank lines dropped), so ``store[i]``
    parses one line exactly as :func:`~rootweaver_innovations.documents.corpus.load_corpus_jsonl`
    does; nothing is held per passage in Python.
    """

    def __init__(self, records: Path, offsets: np.ndarray):
        self._path, self._offsets = records, offsets
        with open(records, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def __len__(self) -> int:
        return self._offsets.shape[0] - 1

    @overload
    def __getitem__(self, i: int) -> Passage: ...
    @overload
    def __getitem__(self, i: slice) -> list[Passage]: ...

    def __getitem__(self, i: int | slice) -> Passage | list[Passage]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"passage {i} out of range ({n} passages)")
        i %= n
        try:
            obj = json.loads(self._map[int(self._offsets[i]):int(self._offsets[i + 1])])
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            return passage_from_object(obj, self._path, i + 1)
        except (ValueError, RecursionError) as exc:  # JSON, UTF-8 and field errors (CorpusError included)
            raise IndexFormatError(f"{self._path}:{i + 1}: damaged record ({' '.join(str(exc).split())[:200]}); "
                                   "rebuild the index") from None


@dataclass(frozen=True, slots=True)
class OpenIndex:
    """An opened index: its manifest, passages, BM25 matrix and title index (arrays
    memory-mapped; ``titles`` is ``None`` for an index built before it had one)."""

    path: Path
    manifest: IndexManifest
    passages: PassageStore
    bm25: BM25Matrix
    titles: TitleIndex | None = None

    def retriever(self) -> BM25Retriever:
        """The ``bm25s``-backend :class:`BM25Retriever` over this index, carrying its title index."""
        return BM25Retriever.from_matrix(self.passages, self.bm25, title_index=self.titles)

    def component(self, name: str) -> Mapping[str, Any]:
        """The manifest entry of component ``name``; :class:`IndexFormatError` if absent."""
        return _component(self.path, self.manifest, name)


def _component(path: Path, manifest: IndexManifest, name: str) -> Mapping[str, Any]:
    if name not in manifest.components:
        raise IndexFormatError(f"{path}: index has no {name!r} component "
                               f"(has: {', '.join(sorted(manifest.components))}); rebuild it with "
                               "`rootweaver index build`")
    return manifest.components[name]


class _HashingReader(io.RawIOBase):
    """Reads a file while hashing and counting every byte read."""

    def __init__(self, fh: io.BufferedReader):
        self._fh, self.sha256, self.count = fh, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        n = self._fh.readinto(buf)
        self.sha256.update(memoryview(buf)[:n])
        self.count += n
        return n


def _lines(fh: io.BufferedReader, gz: bool, corpus: Path,
           max_record_bytes: int) -> tuple[_HashingReader, Iterator[bytes]]:
    raw = _HashingReader(fh)
    buffered = io.BufferedReader(raw, 1 << 20)
    return raw, bounded_lines(gzip.GzipFile(fileobj=buffered) if gz else buffered, corpus, max_record_bytes)


def build_index(corpus: str | Path, out: str | Path, *, k1: float = 1.5, b: float = 0.75,
                chunk_size: int = 20_000, workers: int = 1,
                progress: Callable[[BuildProgress], None] | None = None,
                max_record_bytes: int = MAX_RECORD_BYTES,
                chunking: ChunkingSettings = ChunkingSettings(),
                on_skip: Callable[[SkippedFile], None] | None = None) -> IndexManifest:
    """Build the index of the JSONL ``corpus`` (``.gz`` read transparently) into ``out``.

    A folder ``corpus`` is first cut into passages by
    :func:`~rootweaver_innovations.documents.folders.iter_document_passages` under ``chunking`` (each
    file it skips goes to ``on_skip``), written as JSONL records with their ``source``, and
    indexed like a file; the manifest's ``corpus`` then fingerprints those records, and its
    ``chunking`` component holds the settings, the document count and the skips by reason.

    ``out`` must not exist (the index is written to a sibling temporary directory and
    renamed when complete, so a failed build leaves nothing behind). Chunks of
    ``chunk_size`` lines are parsed and tokenised by ``workers`` processes (1: in this
    process), at most ``workers + 1`` chunks in flight; ``progress`` is called after
    every chunk. The result does not depend on ``chunk_size`` or ``workers``. Raises
    :class:`CorpusError` naming the file and line for the same problems
    :func:`~rootweaver_innovations.documents.corpus.load_corpus_jsonl` refuses (a record longer than
    ``max_record_bytes`` before it is read whole, JSON nested too deeply), and
    :class:`IndexFormatError` when ``out`` exists.
    """
    corpus, out = Path(corpus), Path(out)
    if not (corpus.is_file() or corpus.is_dir()):
        raise CorpusError(f"{corpus}: file not found")
    if out.exists():
        raise IndexFormatError(f"{out}: already exists; remove it or choose another --out")
    if chunk_size < 1 or workers < 1:
        raise ValueError(f"chunk_size and workers must be >= 1, got {chunk_size} and {workers}")
    _remove_stale_builds(out)
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "passages").mkdir(parents=True)
    (tmp / "bm25").mkdir()
    try:
        if corpus.is_dir():
            records, chunked = _chunk_folder(corpus, tmp, chunking, on_skip, progress)
            manifest = _build(records, tmp, k1, b, chunk_size, workers, progress, max_record_bytes)
            records.unlink()
            manifest = dataclasses.replace(manifest, corpus=dataclasses.replace(manifest.corpus, path=str(corpus)),
                                           components={**manifest.components, "chunking": chunked})
        else:
            manifest = _build(corpus, tmp, k1, b, chunk_size, workers, progress, max_record_bytes)
        (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2), encoding="utf-8")
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _remove_stale_builds(out: Path) -> None:
    """Remove ``.<out>.building-<pid>`` siblings whose build process is gone (a build killed
    by SIGKILL cannot clean up after itself; the next build beside it does)."""
    for tmp in out.parent.glob(f".{out.name}.building-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_init() -> None:
    """In each build worker: ignore SIGINT (the parent handles Ctrl-C and stops the workers),
    and on Linux die with the parent (``PR_SET_PDEATHSIG``), so a killed build leaves no
    orphaned worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's own clean-up still runs
        pass


def _stop_pool(pool: ProcessPoolExecutor, interrupted: bool) -> None:
    """Shut the worker pool down; after an error or a signal, terminate its workers instead of
    letting them finish their chunks."""
    if interrupted:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(5)
    else:
        pool.shutdown(cancel_futures=True)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One parsed chunk: its passages' ids, line numbers and raw lines, and its
    ``(term, doc, tf)`` triples against the chunk's own ``terms`` (docs from 0)."""

    ids: list[str]
    linenos: list[int]
    lines: list[bytes]
    terms: list[str]
    term: np.ndarray
    doc: np.ndarray
    tf: np.ndarray
    lengths: np.ndarray
    titles: TitleBatch


def _parse_line(corpus: Path, lineno: int, line: bytes) -> Passage:
    """The passage of one non-blank corpus line; :class:`CorpusError` naming ``corpus:lineno``."""
    return passage_from_object(record_object(corpus, lineno, line), corpus, lineno)


def _parse_chunk(corpus: Path, numbered: list[tuple[int, bytes]], carry: tuple[str, str] = ("", "")) -> _Chunk:
    """Parse, validate and count one chunk of ``(line number, line)`` (blank lines dropped);
    ``carry`` is the run of records titled by one id the chunk continues (:func:`_carry`)."""
    ids, linenos, lines, passages = [], [], [], []
    for lineno, line in numbered:
        if not line.strip():
            continue
        p = _parse_line(corpus, lineno, line)
        ids.append(p.id)
        linenos.append(lineno)
        lines.append(line if line.endswith(b"\n") else line + b"\n")
        passages.append(p)
    tokens = [passage_tokens(p, subject) for p, (_title, subject) in zip(passages, file_subjects(passages, carry))]
    vocab = Vocabulary()
    term, doc, tf, lengths = count_chunk(tokens, vocab, 0)
    keys = TitleBatch.from_keys([passage_keys(p) for p in passages], 0)
    return _Chunk(ids, linenos, lines, list(vocab), term, doc, tf, lengths, keys)


def _carry(corpus: Path, numbered: list[tuple[int, bytes]], carry: tuple[str, str]) -> tuple[str, str]:
    """The run of records (:func:`~rootweaver_innovations.loop.titles.file_subjects`) the chunk after
    ``numbered`` continues, given the run ``numbered`` continues: its records parsed from the
    last one back, only as far as that run began. A line that does not parse ends the reading
    (its chunk's parse reports it)."""

    def backwards() -> Iterator[Passage]:
        for lineno, line in reversed(numbered):
            if line.strip():
                try:
                    yield _parse_line(corpus, lineno, line)
                except CorpusError:
                    return

    return last_file_subject(backwards(), carry)


def _chunks(lines: Iterator[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    numbered = enumerate(lines, 1)
    while chunk := list(islice(numbered, size)):
        yield chunk


def _build(corpus: Path, tmp: Path, k1: float, b: float, chunk_size: int, workers: int,
           progress: Callable[[BuildProgress], None] | None, max_record_bytes: int) -> IndexManifest:
    start, total = time.perf_counter(), corpus.stat().st_size
    vocab, seen = Vocabulary(), set()
    offsets, lengths, chunk_nnz, titles = array("q", [0]), array("q"), [], []
    df = np.zeros(0, dtype=np.int64)
    pool = ProcessPoolExecutor(workers, initializer=_worker_init) if workers > 1 else None
    finished = False
    with open(corpus, "rb") as fh, open(tmp / "passages" / "records.jsonl", "wb") as records, \
            open(tmp / "triples.tmp", "wb") as spill:
        raw, lines = _lines(fh, corpus.suffix == ".gz", corpus, max_record_bytes)

        def take(chunk: _Chunk) -> None:
            nonlocal df
            for pid, lineno in zip(chunk.ids, chunk.linenos):
                if pid in seen:
                    raise CorpusError(f"{corpus}:{lineno}: duplicate id {pid!r}")
                seen.add(pid)
            for line in chunk.lines:
                offsets.append(offsets[-1] + len(line))
            records.write(b"".join(chunk.lines))
            remap = np.fromiter(map(vocab.__getitem__, chunk.terms), dtype=np.int32, count=len(chunk.terms))
            triples = np.empty(len(chunk.term), dtype=_TRIPLE)
            triples["term"], triples["doc"], triples["tf"] = remap[chunk.term], chunk.doc + len(lengths), chunk.tf
            triples.tofile(spill)
            chunk_nnz.append(len(triples))
            titles.append(dataclasses.replace(chunk.titles, row=chunk.titles.row + len(lengths)))
            lengths.extend(chunk.lengths.tolist())
            df = np.pad(df, (0, len(vocab) - len(df)))
            df += np.bincount(triples["term"], minlength=len(vocab))
            if progress is not None:
                progress(BuildProgress(len(lengths), raw.count, total, time.perf_counter() - start))

        try:
            carry = ("", "")
            if pool is None:
                for numbered in _chunks(lines, chunk_size):
                    take(_parse_chunk(corpus, numbered, carry))
                    carry = _carry(corpus, numbered, carry)
            else:
                pending: deque[Future[_Chunk]] = deque()
                for numbered in _chunks(lines, chunk_size):
                    pending.append(pool.submit(_parse_chunk, corpus, numbered, carry))
                    carry = _carry(corpus, numbered, carry)
                    if len(pending) > workers:
                        take(pending.popleft().result())
                while pending:
                    take(pending.popleft().result())
            finished = True
        except (OSError, EOFError) as exc:  # e.g. a truncated or non-gzip .gz
            raise CorpusError(f"{corpus}: unreadable ({exc})") from None
        finally:
            if pool is not None:
                _stop_pool(pool, interrupted=not finished)
        while raw.read(1 << 20):  # hash whatever the reader left (e.g. a gzip trailer)
            pass
    del seen
    n = len(lengths)
    if n == 0:
        raise CorpusError(f"{corpus}: no passages")
    np.save(tmp / "passages" / "offsets.npy", np.frombuffer(offsets, dtype=np.int64))
    nnz = int(df.sum())
    bm = tmp / "bm25"
    out = {"indices": np.lib.format.open_memmap(bm / "indices.npy", "w+", np.int32, (nnz,)),
           **{name: np.lib.format.open_memmap(bm / f"{name}.npy", "w+", np.float32, (nnz,)) for name in IDFS}}
    spilled = np.memmap(tmp / "triples.tmp", dtype=_TRIPLE, mode="r")
    bounds = np.cumsum([0, *chunk_nnz])
    chunks = ((c["term"], c["doc"], c["tf"]) for c in (spilled[a:z] for a, z in zip(bounds[:-1], bounds[1:])))
    indptr = scatter_scores(chunks, df, np.frombuffer(lengths, dtype=np.int64), k1, b, out)
    for arr in out.values():
        arr.flush()
    del out, spilled
    (tmp / "triples.tmp").unlink()
    np.save(bm / "indptr.npy", indptr)
    (bm / "vocab.json").write_text(json.dumps(list(vocab), ensure_ascii=False), encoding="utf-8")
    title_arrays = TitleArrays.merge(titles)
    del titles
    title_arrays.save(tmp)
    manifest = IndexManifest(
        FORMAT_VERSION, CorpusFingerprint(str(corpus), raw.sha256.hexdigest(), raw.count, n), tokenizer_settings(),
        {"passages": {"files": list(_PASSAGE_FILES), "count": n},
         "bm25": {"files": list(_BM25_FILES), "k1": k1, "b": b, "vocab_size": len(vocab), "nnz": nnz,
                  "avg_length": float(np.frombuffer(lengths, dtype=np.int64).mean())},
         "titles": {"files": list(TITLE_FILES), **title_arrays.counts()}},
        {f: {"bytes": (tmp / f).stat().st_size, "sha256": _sha256(tmp / f)} for f in _ALL_FILES},
    )
    return manifest


def _chunk_folder(folder: Path, tmp: Path, chunking: ChunkingSettings,
                  on_skip: Callable[[SkippedFile], None] | None,
                  progress: Callable[[BuildProgress], None] | None) -> tuple[Path, dict[str, Any]]:
    """Chunk ``folder`` into a JSONL records file in ``tmp`` (``progress`` hears a ``chunking``
    report at most every 0.2 s); that file and the manifest's ``chunking`` component."""
    start = last = time.perf_counter()
    skips: list[SkippedFile] = []
    documents: set[str] = set()

    def skipped(s: SkippedFile) -> None:
        skips.append(s)
        if on_skip is not None:
            on_skip(s)

    records = tmp / "documents.jsonl"
    with open(records, "w", encoding="utf-8") as fh:
        for n, p in enumerate(iter_document_passages(folder, chunking, skipped), 1):
            documents.add(p.source.path)
            fh.write(json.dumps(passage_record(p), ensure_ascii=False) + "\n")
            if progress is not None and (now := time.perf_counter()) - last >= 0.2:
                last = now
                progress(BuildProgress(n, 0, 0, now - start, chunking=True))
    return records, {**chunking.describe(), "files": [], "documents": len(documents),
                     "skipped": count_by_reason(skips)}


_HEX64 = frozenset("0123456789abcdef")


def _is_int(v: Any, low: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))


def _is_sha(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and set(v) <= _HEX64


def _manifest_problem(raw: Any) -> str | None:
    """What is wrong with the shape or the types of a parsed manifest, else ``None``."""
    if not isinstance(raw, dict):
        return "not a JSON object"
    if raw.get("format") != FORMAT:
        return f"not a {FORMAT} manifest"
    if not _is_int(raw.get("format_version")):
        return "format_version is not an integer"
    if raw["format_version"] != FORMAT_VERSION:
        return None  # refused by the version check, with its own message
    corpus, comps, files = raw.get("corpus"), raw.get("components"), raw.get("files")
    if not (isinstance(corpus, dict) and set(corpus) == {"path", "sha256", "bytes", "passages"}
            and isinstance(corpus["path"], str) and _is_sha(corpus["sha256"]) and _is_int(corpus["bytes"])
            and _is_int(corpus["passages"], 1)):
        return "corpus must be {path, sha256, bytes, passages (>= 1)}"
    if not isinstance(raw.get("tokenizer"), dict):
        return "tokenizer is not an object"
    if not (isinstance(comps, dict) and all(isinstance(c, dict) for c in comps.values())):
        return "components is not an object of objects"
    for name, expected in _COMPONENT_FILES.items():
        if name in comps and comps[name].get("files") != list(expected):
            return f"component {name!r} files must be {list(expected)}"
    if "titles" in comps and not all(_is_int(comps["titles"].get(k)) for k in TITLE_COUNTS):
        return f"component 'titles' needs integers {', '.join(TITLE_COUNTS)}"
    if "passages" in comps and comps["passages"].get("count") != corpus["passages"]:
        return "components.passages.count differs from corpus.passages"
    bm = comps.get("bm25", {})
    if "bm25" in comps and not (_is_int(bm.get("vocab_size")) and _is_int(bm.get("nnz"))
                                and all(_is_number(bm.get(k)) for k in ("k1", "b", "avg_length"))):
        return "component 'bm25' needs integers vocab_size, nnz and numbers k1, b, avg_length"
    needed = {f for name, fs in _COMPONENT_FILES.items() if name in comps for f in fs}
    if not (isinstance(files, dict) and needed <= set(files) <= set(_ALL_FILES)
            and all(isinstance(f, dict) and set(f) == {"bytes", "sha256"} and _is_int(f["bytes"])
                    and _is_sha(f["sha256"]) for f in files.values())):
        return "files must map every index file to {bytes, sha256}"
    return None


def read_manifest(path: str | Path) -> IndexManifest:
    """The manifest of the index at ``path``, checked for shape and types and against this
    code's format version and tokenizer settings; :class:`IndexFormatError` naming the
    manifest (or ``path``) otherwise."""
    path = Path(path)
    where = path / MANIFEST
    if not where.is_file():
        raise IndexFormatError(f"{path}: not a rootweaver index (no {MANIFEST}); "
                               "build one with `rootweaver index build CORPUS.jsonl --out DIR`")
    try:
        if where.stat().st_size > 1 << 20:
            raise ValueError("larger than 1 MiB")
        raw = json.loads(where.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError, OSError) as exc:
        raise IndexFormatError(f"{where}: unreadable {MANIFEST} ({type(exc).__name__}: "
                               f"{' '.join(str(exc).split())[:200]}); rebuild the index") from None
    problem = _manifest_problem(raw)
    if problem:
        raise IndexFormatError(f"{where}: unreadable {MANIFEST} ({problem}); rebuild the index")
    if raw["format_version"] != FORMAT_VERSION:
        raise IndexFormatError(f"{path}: index format version {raw['format_version']}, this rootweaver reads "
                               f"version {FORMAT_VERSION}; rebuild it with `rootweaver index build`")
    manifest = IndexManifest(raw["format_version"], CorpusFingerprint(**raw["corpus"]), raw["tokenizer"],
                             raw["components"], raw["files"])
    current = tokenizer_settings()
    if dict(manifest.tokenizer) != current:
        changed = sorted(k for k in set(current) | set(manifest.tokenizer)
                         if manifest.tokenizer.get(k) != current.get(k))
        raise IndexFormatError(f"{path}: index built with other tokenizer settings ({', '.join(changed)} "
                               "differ); rebuild it with `rootweaver index build`")
    return manifest


def _sha256(corpus: Path) -> str:
    """SHA-256 of the bytes of ``corpus``."""
    h = hashlib.sha256()
    with open(corpus, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


_BLOCK = 1 << 22  # elements per block of the range checks (bounded temporaries on large arrays)


def _all_blocks(file: Path, arr: np.ndarray, ok: Callable[[np.ndarray], bool]) -> bool:
    """Whether ``ok`` holds for every block of the ``.npy`` ``file`` whose mapping is ``arr``.
    The blocks are read through a mapping of their own, closed after the check, so a check of
    the whole array leaves none of it in this process's resident memory (only queries bring
    pages in) and copies nothing."""
    with open(file, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        data = np.frombuffer(mapped, dtype=arr.dtype, count=len(arr), offset=len(mapped) - arr.nbytes)
        result = all(ok(data[i:i + _BLOCK]) for i in range(0, len(arr), _BLOCK))  # .npy: header, then data
        del data  # the mapping closes only once no array views it
    return result


def _load_array(path: Path, rel: str, length: int) -> np.ndarray:
    """The memory-mapped 1-D array ``rel`` with the dtype of :data:`_DTYPES` and ``length``
    elements; :class:`IndexFormatError` naming the file otherwise."""
    try:
        arr = np.load(path / rel, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise IndexFormatError(f"{path / rel}: damaged index file ({' '.join(str(exc).split())[:200]}); "
                               "rebuild the index") from None
    want = np.dtype(_DTYPES[rel])
    if arr.dtype != want or arr.ndim != 1 or arr.shape[0] != length:
        raise IndexFormatError(f"{path / rel}: expected {want} of shape ({length},), found {arr.dtype} of shape "
                               f"{arr.shape}; rebuild the index")
    return arr.view(np.ndarray)  # no memmap subclass overhead per slice


def _damaged(path: Path, rel: str, what: str) -> IndexFormatError:
    return IndexFormatError(f"{path / rel}: {what}; rebuild the index")


def open_index(path: str | Path, corpus: str | Path | None = None) -> OpenIndex:
    """Open the index at ``path`` memory-mapped (see the module docstring for what is refused).

    ``corpus``, when given, must be the file the index was built from (same size and SHA-256).
    Every check here reads the arrays once (sizes, dtypes, ranges, finiteness); the files'
    SHA-256 are checked by :func:`verify_index`.
    """
    path = Path(path)
    manifest = read_manifest(path)
    if corpus is not None:
        corpus = Path(corpus)
        if corpus.is_dir():
            raise CorpusError(f"{corpus}: a folder; an index built from a folder is opened by --index alone "
                              "(its manifest records the folder and the chunking)")
        if not corpus.is_file():
            raise CorpusError(f"{corpus}: file not found")
        fp = manifest.corpus
        if corpus.stat().st_size != fp.bytes or _sha256(corpus) != fp.sha256:
            raise IndexFormatError(f"{path}: index was built from another corpus ({fp.path}, sha256 "
                                   f"{fp.sha256[:12]}) than {corpus}; rebuild it with `rootweaver index build`")
    bm25 = _component(path, manifest, "bm25")
    _component(path, manifest, "passages")
    for rel, entry in manifest.files.items():
        if not (path / rel).is_file():
            raise _damaged(path, rel, "missing index file")
        if (size := (path / rel).stat().st_size) != entry["bytes"]:
            raise _damaged(path, rel, f"{size:,} bytes, the manifest says {entry['bytes']:,} (truncated or "
                                      "replaced)")
    n, nnz, v = manifest.corpus.passages, bm25["nnz"], bm25["vocab_size"]
    arrays = {name: _load_array(path, f"bm25/{name}.npy", length)
              for name, length in (("indptr", v + 1), ("indices", nnz), *((k, nnz) for k in IDFS))}
    offsets = _load_array(path, "passages/offsets.npy", n + 1)
    indptr, indices = arrays["indptr"], arrays["indices"]
    if indptr[0] != 0 or indptr[-1] != nnz or not bool((np.diff(indptr) >= 0).all()):
        raise _damaged(path, "bm25/indptr.npy", f"not a column pointer (must rise from 0 to nnz {nnz:,})")
    if not _all_blocks(path / "bm25" / "indices.npy", indices,
                       lambda a: a.size == 0 or (int(a.min()) >= 0 and int(a.max()) < n)):
        raise _damaged(path, "bm25/indices.npy", f"passage ids outside [0, {n:,})")
    for name in IDFS:
        if not _all_blocks(path / "bm25" / f"{name}.npy", arrays[name], lambda a: bool(np.isfinite(a).all())):
            raise _damaged(path, f"bm25/{name}.npy", "non-finite scores (NaN or infinity)")
    records = path / "passages" / "records.jsonl"
    if offsets[0] != 0 or int(offsets[-1]) != records.stat().st_size or not bool((np.diff(offsets) > 0).all()):
        raise _damaged(path, "passages/offsets.npy", "offsets do not partition records.jsonl")
    try:
        terms = json.loads((path / "bm25" / "vocab.json").read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _damaged(path, "bm25/vocab.json", f"unreadable ({type(exc).__name__})") from None
    if not (isinstance(terms, list) and len(terms) == v and all(isinstance(t, str) for t in terms)):
        raise _damaged(path, "bm25/vocab.json", f"must be a list of {v:,} strings")
    vocab = {t: i for i, t in enumerate(terms)}
    if len(vocab) != v:
        raise _damaged(path, "bm25/vocab.json", "repeated terms")
    try:
        passages = PassageStore(records, offsets)
    except (OSError, ValueError) as exc:
        raise _damaged(path, "passages/records.jsonl", f"unreadable ({exc})") from None
    matrix = BM25Matrix(vocab, indptr, indices, arrays["robertson"], arrays["lucene"], n)
    return OpenIndex(path, manifest, passages, matrix, _open_titles(path, manifest, passages))


def _open_titles(path: Path, manifest: IndexManifest, passages: PassageStore) -> TitleIndex | None:
    """The memory-mapped title index, checked like the other arrays (``None`` when the index has none)."""
    if "titles" not in manifest.components:
        return None
    lengths = TitleArrays.file_lengths(manifest.components["titles"])
    arrays = TitleArrays(*(_load_array(path, rel, n) for rel, n in zip(TITLE_FILES, lengths)))
    problem = arrays.problem(len(passages))
    if problem is not None:
        raise _damaged(path, *problem)
    return TitleIndex(passages, arrays)


def verify_index(path: str | Path) -> IndexManifest:
    """Every check of :func:`open_index`, then the SHA-256 of every file against the
    manifest and every record parsed; returns the manifest, or raises
    :class:`IndexFormatError` naming the first damaged file."""
    index = open_index(path)
    for rel, entry in index.manifest.files.items():
        if _sha256(index.path / rel) != entry["sha256"]:
            raise _damaged(index.path, rel, "SHA-256 differs from the manifest (the file changed after the build)")
    for i in range(len(index.passages)):
        index.passages[i]
    return index.manifest
