"""A retrieval index built once from a JSONL corpus, saved, versioned and memory-mapped.

Layout of an index directory (``rootweaver index build CORPUS --out DIR``)::

    DIR/manifest.json            format, format_version, corpus fingerprint, tokenizer
                                 settings, and one entry per named component
    DIR/passages/records.jsonl   the corpus's JSON lines, one per passage (blank lines dropped)
    DIR/passages/offsets.npy     int64 byte offsets, N + 1
    DIR/bm25/indptr.npy ...      the BM25Matrix arrays (indices, robertson, lucene) and
    DIR/bm25/vocab.json          the terms in column order

Components are named entries of ``manifest["components"]`` (today ``passages`` and
``bm25``), each with its own files and parameters, so another index the loop needs
(e.g. a title/entity index) is added as a new component without changing the others;
:meth:`OpenIndex.component` refuses a missing one with a message saying to rebuild.

:func:`open_index` maps every array read-only (worker processes on the same index share
the pages) and refuses, with one :class:`IndexFormatError` line naming the directory,
an index whose format version or tokenizer settings differ from the running code's, a
missing or inconsistent file, or (when a corpus file is given) one built from another
corpus (SHA-256 of the file's bytes).

:func:`build_index` streams the corpus: chunks of lines are parsed and tokenised (by
``workers`` processes), written and counted, and their ``(term, passage, tf)`` triples
spill to a temporary file that a second pass scatters into the memory-mapped matrix. So
memory grows with the vocabulary, an id and two integers per passage, and a few chunks,
not with the corpus text.
"""

from __future__ import annotations

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
from concurrent.futures import Future, ProcessPoolExecutor
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any, overload

import numpy as np

from .bm25_matrix import IDFS, BM25Matrix, Vocabulary, count_chunk, scatter_scores
from .corpus import CorpusError, Passage, passage_from_object
from .retrieval import BM25Retriever, passage_tokens, tokenizer_settings

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
]

