"""Updating a saved index: bring it in line with the folder or JSONL file it was built from,
re-reading only what changed (``rootweaver index update INDEX [--from PATH]``).

What is compared. A folder's index records its files (``chunking/files.json``:
:mod:`~rootweaver_innovations.documents.file_records`); a file whose size and mtime (else
SHA-256) are unchanged keeps its rows, new and changed files are cut again, deleted files
drop out. A JSONL corpus's unit is the record: a record whose line is byte for byte one of
the index's records (their BLAKE2b digests match) keeps its row, a new or changed one is
parsed again; a record titled by an id that takes its BM25 file subject from
the run of records before it (:func:`~rootweaver_innovations.retrieval.tokens.corpus_tokens`)
is tokenised again when that run changed.

What is carried over. A kept row keeps its passage id and record, its BM25 term counts
(``bm25/tf.npy``: the term frequency of every posting, 4 bytes a posting, about 280 bytes
a 128-token chunk), its title keys (read back from the title arrays) and its rows of every
per-row component in :data:`ROW_COMPONENTS`; the other rows are computed. The BM25
statistics (passages, document frequencies, average length) and every score are then
recomputed and the title index merged again; the metadata summary is the old one less the
documents of the rows dropped plus those of the rows computed (counted again over every record
when the old one cannot tell). So the result is, file for file, the index a build of the current
corpus writes (:func:`~rootweaver_innovations.retrieval.bm25_matrix.write_bm25` orders the columns by term).

How it is replaced. The new index is written to ``.<name>.building-<pid>`` beside the old one
and swapped in by one ``renameat2(RENAME_EXCHANGE)`` (Linux; elsewhere two renames, between
which the index is briefly missing); the old directory is then removed. A process that
opened the old index keeps reading its memory-mapped files; a failure or signal before the
swap removes the new directory and leaves the old index whole.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import get_conventions
from rootweaver_innovations.defaults import MAX_RECORD_BYTES
from rootweaver_innovations.documents.corpus import CorpusError, Passage, meta_summary, passage_from_object, record_object
from rootweaver_innovations.documents.file_records import FileRecord, read_records, records_bytes, scan_folder
from rootweaver_innovations.documents.folders import ChunkingSettings, SkippedFile, count_by_reason, passage_record
from rootweaver_innovations.documents.metadata import MetaSummary
from rootweaver_innovations.retrieval.bm25_matrix import (Vocabulary, count_chunk, merge_terms, save_columns,
                                                          update_postings)
from rootweaver_innovations.retrieval.index import OpenIndex, PassageStore, open_index
from rootweaver_innovations.retrieval.dense_index import dense_rows
from rootweaver_innovations.retrieval.index_build import _documents_meta, _lines, _remove_stale_builds
from rootweaver_innovations.retrieval.manifest import (
    CHUNKING_FILES,
    MANIFEST,
    PASSAGE_FILES,
    CorpusFingerprint,
    IndexFormatError,
    IndexManifest,
    file_entries,
)
from rootweaver_innovations.retrieval.titles import TITLE_FILES, TitleArrays, TitleBatch, last_file_subject, passage_keys
from rootweaver_innovations.retrieval.tokens import corpus_tokens

__all__ = ["ROW_COMPONENTS", "RowFunction", "UpdateReport", "update_index"]

RowFunction = Callable[[Sequence[Passage], Mapping[str, Any]], Mapping[str, np.ndarray]]
ROW_COMPONENTS: dict[str, RowFunction] = {"dense": dense_rows}
"""Components holding one row per passage, by name: a function that, given the passages to
compute (the new and changed ones, in index order) and the component's manifest entry, returns
for each of the component's files (its path in the index) an array whose first axis runs over
those passages. An update copies the kept rows from the old files and writes each file whole in
passage order; the manifest entry is carried over. An index with a component neither here nor
built in is refused."""

_BUILT_IN = frozenset({"passages", "bm25", "titles", "chunking", "metadata"})


@dataclass(frozen=True, slots=True)
class UpdateReport:
    """What an update did: ``unit`` (``"files"`` of a folder, ``"records"`` of a JSONL file)
    ``changed``, ``added`` and ``removed``; ``reindexed`` passages cut or tokenised again of
    ``manifest.corpus.passages``; ``up_to_date`` when nothing changed and nothing was written."""

    manifest: IndexManifest
    unit: str
    changed: int
    added: int
    removed: int
    reindexed: int
    up_to_date: bool


@dataclass(slots=True)
class _Plan:
    """The updated corpus: per row the old row it keeps (-1: computed from ``fresh`` and ``lines``,
    in row order), the corpus (a folder's records are hashed as written), counts, a folder's files."""

    old_rows: list[int] = field(default_factory=list)
    fresh: list[Passage] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    corpus: CorpusFingerprint | None = None
    counts: tuple[int, int, int] = (0, 0, 0)
    files: list[FileRecord] | None = None
    skips: list[SkippedFile] = field(default_factory=list)
    same: bool = False


def _plan_folder(old: OpenIndex, folder: Path, conventions: Conventions, on_skip: Callable[[SkippedFile], None],
                 checkpoint: Callable[[], None]) -> _Plan:
    chunked = old.component("chunking")
    settings = ChunkingSettings(chunked["chunk_tokens"], chunked["overlap_tokens"], chunked["max_file_bytes"])
    try:
        records = read_records(old.path / CHUNKING_FILES[0])
    except ValueError as exc:
        raise IndexFormatError(f"{exc}; rebuild the index") from None
    starts = np.cumsum([0, *(r.chunks for r in records)]).tolist()
    if starts[-1] != old.manifest.corpus.passages:
        raise IndexFormatError(f"{old.path / CHUNKING_FILES[0]}: {starts[-1]:,} chunks, the index has "
                               f"{old.manifest.corpus.passages:,} passages; rebuild the index")
    first_row = {r.path: start for r, start in zip(records, starts)}
    plan = _Plan(files=[])

    def skip(s: SkippedFile) -> None:
        plan.skips.append(s)
        on_skip(s)

    changed = added = 0
    written = (old.path / MANIFEST).stat().st_mtime_ns
    for scanned in scan_folder(folder, settings, conventions, skip, {r.path: r for r in records}, written):
        checkpoint()
        plan.files.append(scanned.record)
        if scanned.passages is None:
            start = first_row[scanned.record.path]
            plan.old_rows.extend(range(start, start + scanned.record.chunks))
            continue
        changed, added = (changed + 1, added) if scanned.record.path in first_row else (changed, added + 1)
        plan.old_rows.extend([-1] * len(scanned.passages))
        plan.fresh.extend(scanned.passages)
        plan.lines.extend(json.dumps(passage_record(p), ensure_ascii=False).encode("utf-8") + b"\n"
                          for p in scanned.passages)
    plan.counts = (changed, added, len(set(first_row) - {f.path for f in plan.files}))
    plan.corpus = CorpusFingerprint(os.path.abspath(folder), "", 0, len(plan.old_rows))
    plan.same = (plan.files == records and plan.corpus.path == old.manifest.corpus.path
                 and count_by_reason(plan.skips) == chunked["skipped"])  # a new hidden file is counted too
    return plan


def _plan_jsonl(old: OpenIndex, corpus: Path, max_record_bytes: int, checkpoint: Callable[[], None]) -> _Plan:
    store = old.passages
    digests: dict[bytes, int] = {}
    for j in range(old.manifest.corpus.passages):
        digests.setdefault(hashlib.blake2b(store.records(j, j + 1)).digest(), j)
    plan, seen = _Plan(), set()
    kept_prev, clean_prev, prev = -1, True, (None, False)  # previous row: old row, kept as is, (title, no source)
    changed_ids: list[str] = []

    def continues_in_old(j: int, title: object) -> bool:
        obj = json.loads(store.records(j - 1, j)) if j else {}
        return obj.get("source") is None and obj.get("title") == title

    with open(corpus, "rb") as fh:
        raw, lines = _lines(fh, corpus.suffix == ".gz", corpus, max_record_bytes)
        try:
            for lineno, line in enumerate(lines, 1):
                if lineno % 10_000 == 0:
                    checkpoint()
                if not line.strip():
                    continue
                line = line if line.endswith(b"\n") else line + b"\n"
                obj = record_object(corpus, lineno, line)
                j = digests.pop(hashlib.blake2b(line).digest(), -1)
                p = passage_from_object(obj, corpus, lineno) if j < 0 else None
                pid = obj["id"]
                if pid in seen:
                    raise CorpusError(f"{corpus}:{lineno}: duplicate id {pid!r}")
                seen.add(pid)
                here = (obj["title"], obj.get("source") is None)
                # a record starts its own run of file subjects unless it follows one of its title
                alone = not (here[1] and prev[1] and here[0] == prev[0])
                same_before = j == 0 if not plan.old_rows else (j > 0 and kept_prev == j - 1)
                clean = j >= 0 and ((same_before and (alone or clean_prev))
                                    or (alone and not (here[1] and continues_in_old(j, here[0]))))
                plan.old_rows.append(j if clean else -1)
                if not clean:
                    plan.fresh.append(p or passage_from_object(obj, corpus, lineno))
                    plan.lines.append(line)
                    if j < 0:
                        changed_ids.append(pid)
                kept_prev, clean_prev, prev = j, clean, here
        except (OSError, EOFError) as exc:
            raise CorpusError(f"{corpus}: unreadable ({exc})") from None
        while raw.read(1 << 20):
            pass
    if not plan.old_rows:
        raise CorpusError(f"{corpus}: no passages")
    gone = {json.loads(store.records(j, j + 1))["id"] for j in digests.values()}
    changed = sum(1 for pid in changed_ids if pid in gone)
    plan.counts = (changed, len(changed_ids) - changed, len(gone) - changed)
    plan.corpus = CorpusFingerprint(os.path.abspath(corpus), raw.sha256.hexdigest(), raw.count, len(plan.old_rows))
    fp = old.manifest.corpus
    plan.same = (plan.corpus.path, plan.corpus.sha256, plan.corpus.bytes) == (fp.path, fp.sha256, fp.bytes)
    return plan


def _runs(old_rows: np.ndarray) -> Iterator[tuple[int, int]]:
    """``[a, z)`` spans of rows that are one kept stretch of old rows, or one computed row."""
    cut = (np.diff(old_rows) != 1) | (old_rows[1:] < 0) | (old_rows[:-1] < 0)
    return pairwise([0, *(np.flatnonzero(cut) + 1).tolist(), len(old_rows)])


def _write_passages(store: PassageStore, plan: _Plan, old_rows: np.ndarray, tmp: Path) -> tuple[str, int]:
    """``passages/records.jsonl`` and ``offsets.npy``; the records' SHA-256 and size."""
    sizes, lines, sha = [], iter(plan.lines), hashlib.sha256()
    with open(tmp / "passages" / "records.jsonl", "wb") as out:
        for a, z in _runs(old_rows):
            if old_rows[a] < 0:
                data = next(lines)
                sizes.append(np.array([len(data)]))
            else:
                first, last = int(old_rows[a]), int(old_rows[z - 1]) + 1
                data = store.records(first, last)
                sizes.append(np.diff(store.offsets[first:last + 1]))
            out.write(data)
            sha.update(data)
    offsets = np.concatenate([[0], np.cumsum(np.concatenate(sizes))]).astype(np.int64)
    np.save(tmp / "passages" / "offsets.npy", offsets)
    return sha.hexdigest(), int(offsets[-1])


def _fresh_tokens(store: PassageStore, plan: _Plan, old_rows: np.ndarray, conventions: Conventions) -> list[list[str]]:
    """The BM25 tokens of the computed rows, each stretch of them continuing the run of file
    subjects the rows before it leave (read back only as far as that run began)."""
    computed = old_rows < 0
    at = np.cumsum(computed) - 1  # a computed row's place in plan.fresh

    def backwards(i: int) -> Iterator[Passage]:
        for r in range(i, -1, -1):
            yield plan.fresh[at[r]] if computed[r] else store[int(old_rows[r])]

    edges = np.flatnonzero(np.diff(np.concatenate([[False], computed, [False]]).astype(np.int8)))
    tokens: list[list[str]] = []
    for a, z in zip(edges[::2].tolist(), edges[1::2].tolist()):
        carry = last_file_subject(backwards(a - 1), conventions) if a else ("", "")
        tokens.extend(corpus_tokens(plan.fresh[at[a]:at[a] + z - a], conventions, carry))
    return tokens


def _write_bm25(old: OpenIndex, old_rows: np.ndarray, new_row: np.ndarray, tokens: list[list[str]],
                tmp: Path) -> tuple[int, int, float]:
    """The BM25 files of the updated corpus; vocabulary size, postings and average length.

    The kept rows' postings are read back with their term counts and the computed rows'
    added (:func:`~rootweaver_innovations.retrieval.bm25_matrix.update_postings`); every score
    is then recomputed, since the passage count and average length moved."""
    bm = old.component("bm25")
    indptr = old.bm25.indptr
    tf = np.load(old.path / "bm25" / "tf.npy", mmap_mode="r")
    if tf.dtype != np.int32 or tf.shape != (bm["nnz"],):
        raise IndexFormatError(f"{old.path / 'bm25' / 'tf.npy'}: expected int32 of shape ({bm['nnz']},); "
                               "rebuild the index")
    vocab = Vocabulary()
    f_term, f_doc, f_tf, _ = count_chunk(tokens, vocab, 0)
    known, old_terms = old.bm25.vocab, list(old.bm25.vocab)  # open_index lists vocab.json's terms in column order
    new_terms = sorted(t for t in vocab if t not in known)
    terms, old_place, new_place = merge_terms(old_terms, new_terms)
    new_at = {t: i for i, t in zip(new_place.tolist(), new_terms)}
    place = np.fromiter((new_at[t] if t in new_at else old_place[known[t]] for t in vocab), dtype=np.int64,
                        count=len(vocab))
    df, doc, tf = update_postings(indptr, old.bm25.indices, tf, new_row, old_place, len(terms), place[f_term],
                                  np.flatnonzero(old_rows < 0)[f_doc], f_tf)
    alive = np.flatnonzero(df)  # a deleted file's last terms go
    lengths = np.bincount(doc, weights=tf, minlength=len(old_rows)).astype(np.int64)
    save_columns(tmp / "bm25", [terms[i] for i in alive.tolist()], df[alive], doc, tf, lengths, bm["k1"], bm["b"])
    return len(alive), len(doc), float(lengths.mean())


def _write_titles(old: OpenIndex, plan: _Plan, old_rows: np.ndarray, new_row: np.ndarray, conventions: Conventions,
                  tmp: Path) -> TitleArrays:
    """The title index of the updated corpus: kept rows' keys read back from the old arrays,
    computed rows' from their passages, merged as a build merges them."""
    arrays = TitleArrays(*(np.load(old.path / rel, mmap_mode="r") for rel in TITLE_FILES))
    rows = new_row[arrays.page_rows]
    key_of = np.repeat(np.arange(len(arrays.key_hash)), np.diff(arrays.page_indptr))[rows >= 0]
    rows = rows[rows >= 0]
    offsets, blob = arrays.key_offsets.tolist(), arrays.key_text.tobytes()
    # each kept key once (as a one-key row: its hash, CRC, first token, text), then the computed rows' keys
    old_keys = TitleBatch.from_keys(([blob[offsets[k]:offsets[k + 1]].decode("utf-8")] for k in np.unique(key_of).tolist()), 0)
    fresh = TitleBatch.from_keys((passage_keys(p, conventions) for p in plan.fresh), 0)
    row = np.concatenate([rows, np.flatnonzero(old_rows < 0)[fresh.row]])
    order = np.argsort(row, kind="stable")  # the entries in row order, as a build lists them

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(old_keys, name), getattr(fresh, name)])

    batch = TitleBatch(np.concatenate([arrays.key_hash[key_of], fresh.key_hash])[order], row[order].astype(np.int32),
                       cat("unique_hash"), cat("unique_crc"), cat("first_hash"), cat("first_len"),
                       np.concatenate([old_keys.offsets, old_keys.offsets[-1] + fresh.offsets[1:]]), cat("text"))
    merged = TitleArrays.merge([batch])
    merged.save(tmp)
    return merged


