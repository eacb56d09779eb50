"""Building an index: a JSONL corpus (or a folder, chunked into one first) streamed into the
memory-mapped arrays of :mod:`~rootweaver_innovations.retrieval.index`.

:func:`build_index` streams the corpus: chunks of lines are parsed and tokenised (by
``workers`` processes), written and counted, and their ``(term, passage, tf)`` triples
spill to a temporary file that a second pass scatters into the memory-mapped matrix. So
memory grows with the vocabulary, an id and two integers per passage, and a few chunks,
not with the corpus text.

A build writes into a temporary sibling directory and renames it when complete; an
interrupted build (exception, SIGINT, SIGTERM) removes it and stops its worker processes,
workers die with their parent (``PR_SET_PDEATHSIG`` on Linux) and ignore SIGINT (the parent
handles it), and a build removes the temporary directories that killed builds (SIGKILL) left
beside its output.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import shutil
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent import futures  # its ProcessPoolExecutor (multiprocessing) is imported when a pool starts
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions, get_conventions
from rootweaver_innovations.defaults import INDEX_CHUNK_PASSAGES
from rootweaver_innovations.documents.corpus import (
    MAX_RECORD_BYTES,
    CorpusError,
    FileNotice,
    Passage,
    bounded_lines,
    passage_from_object,
    record_object,
    warn_notice,
)
from rootweaver_innovations.documents.file_records import records_bytes, scan_folder
from rootweaver_innovations.documents.folders import ChunkingSettings, SkippedFile, count_by_reason, passage_record
from rootweaver_innovations.documents.metadata import MetaSummary
from rootweaver_innovations.retrieval.dense_index import DENSE_FILES, write_dense
from rootweaver_innovations.retrieval.embeddings import Embedder
from rootweaver_innovations.retrieval.titles import TITLE_FILES, TitleArrays, TitleBatch, last_file_subject, passage_keys
from rootweaver_innovations.retrieval.bm25_matrix import Vocabulary, count_chunk, write_bm25
from rootweaver_innovations.retrieval.manifest import (
    BM25_FILES,
    CHUNKING_FILES,
    PASSAGE_FILES,
    FORMAT_VERSION,
    MANIFEST,
    CorpusFingerprint,
    IndexFormatError,
    IndexManifest,
    file_entries,
    index_fingerprint,
)
from rootweaver_innovations.retrieval.tokens import corpus_tokens, tokenizer_settings

__all__ = ["BuildProgress", "build_index"]

_TRIPLE = np.dtype([("term", np.int32), ("doc", np.int32), ("tf", np.int32)])


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """One progress report of :func:`build_index`, ``seconds`` into its ``stage``:

    - ``chunking``: a folder's files are being cut; ``done`` chunks so far (no total is known);
    - ``indexing``: ``done`` of ``total`` corpus bytes read, ``passages`` indexed so far;
    - ``embedding``: ``done`` of ``total`` passages embedded (``passages`` is ``done``).
    """

    stage: str
    passages: int
    done: int
    total: int
    seconds: float

    def line(self) -> str:
        """``"1,200,000 passages  41.0%  52,000/s  ETA 31 s"`` (ETA from the byte rate),
        ``"chunking: 5,200 chunks  1,300/s"`` or ``"embedding: 2,048/17,350 passages ..."``."""
        rate = self.done / max(self.seconds, 1e-9)
        if self.stage == "chunking":
            return f"chunking: {self.done:,} chunks  {rate:,.0f}/s"
        if self.stage == "embedding":
            return (f"embedding: {self.done:,}/{self.total:,} passages  {rate:,.0f}/s  "
                    f"ETA {(self.total - self.done) / max(rate, 1e-9):,.0f} s")
        frac = self.done / self.total if self.total else 1.0
        eta = self.seconds * (1 - frac) / frac if frac > 0 else float("inf")
        passage_rate = self.passages / self.seconds if self.seconds > 0 else 0.0
        return f"{self.passages:,} passages  {100 * frac:5.1f}%  {passage_rate:,.0f}/s  ETA {eta:,.0f} s"


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
                chunk_size: int = INDEX_CHUNK_PASSAGES, workers: int = 1,
                progress: Callable[[BuildProgress], None] | None = None,
                max_record_bytes: int = MAX_RECORD_BYTES,
                chunking: ChunkingSettings = ChunkingSettings(),
                on_skip: Callable[[SkippedFile], None] | None = None,
                conventions: Conventions | None = None,
                on_notice: Callable[[FileNotice], None] = warn_notice,
                embedder: Embedder | None = None) -> IndexManifest:
    """Build the index of the JSONL ``corpus`` (``.gz`` read transparently) into ``out``.

    A folder ``corpus`` is first cut into passages by
    :func:`~rootweaver_innovations.documents.file_records.scan_folder` under ``chunking`` (each
    file it skips goes to ``on_skip``), written as JSONL records with their ``source``, and
    indexed like a file; the manifest's ``corpus`` then fingerprints those records, and its
    ``chunking`` component holds the settings, the document count, the skips by reason and
    the file ``chunking/files.json`` (every file's size, mtime, SHA-256 and chunk count).
    The manifest records the corpus by its absolute path.

    ``out`` must not exist (the index is written to a sibling temporary directory and
    renamed when complete, so a failed build leaves nothing behind). Chunks of
    ``chunk_size`` lines are parsed and tokenised by ``workers`` processes (1: in this
    process), at most ``workers + 1`` chunks in flight; ``progress`` is called after
    every chunk. The result does not depend on ``chunk_size`` or ``workers``. Raises
    :class:`CorpusError` naming the file and line for the same problems
    :func:`~rootweaver_innovations.documents.corpus.load_corpus_jsonl` refuses (a record longer than
    ``max_record_bytes`` before it is read whole, JSON nested too deeply), and
    :class:`IndexFormatError` when ``out`` exists. Titles, file subjects and keys follow
    ``conventions`` (the default member when ``None``), which the manifest records with the
    index fingerprint. A record (or a folder's file) read with a problem, such as a date
    that does not read, is heard once by ``on_notice``; the manifest's ``metadata``
    component summarises what the documents carry
    (:class:`~rootweaver_innovations.documents.metadata.MetaSummary`). With an ``embedder``
    every passage is embedded into the ``dense`` component
    (:mod:`~rootweaver_innovations.retrieval.dense_index`) after the BM25 pass.
    """
    corpus, out = Path(corpus), Path(out)
    if not (corpus.is_file() or corpus.is_dir()):
        raise CorpusError(f"{corpus}: file not found")
    if out.exists():
        raise IndexFormatError(f"{out}: already exists; remove it or choose another --out")
    if chunk_size < 1 or workers < 1:
        raise ValueError(f"chunk_size and workers must be >= 1, got {chunk_size} and {workers}")
    conventions = conventions or default_conventions()
    _remove_stale_builds(out)
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "passages").mkdir(parents=True)
    (tmp / "bm25").mkdir()
    try:
        if corpus.is_dir():
            records, chunked = _chunk_folder(corpus, tmp, chunking, on_skip, progress, conventions, on_notice)
            manifest = _build(records, tmp, k1, b, chunk_size, workers, progress, max_record_bytes, conventions,
                              on_notice)
            records.unlink()
            manifest = dataclasses.replace(
                manifest, corpus=dataclasses.replace(manifest.corpus, path=os.path.abspath(corpus)),
                components={**manifest.components, "chunking": chunked},
                files={**manifest.files, **file_entries(tmp, CHUNKING_FILES)},
                conventions={"name": conventions.name, "fingerprint": index_fingerprint(conventions, chunking.describe())})
        else:
            manifest = _build(corpus, tmp, k1, b, chunk_size, workers, progress, max_record_bytes, conventions,
                              on_notice)
        if embedder is not None:
            n = manifest.corpus.passages
            report = None if progress is None else lambda done, s: progress(BuildProgress("embedding", done, done, n, s))
            manifest = dataclasses.replace(
                manifest, components={**manifest.components, "dense": write_dense(tmp, n, embedder, report)},
                files={**manifest.files, **file_entries(tmp, DENSE_FILES)})
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


def _stop_pool(pool: futures.ProcessPoolExecutor, interrupted: bool) -> None:
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
    """One parsed chunk: its passages' ids, line numbers and raw lines, its
    ``(term, doc, tf)`` triples against the chunk's own ``terms`` (docs from 0), the
    ``notices`` of its records read with a problem and the ``meta`` its documents carry."""

    ids: list[str]
    linenos: list[int]
    lines: list[bytes]
    terms: list[str]
    term: np.ndarray
    doc: np.ndarray
    tf: np.ndarray
    lengths: np.ndarray
    titles: TitleBatch
    notices: list[FileNotice]
    meta: MetaSummary


def _parse_line(corpus: Path, lineno: int, line: bytes,
                on_notice: Callable[[FileNotice], None] | None = None) -> Passage:
    """The passage of one non-blank corpus line; :class:`CorpusError` naming ``corpus:lineno``."""
    return passage_from_object(record_object(corpus, lineno, line), corpus, lineno, on_notice)


def _parse_chunk(corpus: Path, numbered: list[tuple[int, bytes]], conventions: str,
                 carry: tuple[str, str] = ("", "")) -> _Chunk:
    """Parse, validate and count one chunk of ``(line number, line)`` (blank lines dropped)
    under the conventions named ``conventions`` (a name: a worker process looks it up);
    ``carry`` is the run of records titled by one id the chunk continues (:func:`_carry`)."""
    member = get_conventions(conventions)
    ids, linenos, lines, passages, notices = [], [], [], [], []
    for lineno, line in numbered:
        if not line.strip():
            continue
        p = _parse_line(corpus, lineno, line, notices.append)
        ids.append(p.id)
        linenos.append(lineno)
        lines.append(line if line.endswith(b"\n") else line + b"\n")
        passages.append(p)
    tokens = list(corpus_tokens(passages, member, carry))
    vocab = Vocabulary()
    term, doc, tf, lengths = count_chunk(tokens, vocab, 0)
    keys = TitleBatch.from_keys([passage_keys(p, member) for p in passages], 0)
    return _Chunk(ids, linenos, lines, list(vocab), term, doc, tf, lengths, keys, notices, _documents_meta(passages))


def _documents_meta(passages: Iterable[Passage]) -> MetaSummary:
    """What the documents among ``passages`` carry: each record, and each document's first chunk."""
    meta = MetaSummary()
    for p in passages:
        if p.source is None or p.source.position == 0:
            meta.add(p.meta if p.source is None else p.source.meta)
    return meta


def _carry(corpus: Path, numbered: list[tuple[int, bytes]], carry: tuple[str, str],
           conventions: Conventions) -> tuple[str, str]:
    """The run of records (:func:`~rootweaver_innovations.retrieval.titles.file_subjects`) the chunk after
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

    return last_file_subject(backwards(), conventions, carry)


def _chunks(lines: Iterator[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    numbered = enumerate(lines, 1)
    while chunk := list(islice(numbered, size)):
        yield chunk


def _build(corpus: Path, tmp: Path, k1: float, b: float, chunk_size: int, workers: int,
           progress: Callable[[BuildProgress], None] | None, max_record_bytes: int,
           conventions: Conventions, on_notice: Callable[[FileNotice], None]) -> IndexManifest:
    start, total = time.perf_counter(), corpus.stat().st_size
    vocab, seen, meta = Vocabulary(), set(), MetaSummary()
    offsets, lengths, chunk_nnz, titles = array("q", [0]), array("q"), [], []
    df = np.zeros(0, dtype=np.int64)
    pool = futures.ProcessPoolExecutor(workers, initializer=_worker_init) if workers > 1 else None
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
            for notice in chunk.notices:
                on_notice(notice)
            meta.merge(chunk.meta)
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
                progress(BuildProgress("indexing", len(lengths), raw.count, total, time.perf_counter() - start))

        try:
            carry = ("", "")
            if pool is None:
                for numbered in _chunks(lines, chunk_size):
                    take(_parse_chunk(corpus, numbered, conventions.name, carry))
                    carry = _carry(corpus, numbered, carry, conventions)
            else:
                pending: deque[futures.Future[_Chunk]] = deque()
                for numbered in _chunks(lines, chunk_size):
                    pending.append(pool.submit(_parse_chunk, corpus, numbered, conventions.name, carry))
                    carry = _carry(corpus, numbered, carry, conventions)
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
    spilled = np.memmap(tmp / "triples.tmp", dtype=_TRIPLE, mode="r")
    bounds = np.cumsum([0, *chunk_nnz])
    chunks = ((c["term"], c["doc"], c["tf"]) for c in (spilled[a:z] for a, z in zip(bounds[:-1], bounds[1:])))
    nnz = write_bm25(tmp / "bm25", chunks, df, np.frombuffer(lengths, dtype=np.int64), list(vocab), k1, b)
    del spilled
    (tmp / "triples.tmp").unlink()
    title_arrays = TitleArrays.merge(titles)
    del titles
    title_arrays.save(tmp)
    manifest = IndexManifest(
        FORMAT_VERSION, CorpusFingerprint(os.path.abspath(corpus), raw.sha256.hexdigest(), raw.count, n),
        tokenizer_settings(),
        {"passages": {"files": list(PASSAGE_FILES), "count": n},
         "bm25": {"files": list(BM25_FILES), "k1": k1, "b": b, "vocab_size": len(vocab), "nnz": nnz,
                  "avg_length": float(np.frombuffer(lengths, dtype=np.int64).mean())},
         "titles": {"files": list(TITLE_FILES), **title_arrays.counts()}, "metadata": meta.to_json()},
        file_entries(tmp, (*PASSAGE_FILES, *BM25_FILES, *TITLE_FILES)),
        {"name": conventions.name, "fingerprint": index_fingerprint(conventions)},
    )
    return manifest


def _chunk_folder(folder: Path, tmp: Path, chunking: ChunkingSettings,
                  on_skip: Callable[[SkippedFile], None] | None,
                  progress: Callable[[BuildProgress], None] | None,
                  conventions: Conventions, on_notice: Callable[[FileNotice], None]) -> tuple[Path, dict[str, Any]]:
    """Chunk ``folder`` into a JSONL records file in ``tmp`` (``progress`` hears a ``chunking``
    report at most every 0.2 s) and record its files in ``tmp/chunking/files.json``
    (:mod:`~rootweaver_innovations.documents.file_records`, what ``index update`` compares);
    the records file and the manifest's ``chunking`` component."""
    start = last = time.perf_counter()
    skips: list[SkippedFile] = []

    def skipped(s: SkippedFile) -> None:
        skips.append(s)
        if on_skip is not None:
            on_skip(s)

    records, files, n = tmp / "documents.jsonl", [], 0
    with open(records, "w", encoding="utf-8") as fh:
        for scanned in scan_folder(folder, chunking, conventions, skipped, on_notice=on_notice):
            files.append(scanned.record)
            for p in scanned.passages:
                n += 1
                fh.write(json.dumps(passage_record(p), ensure_ascii=False) + "\n")
                if progress is not None and (now := time.perf_counter()) - last >= 0.2:
                    last = now
                    progress(BuildProgress("chunking", n, n, 0, now - start))
    (tmp / "chunking").mkdir()
    (tmp / CHUNKING_FILES[0]).write_bytes(records_bytes(files))
    return records, {**chunking.describe(), "files": list(CHUNKING_FILES),
                     "documents": sum(1 for f in files if f.chunks), "skipped": count_by_reason(skips)}
