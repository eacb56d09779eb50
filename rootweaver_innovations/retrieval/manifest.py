"""An index's manifest: what it holds, what built it, and the checks that refuse a stranger.

``manifest.json`` records the format, the corpus (path, SHA-256, size, passages), the
tokenizer settings, the conventions and the index **fingerprint** (:func:`index_fingerprint`:
a hash of the code and data that decide the tokens and title keys, so an index built by other
code is refused without a version anyone must remember to bump), one entry per component and
every file's size and SHA-256. :func:`read_manifest` refuses, with one
:class:`IndexFormatError` line naming the directory or the file, a manifest of the wrong shape
or types, another format version, other tokenizer settings, unknown or other conventions, or
another fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import CONVENTIONS, get_conventions
from rootweaver_innovations.documents.folders import ChunkingSettings
from rootweaver_innovations.fingerprint import code_fingerprint
from rootweaver_innovations.retrieval.dense_index import DENSE_FILES, dense_problem
from rootweaver_innovations.retrieval.titles import TITLE_COUNTS, TITLE_DTYPES, TITLE_FILES
from rootweaver_innovations.retrieval.tokens import tokenizer_settings

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "CorpusFingerprint", "IndexFormatError", "IndexManifest",
           "check_built_here", "chunking_settings", "file_entries", "index_fingerprint", "read_manifest", "sha256_of"]

FORMAT = "rootweaver-index"
FORMAT_VERSION = 6  # the manifest's layout; what decides tokens and keys is the fingerprint (index_fingerprint)
MANIFEST = "manifest.json"
PASSAGE_FILES = ("passages/records.jsonl", "passages/offsets.npy")
BM25_FILES = ("bm25/indptr.npy", "bm25/indices.npy", "bm25/robertson.npy", "bm25/lucene.npy", "bm25/tf.npy",
              "bm25/vocab.json")
CHUNKING_FILES = ("chunking/files.json",)  # a folder's files as scanned (documents.file_records)
DTYPES = {"bm25/indptr.npy": np.int64, "bm25/indices.npy": np.int32, "bm25/robertson.npy": np.float32,
           "bm25/lucene.npy": np.float32, "bm25/tf.npy": np.int32, "passages/offsets.npy": np.int64, **TITLE_DTYPES}
COMPONENT_FILES = {"passages": PASSAGE_FILES, "bm25": BM25_FILES, "titles": TITLE_FILES, "chunking": CHUNKING_FILES,
                   "dense": DENSE_FILES}
ALL_FILES = tuple(f for files in COMPONENT_FILES.values() for f in files)  # what a build may write


class IndexFormatError(ValueError):
    """An index directory cannot be used; the message names it and says what to do."""


@dataclass(frozen=True, slots=True)
class CorpusFingerprint:
    """The corpus an index was built from: its absolute path, SHA-256 and size of its bytes (for
    a folder, of the JSONL records it was cut into) and the passages it gave."""

    path: str
    sha256: str
    bytes: int
    passages: int


@dataclass(frozen=True, slots=True)
class IndexManifest:
    """``manifest.json``: format version, corpus, tokenizer settings, ``conventions`` (``name``
    and the ``fingerprint`` of everything that decided the tokens and keys), named components,
    and ``files``: every index file's ``{"bytes", "sha256"}`` by its path in the directory."""

    format_version: int
    corpus: CorpusFingerprint
    tokenizer: Mapping[str, Any]
    components: Mapping[str, Mapping[str, Any]]
    files: Mapping[str, Mapping[str, Any]]
    conventions: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``manifest.json``."""
        return {"format": FORMAT, "format_version": self.format_version, "corpus": asdict(self.corpus),
                "tokenizer": dict(self.tokenizer), "conventions": dict(self.conventions),
                "components": {k: dict(v) for k, v in self.components.items()},
                "files": {k: dict(v) for k, v in self.files.items()}}


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
    conventions = raw.get("conventions")
    if not (isinstance(conventions, dict) and set(conventions) == {"name", "fingerprint"}
            and isinstance(conventions["name"], str) and _is_sha(conventions["fingerprint"])):
        return "conventions must be {name, fingerprint (SHA-256)}"
    if not (isinstance(comps, dict) and all(isinstance(c, dict) for c in comps.values())):
        return "components is not an object of objects"
    for name, expected in COMPONENT_FILES.items():
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
    if "metadata" in comps and not _metadata_shape(comps["metadata"]):
        return ("component 'metadata' needs integers documents, with_meta, source_count, objects of integers "
                "fields and sources, and published null or {first, last}")
    if "dense" in comps and (problem := dense_problem(comps["dense"])):
        return problem
    needed = {f for name, fs in COMPONENT_FILES.items() if name in comps for f in fs}
    if not (isinstance(files, dict) and needed <= set(files) <= set(ALL_FILES)
            and all(isinstance(f, dict) and set(f) == {"bytes", "sha256"} and _is_int(f["bytes"])
                    and _is_sha(f["sha256"]) for f in files.values())):
        return "files must map every index file to {bytes, sha256}"
    return None


def _metadata_shape(md: dict[str, Any]) -> bool:
    """The ``metadata`` component has the shape of
    :meth:`~rootweaver_innovations.documents.metadata.MetaSummary.to_json`."""
    span = md.get("published")
    return (all(_is_int(md.get(k)) for k in ("documents", "with_meta", "source_count"))
            and all(isinstance(md.get(k), dict) and all(_is_int(v) for v in md[k].values())
                    for k in ("fields", "sources"))
            and (span is None or (isinstance(span, dict) and set(span) == {"first", "last"}
                                  and all(isinstance(v, str) for v in span.values()))))


def read_manifest(path: str | Path, conventions: str | None = None) -> IndexManifest:
    """The manifest of the index at ``path``, checked for shape and types and against this
    code's format version, tokenizer settings and fingerprint (:func:`check_built_here`);
    ``conventions``, when given, must be the name the index was built under.
    :class:`IndexFormatError` naming the manifest (or ``path``) otherwise."""
    path = Path(path)
    where = path / MANIFEST
    if not path.exists():
        raise IndexFormatError(f"{path}: no such index (the directory does not exist); "
                               "build one with `rootweaver index build CORPUS --out DIR`")
    if not where.is_file():
        raise IndexFormatError(f"{path}: not a rootweaver index (no {MANIFEST}); "
                               "build one with `rootweaver index build CORPUS --out DIR`")
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
                             raw["components"], raw["files"], raw["conventions"])
    current = tokenizer_settings()
    if dict(manifest.tokenizer) != current:
        changed = sorted(k for k in set(current) | set(manifest.tokenizer)
                         if manifest.tokenizer.get(k) != current.get(k))
        raise IndexFormatError(f"{path}: index built with other tokenizer settings ({', '.join(changed)} "
                               "differ); rebuild it with `rootweaver index build`")
    check_built_here(path, manifest, conventions)
    return manifest


def index_fingerprint(conventions: Conventions, chunking: Mapping[str, Any] | None = None) -> str:
    """The SHA-256 (hex) of everything that decides an index's tokens and title keys: the
    tokenizer and its settings, the record parser, the title keys, the BM25 arithmetic, the
    ``conventions`` member's code and data, and, for a folder, the chunker's code and
    ``chunking`` settings (:meth:`~rootweaver_innovations.documents.folders.ChunkingSettings.describe`)."""
    modules = ["rootweaver_innovations.text", "rootweaver_innovations.documents.corpus",
               "rootweaver_innovations.retrieval.titles", "rootweaver_innovations.retrieval.tokens",
               "rootweaver_innovations.retrieval.bm25_matrix"]
    data = [conventions.name, conventions.fingerprint(), json.dumps(tokenizer_settings(), sort_keys=True)]
    if chunking is not None:
        modules += ["rootweaver_innovations.documents.folders", "rootweaver_innovations.documents.formats"]
        data.append(json.dumps(dict(chunking), sort_keys=True))
    return code_fingerprint(modules, data)


def chunking_settings(manifest: IndexManifest) -> dict[str, Any] | None:
    """The chunking settings a folder's index was built with (``None`` for a JSONL corpus)."""
    chunked = manifest.components.get("chunking")
    return None if chunked is None else {k: chunked.get(k) for k in ChunkingSettings().describe()}