def _write_rows(old: OpenIndex, plan: _Plan, old_rows: np.ndarray, tmp: Path) -> None:
    """Every :data:`ROW_COMPONENTS` file the index has: kept rows copied, the others computed."""
    kept, computed = np.flatnonzero(old_rows >= 0), np.flatnonzero(old_rows < 0)
    for name, compute in ROW_COMPONENTS.items():
        if name not in old.manifest.components:
            continue
        fresh = compute(plan.fresh, old.component(name)) if plan.fresh else {}
        for rel in old.component(name)["files"]:
            prev = np.load(old.path / rel, mmap_mode="r")
            rows = np.empty((len(old_rows), *prev.shape[1:]), dtype=prev.dtype)
            rows[kept] = prev[old_rows[kept]]
            if len(computed):
                rows[computed] = fresh[rel]
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            np.save(tmp / rel, rows)


def _metadata(old: OpenIndex, plan: _Plan, new_row: np.ndarray, tmp: Path) -> dict[str, Any]:
    """The ``metadata`` entry of the updated corpus: the old counts less the documents of the
    old rows not kept, plus those of the rows computed (``plan.fresh``); counted again over
    every record written when the old entry lists only the most named sources or a document
    gone held its first or last day."""
    before = MetaSummary.from_json(old.component("metadata"))
    gone = _documents_meta(map(old.passages.__getitem__, np.flatnonzero(new_row < 0).tolist()))
    meta = None if before is None else before.without(gone)
    if meta is None:
        return meta_summary(tmp / "passages" / "records.jsonl").to_json()
    meta.merge(_documents_meta(plan.fresh))
    return meta.to_json()