FORMAT = "rootweaver-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
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
    """``manifest.json``: format version, corpus, tokenizer settings, named components."""

    format_version: int
    corpus: CorpusFingerprint
    tokenizer: Mapping[str, Any]
    components: Mapping[str, Mapping[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``manifest.json``."""
        return {"format": FORMAT, "format_version": self.format_version, "corpus": asdict(self.corpus),
                "tokenizer": dict(self.tokenizer), "components": {k: dict(v) for k, v in self.components.items()}}


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """One progress report of :func:`build_index`: passages and corpus bytes read so far."""

    passages: int
    bytes_read: int
    bytes_total: int
    seconds: float

    def line(self) -> str:
        """``"1,200,000 passages  41.0%  52,000/s  ETA 31 s"`` (ETA from the byte rate)."""
        frac = self.bytes_read / self.bytes_total if self.bytes_total else 1.0
        rate = self.passages / self.seconds if self.seconds > 0 else 0.0
        eta = self.seconds * (1 - frac) / frac if frac > 0 else float("inf")
        return f"{self.passages:,} passages  {100 * frac:5.1f}%  {rate:,.0f}/s  ETA {eta:,.0f} s"


class PassageStore(Sequence[Passage]):
    """The passages of an index, read by position from the memory-mapped records file.

    The records are the corpus's own JSON lines (blank lines dropped), so ``store[i]``
    parses one line exactly as :func:`~rootweaver_innovations.corpus.load_corpus_jsonl`
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
        obj = json.loads(self._map[int(self._offsets[i]):int(self._offsets[i + 1])])
        return passage_from_object(obj, self._path, i + 1)


@dataclass(frozen=True, slots=True)
class OpenIndex:
    """An opened index: its manifest, passages and BM25 matrix (arrays memory-mapped)."""

    path: Path
    manifest: IndexManifest
    passages: PassageStore
    bm25: BM25Matrix

    def retriever(self) -> BM25Retriever:
        """The ``bm25s``-backend :class:`BM25Retriever` over this index."""
        return BM25Retriever.from_matrix(self.passages, self.bm25)

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


def _lines(fh: io.BufferedReader, gz: bool) -> tuple[_HashingReader, Iterator[bytes]]:
    raw = _HashingReader(fh)
    buffered = io.BufferedReader(raw, 1 << 20)
    return raw, iter(gzip.GzipFile(fileobj=buffered) if gz else buffered)


def build_index(corpus: str | Path, out: str | Path, *, k1: float = 1.5, b: float = 0.75,
                chunk_size: int = 20_000, workers: int = 1,
                progress: Callable[[BuildProgress], None] | None = None) -> IndexManifest:
    """Build the index of the JSONL ``corpus`` (``.gz`` read transparently) into ``out``.

    ``out`` must not exist (the index is written to a sibling temporary directory and
    renamed when complete, so a failed build leaves nothing behind). Chunks of
    ``chunk_size`` lines are parsed and tokenised by ``workers`` processes (1: in this
    process), at most ``workers + 1`` chunks in flight; ``progress`` is called after
    every chunk. The result does not depend on ``chunk_size`` or ``workers``. Raises
    :class:`CorpusError` naming the file and line for the same problems
    :func:`~rootweaver_innovations.corpus.load_corpus_jsonl` refuses, and
    :class:`IndexFormatError` when ``out`` exists.
    """
    corpus, out = Path(corpus), Path(out)
    if not corpus.is_file():
        raise CorpusError(f"{corpus}: file not found")
    if out.exists():
        raise IndexFormatError(f"{out}: already exists; remove it or choose another --out")
    if chunk_size < 1 or workers < 1:
        raise ValueError(f"chunk_size and workers must be >= 1, got {chunk_size} and {workers}")
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "passages").mkdir(parents=True)
    (tmp / "bm25").mkdir()
    try:
        manifest = _build(corpus, tmp, k1, b, chunk_size, workers, progress)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


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


def _parse_chunk(corpus: Path, numbered: list[tuple[int, bytes]]) -> _Chunk:
    """Parse, validate and count one chunk of ``(line number, line)`` (blank lines dropped)."""
    ids, linenos, lines, tokens = [], [], [], []
    for lineno, line in numbered:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorpusError(f"{corpus}:{lineno}: malformed JSON ({getattr(exc, 'msg', exc)})") from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{corpus}:{lineno}: expected a JSON object")
        p = passage_from_object(obj, corpus, lineno)
        ids.append(p.id)
        linenos.append(lineno)
        lines.append(line if line.endswith(b"\n") else line + b"\n")
        tokens.append(passage_tokens(p))
    vocab = Vocabulary()
    term, doc, tf, lengths = count_chunk(tokens, vocab, 0)
    return _Chunk(ids, linenos, lines, list(vocab), term, doc, tf, lengths)


def _chunks(lines: Iterator[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    numbered = enumerate(lines, 1)
    while chunk := list(islice(numbered, size)):
        yield chunk


def _build(corpus: Path, tmp: Path, k1: float, b: float, chunk_size: int, workers: int,
           progress: Callable[[BuildProgress], None] | None) -> IndexManifest:
    start, total = time.perf_counter(), corpus.stat().st_size
    vocab, seen = Vocabulary(), set()
    offsets, lengths, chunk_nnz = array("q", [0]), array("q"), []
    df = np.zeros(0, dtype=np.int64)
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    with open(corpus, "rb") as fh, open(tmp / "passages" / "records.jsonl", "wb") as records, \
            open(tmp / "triples.tmp", "wb") as spill:
        raw, lines = _lines(fh, corpus.suffix == ".gz")

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
            lengths.extend(chunk.lengths.tolist())
            df = np.pad(df, (0, len(vocab) - len(df)))
            df += np.bincount(triples["term"], minlength=len(vocab))
            if progress is not None:
                progress(BuildProgress(len(lengths), raw.count, total, time.perf_counter() - start))

        try:
            if pool is None:
                for numbered in _chunks(lines, chunk_size):
                    take(_parse_chunk(corpus, numbered))
            else:
                pending: deque[Future[_Chunk]] = deque()
                for numbered in _chunks(lines, chunk_size):
                    pending.append(pool.submit(_parse_chunk, corpus, numbered))
                    if len(pending) > workers:
                        take(pending.popleft().result())
                while pending:
                    take(pending.popleft().result())
        except (OSError, EOFError) as exc:  # e.g. a truncated or non-gzip .gz
            raise CorpusError(f"{corpus}: unreadable ({exc})") from None
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
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
    manifest = IndexManifest(
        FORMAT_VERSION, CorpusFingerprint(str(corpus), raw.sha256.hexdigest(), raw.count, n), tokenizer_settings(),
        {"passages": {"files": ["passages/records.jsonl", "passages/offsets.npy"], "count": n},
         "bm25": {"files": ["bm25/indptr.npy", "bm25/indices.npy", "bm25/robertson.npy", "bm25/lucene.npy",
                            "bm25/vocab.json"], "k1": k1, "b": b, "vocab_size": len(vocab), "nnz": nnz,
                  "avg_length": float(np.frombuffer(lengths, dtype=np.int64).mean())}},
    )
    (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2), encoding="utf-8")
    return manifest


def read_manifest(path: str | Path) -> IndexManifest:
    """The manifest of the index at ``path``, checked against this code's format version and
    tokenizer settings; :class:`IndexFormatError` naming ``path`` otherwise."""
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise IndexFormatError(f"{path}: not a rootweaver index (no {MANIFEST}); "
                               "build one with `rootweaver index build CORPUS.jsonl --out DIR`")
    try:
        raw = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        if raw.get("format") != FORMAT:
            raise IndexFormatError(f"{path}: {MANIFEST} is not a {FORMAT} manifest")
        manifest = IndexManifest(raw["format_version"], CorpusFingerprint(**raw["corpus"]), raw["tokenizer"],
                                 raw["components"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise IndexFormatError(f"{path}: unreadable {MANIFEST} ({type(exc).__name__}: {exc})") from None
    if manifest.format_version != FORMAT_VERSION:
        raise IndexFormatError(f"{path}: index format version {manifest.format_version}, this rootweaver reads "
                               f"version {FORMAT_VERSION}; rebuild it with `rootweaver index build`")
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


def open_index(path: str | Path, corpus: str | Path | None = None) -> OpenIndex:
    """Open the index at ``path`` memory-mapped (see the module docstring for what is refused).

    ``corpus``, when given, must be the file the index was built from (same size and SHA-256).
    """
    path = Path(path)
    manifest = read_manifest(path)
    if corpus is not None:
        corpus = Path(corpus)
        if not corpus.is_file():
            raise CorpusError(f"{corpus}: file not found")
        fp = manifest.corpus
        if corpus.stat().st_size != fp.bytes or _sha256(corpus) != fp.sha256:
            raise IndexFormatError(f"{path}: index was built from another corpus ({fp.path}, sha256 "
                                   f"{fp.sha256[:12]}) than {corpus}; rebuild it with `rootweaver index build`")
    bm25 = _component(path, manifest, "bm25")
    _component(path, manifest, "passages")
    try:
        arrays = {name: np.load(path / "bm25" / f"{name}.npy", mmap_mode="r").view(np.ndarray)  # no memmap
                  for name in ("indptr", "indices", *IDFS)}  # subclass overhead per slice
        offsets = np.load(path / "passages" / "offsets.npy", mmap_mode="r")
        terms = json.loads((path / "bm25" / "vocab.json").read_text(encoding="utf-8"))
        passages = PassageStore(path / "passages" / "records.jsonl", offsets)
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"{path}: missing or damaged index file ({exc}); rebuild it") from None
    n, nnz = manifest.corpus.passages, int(arrays["indptr"][-1])
    if (len(offsets) != n + 1 or len(terms) + 1 != len(arrays["indptr"]) or len(terms) != bm25["vocab_size"]
            or any(len(arrays[k]) != nnz for k in ("indices", *IDFS))
            or int(offsets[-1]) != (path / "passages" / "records.jsonl").stat().st_size):
        raise IndexFormatError(f"{path}: index files do not agree with {MANIFEST} (truncated or mixed builds); "
                               "rebuild it")
    matrix = BM25Matrix({t: i for i, t in enumerate(terms)}, arrays["indptr"], arrays["indices"],
                        arrays["robertson"], arrays["lucene"], n)
    return OpenIndex(path, manifest, passages, matrix)