def check_built_here(path: Path, manifest: IndexManifest, conventions: str | None = None) -> Conventions:
    """The conventions ``manifest`` was built under, once they are known to this code, equal
    to ``conventions`` when that is given, and the running code's fingerprint for them equals
    the manifest's; :class:`IndexFormatError` naming both sides otherwise."""
    built = manifest.conventions["name"]
    if built not in CONVENTIONS:
        raise IndexFormatError(f"{path}: index built with conventions {built!r}, which this rootweaver does not "
                               f"have (it has {', '.join(sorted(CONVENTIONS))}); rebuild it with `rootweaver index build`")
    if conventions is not None and conventions != built:
        raise IndexFormatError(f"{path}: index built with conventions {built!r}, asked with {conventions!r}; "
                               f"ask with --conventions {built} or rebuild it with --conventions {conventions}")
    member = get_conventions(built)
    current = index_fingerprint(member, chunking_settings(manifest))
    if current != manifest.conventions["fingerprint"]:
        raise IndexFormatError(f"{path}: index fingerprint {manifest.conventions['fingerprint'][:12]}, this rootweaver's "
                               f"{current[:12]} (the code that decides index tokens and keys changed); rebuild it "
                               "with `rootweaver index build`")
    return member


def file_entries(directory: Path, names: Iterable[str], known: Mapping[str, str] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """``manifest["files"]`` entries ``{"bytes", "sha256"}`` of the files ``names`` under ``directory``, in that order;
    ``known`` gives the SHA-256 of files hashed as they were written (not read again)."""
    known = known or {}
    return {f: {"bytes": (directory / f).stat().st_size, "sha256": known.get(f) or sha256_of(directory / f)}
            for f in names}


def sha256_of(corpus: Path) -> str:
    """SHA-256 of the bytes of ``corpus``."""
    h = hashlib.sha256()
    with open(corpus, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()