def _write(old: OpenIndex, plan: _Plan, conventions: Conventions, tmp: Path,
           checkpoint: Callable[[], None]) -> IndexManifest:
    """The updated index in ``tmp`` (which must not exist); its manifest."""
    store, old_rows = old.passages, np.asarray(plan.old_rows, dtype=np.int64)
    kept, new_row = np.flatnonzero(old_rows >= 0), np.full(old.manifest.corpus.passages, -1, dtype=np.int64)
    new_row[old_rows[kept]] = kept  # each old row's row in the update (-1: not kept)
    (tmp / "passages").mkdir(parents=True)
    (tmp / "bm25").mkdir()
    sha, size = _write_passages(store, plan, old_rows, tmp)
    tokens = _fresh_tokens(store, plan, old_rows, conventions)
    checkpoint()
    vocab_size, nnz, avg = _write_bm25(old, old_rows, new_row, tokens, tmp)
    checkpoint()
    titles = _write_titles(old, plan, old_rows, new_row, conventions, tmp)
    _write_rows(old, plan, old_rows, tmp)
    components = {name: dict(entry) for name, entry in old.manifest.components.items()}
    components["passages"]["count"] = len(old_rows)
    components["bm25"].update(vocab_size=vocab_size, nnz=nnz, avg_length=avg)
    components["titles"].update(titles.counts())
    if "metadata" in components:
        components["metadata"] = _metadata(old, plan, new_row, tmp)
    corpus = plan.corpus
    if plan.files is not None:
        corpus = CorpusFingerprint(corpus.path, sha, size, corpus.passages)
        components["chunking"].update(documents=sum(1 for f in plan.files if f.chunks),
                                      skipped=count_by_reason(plan.skips))
        (tmp / "chunking").mkdir()
        (tmp / CHUNKING_FILES[0]).write_bytes(records_bytes(plan.files))
    manifest = IndexManifest(old.manifest.format_version, corpus, old.manifest.tokenizer, components,
                             file_entries(tmp, [f for c in components.values() for f in c.get("files", ())],
                                          {PASSAGE_FILES[0]: sha}),
                             old.manifest.conventions)
    (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2), encoding="utf-8")
    return manifest


