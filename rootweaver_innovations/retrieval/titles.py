"""The title index: normalised passage titles -> passages, and the titles a text mentions.

A passage is indexed under its keys (:func:`passage_keys`): those of its title
(:func:`title_keys`: lowercase ``\\w+`` tokens of the title, of the title without a
parenthesised qualifier, of the part before the first comma, and of that without a leading
article), and, for a record titled by an id or a file name (``doc-17``) that its text does
not repeat, those of the names its lead sentence gives its subject under the corpus's
conventions (:meth:`~rootweaver_innovations.conventions.base.Conventions.subject_names`). A
chunk of a document is named by :mod:`~rootweaver_innovations.documents.folders` and keeps
its title's keys only.

The index is five flat arrays (:class:`TitleArrays`), so the same object works over an
in-memory corpus (built by :meth:`TitleIndex.build`) and over a saved index, where the
arrays are memory-mapped and opening loads no passage (:meth:`TitleArrays.load`). Keys
are looked up by a 64-bit BLAKE2b hash and then compared byte for byte, so a hash
collision with a text's words never matches a wrong key; two *indexed* keys with the
same hash are refused when the arrays are merged (:class:`TitleHashCollision`; about
``K**2 / 2**65`` likely for ``K`` keys, 2e-7 at three million).
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from hashlib import blake2b
from pathlib import Path

import numpy as np

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.text import LEADING_WORDS, STOP_WORDS, WORD

__all__ = [
    "TITLE_COUNTS",
    "TITLE_DTYPES",
    "TITLE_FILES",
    "Mention",
    "TitleArrays",
    "TitleBatch",
    "TitleHashCollision",
    "TitleIndex",
    "file_subjects",
    "id_titled",
    "key_of",
    "last_file_subject",
    "passage_keys",
    "title_keys",
]

TITLE_FILES = ("titles/key_hash.npy", "titles/key_offsets.npy", "titles/key_text.npy", "titles/page_indptr.npy",
               "titles/page_rows.npy", "titles/first_hash.npy", "titles/first_len.npy")
TITLE_COUNTS = ("keys", "pages", "text_bytes", "first_tokens")  # what a manifest records (see TitleArrays.counts)
TITLE_DTYPES = {"titles/key_hash.npy": np.uint64, "titles/key_offsets.npy": np.int64,
                "titles/key_text.npy": np.uint8, "titles/page_indptr.npy": np.int64,
                "titles/page_rows.npy": np.int32, "titles/first_hash.npy": np.uint64,
                "titles/first_len.npy": np.int32}

_PAREN = re.compile(r"\s*\([^)]*\)")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_ID = re.compile(r"|\S*[\d._\-/:#]\S*")  # an empty title, or one token holding a digit or a separator


class TitleHashCollision(ValueError):
    """Two different title keys of one corpus share a 64-bit hash (see the module docstring)."""


def key_of(text: str) -> str:
    """The normalised key of ``text``: its lowercase ``\\w+`` tokens, accents dropped
    ("Julián" -> "julian"), joined by single spaces."""
    text = text.lower()
    return " ".join(WORD.findall(text if text.isascii() else _fold(text)))


def _fold(text: str) -> str:
    """``text`` without combining accents (NFKD)."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def title_keys(title: str) -> tuple[str, ...]:
    """Normalised keys of a title: whole, without "(qualifier)", before the first comma, and
    that without a leading article.

    A key needs 4+ characters and a token that is not a stop word.
    """
    bare = _PAREN.sub("", title).strip()
    out = []
    for variant in (title, bare, bare.split(",")[0], _ARTICLE.sub("", bare.split(",")[0])):
        key = key_of(variant)
        if len(key) >= 4 and any(t not in STOP_WORDS for t in key.split()) and key not in out:
            out.append(key)
    return tuple(out)


