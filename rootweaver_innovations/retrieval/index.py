"""A retrieval index built once from a JSONL corpus (or a folder of documents, chunked into
one first), saved, versioned and memory-mapped.

Layout of an index directory (``rootweaver index build CORPUS --out DIR``)::

    DIR/manifest.json            format, format_version, corpus fingerprint, tokenizer
                                 settings, conventions and index fingerprint, and one
                                 entry per named component (:mod:`.manifest`)
    DIR/passages/records.jsonl   the corpus's JSON lines, one per passage (blank lines dropped)
    DIR/passages/offsets.npy     int64 byte offsets, N + 1
    DIR/bm25/indptr.npy ...      the BM25Matrix arrays (indices, robertson, lucene), tf.npy
                                 (each posting's term frequency, what an update re-uses) and
    DIR/bm25/vocab.json          the terms in column order (sorted)
    DIR/titles/*.npy             the loop's title index (:class:`~rootweaver_innovations.retrieval.titles.TitleArrays`)
    DIR/chunking/files.json      for a folder: each file's size, mtime, SHA-256 and chunk count
                                 (:mod:`~rootweaver_innovations.documents.file_records`)
    DIR/dense/embeddings.npy     when built with embeddings: one float16 row per passage
                                 (:mod:`~rootweaver_innovations.retrieval.dense_index`)

Components are named entries of ``manifest["components"]`` (``passages``, ``bm25``,
``titles``, and for a folder ``chunking``: the chunk settings, document count and skips),
each with its own files and parameters, so another index the loop needs is added as a new
component without changing the others; :meth:`OpenIndex.component` refuses a missing one
with a message saying to rebuild. An index built before ``titles`` existed still opens:
the loop then builds its title index from the passages (slow on a large corpus; rebuild).

:func:`open_index` maps every array read-only (worker processes on the same index share
the pages) and refuses, with one :class:`IndexFormatError` line naming the directory or
the file, an index whose format version, tokenizer settings, conventions or fingerprint
differ from the running code's (:func:`~.manifest.read_manifest`), a manifest of the wrong shape or types, a missing file or one whose size is not
the manifest's, an array of the wrong dtype, rank or length, out-of-range passage ids,
an ``indptr`` that does not start at 0 or goes backwards, non-finite scores, offsets
that do not partition the records file, a vocabulary that is not a list of distinct
strings, or (when a corpus file is given) one built from another corpus (SHA-256 of the
file's bytes). A record that fails to parse at query time is refused likewise, naming
the records file and line. :func:`verify_index` adds the SHA-256 of every file against
the manifest (``rootweaver index verify DIR``).

Every file's size and SHA-256 are in ``manifest["files"]``. Building is
:mod:`~rootweaver_innovations.retrieval.index_build`'s; :func:`build_index` is re-exported here.
Updating one in place from its corpus is :mod:`~rootweaver_innovations.retrieval.index_update`'s.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from rootweaver_innovations.conventions.registry import get_conventions
from rootweaver_innovations.documents.corpus import CorpusError, Passage, passage_from_object
from rootweaver_innovations.retrieval.dense_index import DENSE_DTYPE, DENSE_FILES
from rootweaver_innovations.retrieval.facets import Facets
from rootweaver_innovations.retrieval.titles import TITLE_FILES, TitleArrays, TitleIndex
from rootweaver_innovations.retrieval.bm25_matrix import IDFS, BM25Matrix
from rootweaver_innovations.retrieval.index_build import BuildProgress, build_index
from rootweaver_innovations.retrieval.manifest import (
    DTYPES,
    FORMAT_VERSION,
    CorpusFingerprint,
    IndexFormatError,
    IndexManifest,
    read_manifest,
    sha256_of,
)
from rootweaver_innovations.retrieval.modes import MODEL, with_mode
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, Retriever

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


class PassageStore(Sequence[Passage]):
    """The passages of an index, read by position from the memory-mapped records file.

    The records are the corpus's own JSON lines (blank lines dropped), so ``store[i]``
    parses one line exactly as :func:`~rootweaver_innovations.documents.corpus.load_corpus_jsonl`
    does; nothing is held per passage in Python. Passage ``i``'s line is the bytes
    ``offsets[i]:offsets[i + 1]`` of the file (:meth:`records`).
    """

    def __init__(self, records: Path, offsets: np.ndarray):
        self._path, self.offsets = records, offsets
        with open(records, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def records(self, a: int, z: int) -> bytes:
        """The lines of passages ``a`` to ``z - 1`` as the records file holds them (``0 <= a <= z <= len``)."""
        return self._map[int(self.offsets[a]):int(self.offsets[z])]

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
            obj = json.loads(self.records(i, i + 1))
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            return passage_from_object(obj, self._path, i + 1)
        except (ValueError, RecursionError) as exc:  # JSON, UTF-8 and field errors (CorpusError included)
            raise IndexFormatError(f"{self._path}:{i + 1}: damaged record ({' '.join(str(exc).split())[:200]}); "
                                   "rebuild the index") from None


@dataclass(frozen=True, slots=True)
class OpenIndex:
    """An opened index: its manifest, passages, BM25 matrix, title index and embeddings (arrays
    memory-mapped; ``titles`` is ``None`` for an index built before it had one, ``dense`` for
    one built without embeddings)."""

    path: Path
    manifest: IndexManifest
    passages: PassageStore
    bm25: BM25Matrix
    titles: TitleIndex | None = None
    dense: np.ndarray | None = None

    def retriever(self, mode: str = "bm25", on_note: Callable[[str], None] = print) -> Retriever:
        """The retriever of ``mode`` (:func:`~rootweaver_innovations.retrieval.modes.with_mode`) over
        this index: its ``bm25s``-backend :class:`BM25Retriever`, carrying its title index, the
        conventions it was built under and, when its ``metadata`` component counts documents with a
        source or a published date, their :class:`~rootweaver_innovations.retrieval.facets.Facets`
        (read from every record once, here); for ``dense`` and ``hybrid`` its saved embeddings
        (BM25 alone, after one line to ``on_note``, when it has none)."""
        fields = self.manifest.components.get("metadata", {}).get("fields", {})
        facets = Facets.of_passages(self.passages) if fields.get("source") or fields.get("published") else None
        lexical = BM25Retriever.from_matrix(self.passages, self.bm25, title_index=self.titles, facets=facets,
                                            conventions=get_conventions(self.manifest.conventions["name"]))
        model = self.manifest.components.get("dense", {}).get("model", MODEL)
        return with_mode(mode, lexical, self.dense, model=model, embed=False, on_note=on_note)

    def component(self, name: str) -> Mapping[str, Any]:
        """The manifest entry of component ``name``; :class:`IndexFormatError` if absent."""
        return _component(self.path, self.manifest, name)


def _component(path: Path, manifest: IndexManifest, name: str) -> Mapping[str, Any]:
    if name not in manifest.components:
        raise IndexFormatError(f"{path}: index has no {name!r} component "
                               f"(has: {', '.join(sorted(manifest.components))}); rebuild it with "
                               "`rootweaver index build`")
    return manifest.components[name]


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


def _load_array(path: Path, rel: str, shape: int | tuple[int, ...], dtype: np.dtype | None = None) -> np.ndarray:
    """The memory-mapped array ``rel`` of ``shape`` (an int: that many elements) and ``dtype``
    (default: the one of :data:`DTYPES`); :class:`IndexFormatError` naming the file otherwise."""
    try:
        arr = np.load(path / rel, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise IndexFormatError(f"{path / rel}: damaged index file ({' '.join(str(exc).split())[:200]}); "
                               "rebuild the index") from None
    want, shape = np.dtype(dtype or DTYPES[rel]), (shape,) if isinstance(shape, int) else shape
    if arr.dtype != want or arr.shape != shape:
        raise IndexFormatError(f"{path / rel}: expected {want} of shape {shape}, found {arr.dtype} of shape "
                               f"{arr.shape}; rebuild the index")
    return arr.view(np.ndarray)  # no memmap subclass overhead per slice


def _damaged(path: Path, rel: str, what: str) -> IndexFormatError:
    return IndexFormatError(f"{path / rel}: {what}; rebuild the index")


def open_index(path: str | Path, corpus: str | Path | None = None, conventions: str | None = None) -> OpenIndex:
    """Open the index at ``path`` memory-mapped (see the module docstring for what is refused).

    ``corpus``, when given, must be the file the index was built from (same size and SHA-256);
    ``conventions``, when given, the name of the conventions it was built under.
    Every check here reads the arrays once (sizes, dtypes, ranges, finiteness); the files'
    SHA-256 are checked by :func:`verify_index`.
    """
    path = Path(path)
    manifest = read_manifest(path, conventions)
    if corpus is not None:
        corpus = Path(corpus)
        if corpus.is_dir():
            raise CorpusError(f"{corpus}: a folder; an index built from a folder is opened by --index alone "
                              "(its manifest records the folder and the chunking)")
        if not corpus.is_file():
            raise CorpusError(f"{corpus}: file not found")
        fp = manifest.corpus
        if corpus.stat().st_size != fp.bytes or sha256_of(corpus) != fp.sha256:
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
    dense = None
    if "dense" in manifest.components:
        dense = _load_array(path, DENSE_FILES[0], (n, manifest.components["dense"]["dim"]), DENSE_DTYPE)
    return OpenIndex(path, manifest, passages, matrix, _open_titles(path, manifest, passages), dense)


def _open_titles(path: Path, manifest: IndexManifest, passages: PassageStore) -> TitleIndex | None:
    """The memory-mapped title index, checked like the other arrays (``None`` when the index has none)."""
    if "titles" not in manifest.components:
        return None
    lengths = TitleArrays.file_lengths(manifest.components["titles"])
    arrays = TitleArrays(*(_load_array(path, rel, n) for rel, n in zip(TITLE_FILES, lengths)))
    problem = arrays.problem(len(passages))
    if problem is not None:
        raise _damaged(path, *problem)
    return TitleIndex(passages, arrays, get_conventions(manifest.conventions["name"]))


def verify_index(path: str | Path) -> IndexManifest:
    """Every check of :func:`open_index`, then the SHA-256 of every file against the
    manifest and every record parsed; returns the manifest, or raises
    :class:`IndexFormatError` naming the first damaged file."""
    index = open_index(path)
    for rel, entry in index.manifest.files.items():
        if sha256_of(index.path / rel) != entry["sha256"]:
            raise _damaged(index.path, rel, "SHA-256 differs from the manifest (the file changed after the build)")
    for i in range(len(index.passages)):
        index.passages[i]
    return index.manifest