def _swap(new: Path, index: Path) -> None:
    """Put the directory ``new`` at ``index`` and the old index at ``new``: one atomic
    ``renameat2(RENAME_EXCHANGE)`` where the C library and the filesystem have it, else two
    renames (between them ``index`` is missing) and a third."""
    import ctypes  # imported where it is used: only a swap needs it

    try:
        exchange = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        exchange = None
    if exchange is not None:
        if exchange(-100, os.fsencode(new), -100, os.fsencode(index), 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(index))
    aside = index.with_name(f".{index.name}.building-old-{os.getpid()}")
    os.rename(index, aside)
    os.rename(new, index)
    os.rename(aside, new)


def update_index(index: str | Path, source: str | Path | None = None, *,
                 on_skip: Callable[[SkippedFile], None] | None = None, max_record_bytes: int = MAX_RECORD_BYTES,
                 checkpoint: Callable[[], None] | None = None) -> UpdateReport:
    """Update the index at ``index`` from ``source`` (default: the path its manifest records;
    give the new place of a corpus that moved), replacing it atomically (module docstring).

    The index is opened with every check of :func:`~rootweaver_innovations.retrieval.index.open_index`,
    so one of another format version or fingerprint is refused with an :class:`IndexFormatError`
    saying to rebuild, as is one holding a component an update cannot carry. ``on_skip`` hears every
    file a folder skips; ``max_record_bytes`` bounds a JSONL line; ``checkpoint`` is called often
    (after each file, every 10,000 lines, between steps and before the swap), and an exception
    it raises stops the update, leaving the old index whole. :class:`CorpusError` for a missing
    source or one that does not read (as :func:`~rootweaver_innovations.retrieval.index_build.build_index`
    refuses it)."""
    index = Path(os.path.realpath(index))  # a link to the index: the directory it names is replaced
    checkpoint = checkpoint or (lambda: None)
    old = open_index(index)
    unknown = sorted(set(old.manifest.components) - _BUILT_IN - set(ROW_COMPONENTS))
    if unknown:
        raise IndexFormatError(f"{index}: index has components an update cannot carry ({', '.join(unknown)}); "
                               "rebuild it with `rootweaver index build`")
    old.component("titles")
    conventions = get_conventions(old.manifest.conventions["name"])
    source = Path(source if source is not None else old.manifest.corpus.path)
    if "chunking" in old.manifest.components:
        if not source.is_dir():
            raise CorpusError(f"{source}: not a folder, and {index} was built from one (give its place with --from)")
        plan = _plan_folder(old, source, conventions, on_skip or (lambda s: None), checkpoint)
    else:
        if not source.is_file():
            raise CorpusError(f"{source}: file not found, and {index} was built from a JSONL file "
                              "(give its place with --from)")
        plan = _plan_jsonl(old, source, max_record_bytes, checkpoint)
    unit = "files" if plan.files is not None else "records"
    if plan.same:
        return UpdateReport(old.manifest, unit, *plan.counts, 0, True)
    _remove_stale_builds(index)
    tmp = index.with_name(f".{index.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        manifest = _write(old, plan, conventions, tmp, checkpoint)
        checkpoint()
        _swap(tmp, index)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # after the swap, the old index
    return UpdateReport(manifest, unit, *plan.counts, len(plan.fresh), False)