def passage_keys(passage: Passage, conventions: Conventions) -> tuple[str, ...]:
    """The keys ``passage`` is indexed under: its title's (:func:`title_keys`), then, when it
    is a record (no ``source``) titled by an id (one token with a digit or one of ``._-/:#``,
    or nothing) that shares no word with its text, those of every name its lead sentence
    gives its subject under ``conventions`` (``Passage("doc-17", "doc-17", ("Ibrium was the
    vizier of Ebla.",))`` -> ``("doc 17", "ibrium")`` under ``wikipedia``). A real title, even
    one its text does not repeat, is kept alone: the first sentence of a paragraph from the
    middle of a page rarely names anything."""
    keys = title_keys(passage.title)
    if not id_titled(passage):
        return keys
    names = conventions.subject_names(passage.sentences[0])
    return tuple(dict.fromkeys((*keys, *(k for name in names for k in title_keys(name)))))


def id_titled(passage: Passage) -> bool:
    """``passage`` is a record (no ``source``) titled by an id (one token with a digit or one of
    ``._-/:#``, or nothing) that shares no word with its text: ``doc-17``, ``notes_2019.txt``,
    not ``AC/DC`` or ``1984``, whose pages say their names. Such a title names nothing a
    question or a reader can use."""
    title = passage.title.strip()
    return (passage.source is None and _ID.fullmatch(title) is not None
            and set(WORD.findall(title.lower())).isdisjoint(WORD.findall(passage.text.lower())))


def file_subjects(passages: Iterable[Passage], conventions: Conventions,
                  carry: tuple[str, str] = ("", "")) -> Iterator[tuple[str, str]]:
    """For each of ``passages`` in order, ``(title, subject)`` of the run of records it belongs to.

    A run is a stretch of consecutive records (no ``source``) sharing one non-empty title,
    the first of them titled by an id (:func:`id_titled`): the windows a user cut from one
    file and wrote one after the other. Its subject is the name its first record's lead
    sentence opens with (``conventions.lead_subject``; ``""`` when it names none). Any other passage yields ``("", "")``. ``carry`` is the run the sequence
    continues (the last pair yielded for the records before it; :func:`last_file_subject`),
    so a corpus read in parts gets the subjects of the corpus read whole. One
    :func:`id_titled` and one ``lead_subject`` per run. Runs, not titles, so that a chunk of
    the corpus needs nothing but the chunk before it; the loop reads all records under one
    title as one file (:class:`TitleIndex`), which agrees wherever each file's windows are
    written together, as a chunker writes them."""
    title, subject = carry
    for p in passages:
        if not (title and p.title == title and p.source is None):
            title, subject = ((p.title, conventions.lead_subject(p.sentences[0]) or "")
                              if p.title and id_titled(p) else ("", ""))
        yield title, subject


def last_file_subject(backwards: Iterable[Passage], conventions: Conventions,
                      carry: tuple[str, str] = ("", "")) -> tuple[str, str]:
    """The last pair :func:`file_subjects` gives for a sequence (continuing ``carry``) whose
    records, read from the last one back, are ``backwards``: read only as far back as its
    last run began (one record when the last one's title is not an id)."""
    run: list[Passage] = []
    for p in backwards:
        if (p.source is not None or not p.title or not _ID.fullmatch(p.title.strip())
                or (run and p.title != run[0].title)):
            break
        run.append(p)
    else:
        return (*file_subjects(run[::-1], conventions, carry),)[-1] if run else carry
    return (*file_subjects(run[::-1], conventions),)[-1] if run else ("", "")


