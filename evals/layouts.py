"""The shapes the in-memory evals lay an open pool out in, and what "found the gold" means in each.

- ``paragraphs``: the pool's paragraphs with their titles (Wikipedia-shaped);
- ``opaque``: the same paragraphs, every title replaced by ``doc-<id>``;
- ``chunks``: each paragraph cut into windows of 40 words (stride 30), one record per window
  titled by its paragraph's file name ``doc-<sha1[:10]>.txt``, its text split into sentences as
  the product splits a JSONL record's ``text``, as a user who cut files into windows has them).

Gold in the paragraph layouts: every gold paragraph read. In ``chunks``: every labelled
supporting sentence overlaps a read window of its paragraph (shares a run of min(8, its length)
words with it); a row without sentence labels (MuSiQue): every gold paragraph has a read window.
Gold labels are only ever used here, to score what was read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals.qa_rows import QARow
from rootweaver_innovations.documents.corpus import Passage, passage_from_object

from .datasets import OpenPool

__all__ = ["LAYOUTS", "WINDOW_STRIDE", "WINDOW_WORDS", "LaidOutPool", "grams", "lay_out", "opaque",
           "supporting_sentences", "window_records"]

LAYOUTS = ("paragraphs", "opaque", "chunks")
WINDOW_WORDS, WINDOW_STRIDE = 40, 30


def opaque(passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The same passages with every title replaced by an opaque id (``doc-<id>``)."""
    return tuple(Passage(p.id, f"doc-{p.id}", p.sentences) for p in passages)


def window_records(passages: Sequence[Passage]) -> Iterator[tuple[str, dict[str, str]]]:
    """``(paragraph id, {id, title, text})`` for each 40-word window (stride 30) of each passage,
    titled by the paragraph's file name ``doc-<sha1 of its id, 10 hex>.txt``, ids ``<title>#<k>``."""
    for p in passages:
        name = f"doc-{hashlib.sha1(p.id.encode()).hexdigest()[:10]}.txt"
        words = p.text.split()
        for k, start in enumerate(range(0, max(len(words) - WINDOW_WORDS, 0) + WINDOW_STRIDE, WINDOW_STRIDE)):
            yield p.id, {"id": f"{name}#{k}", "title": name, "text": " ".join(words[start:start + WINDOW_WORDS])}


def grams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """The lowercased word ``n``-grams of ``text`` (the whole text when it is shorter)."""
    words = text.lower().split()
    return {tuple(words[i:i + n]) for i in range(max(1, len(words) - n + 1))}


def supporting_sentences(row: QARow, pool_ids: dict[tuple[str, str], str],
                         by_id: dict[str, Passage]) -> list[tuple[str, str]]:
    """``(pool id, sentence)`` of each labelled supporting sentence of ``row`` found in the pool."""
    own: dict[str, str] = {}
    for p in row.passages:
        own.setdefault(p.title, pool_ids[(p.title, p.text)])
    return [(own[t], by_id[own[t]].sentences[i]) for t, i in row.gold_sentences
            if t in own and 0 <= i < len(by_id[own[t]].sentences)]


@dataclass(frozen=True)
class LaidOutPool:
    """An open pool in one layout: the passages to search, the pool paragraph each comes from,
    and, per row, the gold paragraphs and supporting sentences that score it."""

    layout: str
    passages: tuple[Passage, ...]
    paragraph: dict[str, str]
    gold: tuple[frozenset[str], ...]
    support: tuple[tuple[tuple[str, str], ...], ...]
    text: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", {p.id: p.text for p in self.passages})

    def paragraphs(self, ids: Sequence[str]) -> set[str]:
        """The pool paragraphs the passages ``ids`` come from."""
        return {self.paragraph[i] for i in ids}

    def found(self, row: int, ids: Sequence[str]) -> float:
        """1.0 when the passages ``ids`` hold row ``row``'s gold (module docstring), else 0.0."""
        gold = self.gold[row]
        if self.layout != "chunks" or not self.support[row]:
            return float(gold <= self.paragraphs(ids))
        texts = [(self.paragraph[i], self.text[i]) for i in ids]
        for g, sentence in self.support[row]:
            n = min(8, len(sentence.split()))
            if not any(p == g and grams(sentence, n) & grams(text, n) for p, text in texts):
                return 0.0
        return 1.0


def lay_out(rows: Sequence[QARow], pool: OpenPool, layout: str) -> LaidOutPool:
    """``pool`` (built from ``rows``) in ``layout``; ``ValueError`` for a layout not in :data:`LAYOUTS`."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    by_id = {p.id: p for p in pool.passages}
    pool_ids = {(p.title, p.text): p.id for p in pool.passages}
    support = tuple(tuple(supporting_sentences(r, pool_ids, by_id)) for r in rows)
    if layout == "chunks":
        passages, paragraph = [], {}
        for lineno, (pid, record) in enumerate(window_records(pool.passages), 1):
            passages.append(passage_from_object(record, Path("chunks.jsonl"), lineno))
            paragraph[record["id"]] = pid
        return LaidOutPool(layout, tuple(passages), paragraph, tuple(pool.gold), support)
    passages = opaque(pool.passages) if layout == "opaque" else tuple(pool.passages)
    return LaidOutPool(layout, passages, {p.id: p.id for p in passages}, tuple(pool.gold), support)