@lru_cache(maxsize=1 << 16)
def _hash(text: str) -> int:
    return int.from_bytes(blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class TitleBatch:
    """The hashed title keys of consecutive passages, as :meth:`TitleArrays.merge` takes them.

    ``key_hash``/``row`` (uint64/int32): one entry per (key, passage), passages ascending;
    then one entry per distinct key of the batch: its hash (``unique_hash``), the CRC-32 of
    its UTF-8 bytes (``unique_crc``), the hash of its first token and its token count
    (``first_hash``, ``first_len``), and its bytes (``text`` sliced by ``offsets``).
    """

    key_hash: np.ndarray
    row: np.ndarray
    unique_hash: np.ndarray
    unique_crc: np.ndarray
    first_hash: np.ndarray
    first_len: np.ndarray
    offsets: np.ndarray
    text: np.ndarray

    @classmethod
    def from_keys(cls, keys_per_passage: Iterable[Sequence[str]], first_row: int) -> TitleBatch:
        """The batch of the passages' keys (:func:`passage_keys`), the first passage's row
        being ``first_row``."""
        hashes: list[int] = []
        rows: list[int] = []
        unique: dict[str, int] = {}
        for row, names in enumerate(keys_per_passage, first_row):
            for key in names:
                hashes.append(unique.setdefault(key, _hash(key)))
                rows.append(row)
        keys = list(unique)
        blobs = [k.encode("utf-8") for k in keys]
        return cls(np.array(hashes, dtype=np.uint64), np.array(rows, dtype=np.int32),
                   np.array(list(unique.values()), dtype=np.uint64),
                   np.array([zlib.crc32(b) for b in blobs], dtype=np.uint32),
                   np.array([_hash(k.split(" ", 1)[0]) for k in keys], dtype=np.uint64),
                   np.array([k.count(" ") + 1 for k in keys], dtype=np.int32),
                   np.cumsum([0, *map(len, blobs)], dtype=np.int64),
                   np.frombuffer(b"".join(blobs), dtype=np.uint8))


@dataclass(frozen=True, slots=True)
class TitleArrays:
    """The flat arrays of a :class:`TitleIndex` (any may be memory-mapped read-only).

    ``key_hash`` (uint64, K, strictly ascending); ``key_text`` (uint8) holds key ``j``'s UTF-8
    bytes at ``key_offsets[j]:key_offsets[j + 1]`` (int64, K + 1); the passages titled under
    key ``j`` are ``page_rows[page_indptr[j]:page_indptr[j + 1]]`` (int32 rows, ascending;
    int64 pointers, K + 1); ``first_hash``/``first_len`` (uint64/int32, F) list every distinct
    (first token, key length in tokens) pair, by hash ascending then length descending.
    """

    key_hash: np.ndarray
    key_offsets: np.ndarray
    key_text: np.ndarray
    page_indptr: np.ndarray
    page_rows: np.ndarray
    first_hash: np.ndarray
    first_len: np.ndarray

    @classmethod
    def merge(cls, batches: Sequence[TitleBatch]) -> TitleArrays:
        """The arrays of ``batches`` (in passage order); :class:`TitleHashCollision`, naming
        both keys, when two different keys share a hash."""
        def cat(name: str, dtype: type) -> np.ndarray:
            return np.concatenate([getattr(b, name) for b in batches] or [np.zeros(0, dtype)])

        key_hash, row = cat("key_hash", np.uint64), cat("row", np.int32)
        keys, counts = np.unique(key_hash, return_counts=True)
        page_indptr = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(counts, out=page_indptr[1:])
        # each batch lists its distinct keys; a key in several batches is kept once
        text = cat("text", np.uint8)
        shifts = np.cumsum([0, *(len(b.text) for b in batches)])
        starts = np.concatenate([b.offsets[:-1] + shift for b, shift in zip(batches, shifts)]
                                or [np.zeros(0, np.int64)])
        lengths = np.concatenate([np.diff(b.offsets) for b in batches] or [np.zeros(0, np.int64)])
        u_hash, u_crc = cat("unique_hash", np.uint64), cat("unique_crc", np.uint32)
        order = np.argsort(u_hash, kind="stable")
        repeat = u_hash[order][1:] == u_hash[order][:-1]
        clash = np.flatnonzero(repeat & ((u_crc[order][1:] != u_crc[order][:-1])
                                         | (lengths[order][1:] != lengths[order][:-1])))
        if clash.size:
            a, z = order[clash[0]], order[clash[0] + 1]
            names = [bytes(text[starts[i] : starts[i] + lengths[i]]).decode() for i in (a, z)]
            raise TitleHashCollision(f"title keys {names[0]!r} and {names[1]!r} share a 64-bit hash")
        first = order[np.r_[True, ~repeat]] if order.size else order
        key_offsets = np.zeros(len(first) + 1, dtype=np.int64)
        np.cumsum(lengths[first], out=key_offsets[1:])
        gather = np.repeat(starts[first] - key_offsets[:-1], lengths[first]) + np.arange(key_offsets[-1])
        pairs = np.unique(np.rec.fromarrays([cat("first_hash", np.uint64)[first], -cat("first_len", np.int32)[first]]))
        return cls(keys, key_offsets, text[gather], page_indptr, row[np.argsort(key_hash, kind="stable")],
                   np.ascontiguousarray(pairs["f0"]), (-pairs["f1"]).astype(np.int32))

    def counts(self) -> dict[str, int]:
        """The array lengths a manifest records: ``keys`` (K), ``pages`` (rows), ``text_bytes``,
        ``first_tokens`` (F)."""
        return dict(zip(TITLE_COUNTS, (len(self.key_hash), len(self.page_rows), len(self.key_text),
                                       len(self.first_hash))))

    def save(self, directory: Path) -> None:
        """Write the arrays as ``directory/titles/*.npy`` (:data:`TITLE_FILES`)."""
        (directory / "titles").mkdir(parents=True, exist_ok=True)
        for rel, arr in zip(TITLE_FILES, self._arrays()):
            np.save(directory / rel, arr)

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.key_hash, self.key_offsets, self.key_text, self.page_indptr, self.page_rows,
                self.first_hash, self.first_len)

    def problem(self, num_passages: int) -> tuple[str, str] | None:
        """``(file, what is wrong)`` when the arrays are not a title index over
        ``num_passages`` passages, else ``None`` (reads every array once)."""
        k = len(self.key_hash)
        if len(self.key_offsets) != k + 1 or len(self.page_indptr) != k + 1:
            return TITLE_FILES[1], f"key_offsets and page_indptr must have {k + 1:,} entries"
        if k and not bool((self.key_hash[1:] > self.key_hash[:-1]).all()):
            return TITLE_FILES[0], "key hashes not strictly ascending"
        for rel, ptr, end in ((TITLE_FILES[1], self.key_offsets, len(self.key_text)),
                              (TITLE_FILES[3], self.page_indptr, len(self.page_rows))):
            if ptr[0] != 0 or ptr[-1] != end or not bool((np.diff(ptr) > 0).all()):
                return rel, f"not a pointer array (must rise from 0 to {end:,})"
        if len(self.page_rows) and not (0 <= int(self.page_rows.min()) and int(self.page_rows.max()) < num_passages):
            return TITLE_FILES[4], f"passage rows outside [0, {num_passages:,})"
        if len(self.first_hash) != len(self.first_len) or \
                (len(self.first_hash) and not bool((self.first_hash[1:] >= self.first_hash[:-1]).all())):
            return TITLE_FILES[5], "first-token table not sorted or not aligned with first_len"
        return None

    @staticmethod
    def file_lengths(counts: Mapping[str, int]) -> tuple[int, ...]:
        """The length of each of :data:`TITLE_FILES` for the manifest ``counts`` of :meth:`counts`."""
        k = counts["keys"]
        return k, k + 1, counts["text_bytes"], k + 1, counts["pages"], counts["first_tokens"], counts["first_tokens"]


@dataclass(frozen=True, slots=True)
class Mention:
    """A title key found in a text: the key and the text's own words for it."""

    key: str
    surface: str


def _capital(text: str, at: int) -> bool:
    return text[at].isupper() or text[at].isdigit()


def _inside_longer_name(text: str, words: Sequence[re.Match], start: int, end: int) -> bool:
    """Whether words ``start:end`` are only part of a longer capitalised name: the word
    right after them, or the one right before them (not "The"), is capitalised with only
    spaces in between."""
    if end < len(words) and not text[words[end - 1].end() : words[end].start()].strip() and \
            _capital(text, words[end].start()):
        return True
    return start > 0 and not text[words[start - 1].end() : words[start].start()].strip() and \
        _capital(text, words[start - 1].start()) and words[start - 1].group(0) not in LEADING_WORDS


class TitleIndex:
    """Normalised passage titles -> passages (corpus order), and title mentions in a text.

    ``TitleIndex(passages)`` indexes ``passages`` in memory under ``conventions`` (the default
    member when ``None``); ``TitleIndex(passages, arrays, conventions)`` wraps prebuilt
    :class:`TitleArrays` whose rows index ``passages`` (e.g. a saved index's, built under
    ``conventions``). ``conventions`` is kept: the loop reads the corpus under the same rules.
    """

    def __init__(self, passages: Sequence[Passage], arrays: TitleArrays | None = None,
                 conventions: Conventions | None = None):
        self._passages = passages
        self.conventions = conventions or default_conventions()
        if arrays is None:
            arrays = TitleArrays.merge([TitleBatch.from_keys((passage_keys(p, self.conventions) for p in passages), 0)])
        self._a = arrays
        self._rows_by_id: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._a.key_hash)

    def _find(self, keys: Sequence[str]) -> list[int]:
        """The position of each of ``keys`` in the arrays, or -1."""
        a = self._a
        if not keys or not len(a.key_hash):
            return [-1] * len(keys)
        hashes = np.fromiter(map(_hash, keys), dtype=np.uint64, count=len(keys))
        at = np.minimum(np.searchsorted(a.key_hash, hashes), len(a.key_hash) - 1)
        out = [-1] * len(keys)
        for i in np.flatnonzero(a.key_hash[at] == hashes).tolist():
            j = int(at[i])
            if a.key_text[int(a.key_offsets[j]) : int(a.key_offsets[j + 1])].tobytes() == keys[i].encode("utf-8"):
                out[i] = j
        return out

    @property
    def passages(self) -> Sequence[Passage]:
        """The passages the rows index."""
        return self._passages

    def rows(self, key: str) -> list[int]:
        """Rows of the passages titled under normalised ``key``, ascending (empty when none)."""
        j = self._find([key])[0]
        if j < 0:
            return []
        return self._a.page_rows[int(self._a.page_indptr[j]) : int(self._a.page_indptr[j + 1])].tolist()

    def pages(self, key: str) -> tuple[Passage, ...]:
        """Passages with a title under normalised ``key`` (empty when none)."""
        return tuple(self._passages[r] for r in self.rows(key))

    def row_of(self, passage_id: str) -> int:
        """The row of the passage with id ``passage_id``, -1 when none. The first call maps
        every passage's id (reading all of them), so it is for small in-memory corpora."""
        if self._rows_by_id is None:
            self._rows_by_id = {}
            for row, p in enumerate(self._passages):
                self._rows_by_id.setdefault(p.id, row)
        return self._rows_by_id.get(passage_id, -1)

    def _lengths(self, tokens: Sequence[str]) -> list[Sequence[int]]:
        """Per token: the token counts of the keys it starts, longest first."""
        a = self._a
        if not tokens or not len(a.first_hash):
            return [()] * len(tokens)
        hashes = np.fromiter(map(_hash, tokens), dtype=np.uint64, count=len(tokens))
        lo = np.searchsorted(a.first_hash, hashes, "left").tolist()
        hi = np.searchsorted(a.first_hash, hashes, "right").tolist()
        return [a.first_len[s:e].tolist() if e > s else () for s, e in zip(lo, hi)]

    def mentions(self, text: str, *, proper_only: bool = True) -> list[Mention]:
        """Title keys mentioned in ``text``, first occurrence order; matches do not overlap.

        Scanning left to right, the longest key starting at a word is taken and the scan
        resumes after it.

        With ``proper_only`` a match must start with a capital letter or a digit in ``text``
        (running prose); questions are matched without it (they are often lower-cased).
        """
        words = list(WORD.finditer(text))
        tokens = [w if w.isascii() else _fold(w) for w in (m.group(0).lower() for m in words)]
        starts: list[Sequence[int]] = [()] * len(tokens)
        at = [i for i, w in enumerate(words) if not proper_only or _capital(text, w.start())]
        for i, ls in zip(at, self._lengths([tokens[i] for i in at])):
            starts[i] = ls
        grams = list(dict.fromkeys(" ".join(tokens[i : i + n]) for i, ls in enumerate(starts) for n in ls
                                   if i + n <= len(tokens)))
        present = {g for g, j in zip(grams, self._find(grams)) if j >= 0}
        found: dict[str, Mention] = {}
        i = 0
        while i < len(tokens):
            n = next((n for n in starts[i] if i + n <= len(tokens) and " ".join(tokens[i : i + n]) in present), 0)
            if n and proper_only and _inside_longer_name(text, words, i, i + n):
                n = 0
            if n:
                key = " ".join(tokens[i : i + n])
                found.setdefault(key, Mention(key, text[words[i].start() : words[i + n - 1].end()]))
            i += max(n, 1)
        return list(found.values())
