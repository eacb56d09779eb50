"""Passages and the loaders that turn files into them.

A user's corpus is JSONL, one ``{"id", "title", "text"}`` object per line. The three
bundled multi-hop layouts (HotpotQA, 2WikiMultihopQA, MuSiQue) load into :class:`QARow`,
whose gold fields are for evaluation only and never reach a selector.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CorpusError",
    "Passage",
    "QARow",
    "detect_layout",
    "load_corpus_jsonl",
    "load_qa_rows",
    "passage_from_object",
    "read_jsonl",
    "split_sentences",
]


class CorpusError(ValueError):
    """A corpus or dataset file is missing or malformed; the message names file and line."""


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrievable unit. ``sentences`` is the text split into facts (at least one)."""

    id: str
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(s.strip() for s in self.sentences)


@dataclass(frozen=True, slots=True)
class QARow:
    """A multi-hop question with its own paragraphs and its gold labels (eval only)."""

    id: str
    question: str
    answer: str
    passages: tuple[Passage, ...]
    gold_titles: tuple[str, ...]
    gold_sentences: tuple[tuple[str, int], ...]  # (title, sentence index); may be empty
    qtype: str = ""


_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> tuple[str, ...]:
    """Split ``text`` at sentence ends followed by a capital, digit or quote.

    Deterministic and model-free; returns ``(text,)`` for text with no such break.
    """
    parts = tuple(p.strip() for p in _SENT_SPLIT.split(text.strip()) if p.strip())
    return parts or (text.strip(),)


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` per non-blank line of a JSONL file (``.gz`` read transparently)."""
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise CorpusError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


def passage_from_object(obj: dict[str, Any], path: Path, lineno: int) -> Passage:
    """The :class:`Passage` of one corpus line (``{"id", "title", "text"}``, or ``sentences``,
    a list, instead of ``text``); :class:`CorpusError` naming ``path:lineno`` for a missing
    or non-string field."""
    for key in ("id", "title"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise CorpusError(f"{path}:{lineno}: field {key!r} must be a non-empty string")
    if isinstance(obj.get("sentences"), list) and obj["sentences"]:
        sents = tuple(str(s).strip() for s in obj["sentences"] if str(s).strip())
    elif isinstance(obj.get("text"), str) and obj["text"].strip():
        sents = split_sentences(obj["text"])
    else:
        raise CorpusError(f"{path}:{lineno}: field 'text' must be a non-empty string")
    return Passage(obj["id"], obj["title"], sents)


def load_corpus_jsonl(path: str | Path) -> list[Passage]:
    """Load ``{"id", "title", "text"}`` lines (``sentences``, a list, may replace ``text``).

    Raises :class:`CorpusError` naming the file and line for a missing file, bad JSON,
    a missing or non-string field, a duplicate id, or an empty corpus.
    """
    path = Path(path)
    passages: list[Passage] = []
    seen: set[str] = set()
    for lineno, obj in read_jsonl(path):
        passage = passage_from_object(obj, path, lineno)
        if passage.id in seen:
            raise CorpusError(f"{path}:{lineno}: duplicate id {passage.id!r}")
        seen.add(passage.id)
        passages.append(passage)
    if not passages:
        raise CorpusError(f"{path}: no passages")
    return passages


def _field(obj: dict[str, Any], key: str) -> Any:
    """Some merged files store lists as Python literals in strings; decode those."""
    value = obj.get(key)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return ast.literal_eval(value)
    return value


def detect_layout(obj: dict[str, Any]) -> str:
    """Return ``"hotpotqa"``, ``"2wiki"`` or ``"musique"`` for one row, else raise."""
    if "paragraphs" in obj:
        return "musique"
    if "context" in obj and "evidences" in obj:
        return "2wiki"
    if "context" in obj:
        return "hotpotqa"
    raise CorpusError("row has neither 'context' nor 'paragraphs'")


def _row_from(obj: dict[str, Any], qid_prefix: str) -> QARow:
    layout = detect_layout(obj)
    qid = str(obj.get("_id") or obj.get("id"))
    if layout == "musique":
        paras = _field(obj, "paragraphs")
        passages = tuple(
            Passage(f"{qid_prefix}{qid}:{p['idx']}", p["title"], split_sentences(p["paragraph_text"]))
            for p in paras
        )
        gold = tuple(dict.fromkeys(p["title"] for p in paras if p.get("is_supporting")))
        return QARow(qid, obj["question"], str(obj["answer"]), passages, gold, (), "musique")
    context = _field(obj, "context")
    passages = tuple(
        Passage(f"{qid_prefix}{qid}:{k}", title, tuple(s.strip() for s in sents if s.strip()) or (title,))
        for k, (title, sents) in enumerate(context)
    )
    facts = tuple((t, int(i)) for t, i in _field(obj, "supporting_facts") or ())  # null: paragraph-level gold
    gold = tuple(_field(obj, "supporting_titles") or dict.fromkeys(t for t, _ in facts))
    return QARow(qid, obj["question"], str(obj["answer"]), passages, gold, facts, str(obj.get("type", "")))


def load_qa_rows(path: str | Path, limit: int | None = None) -> list[QARow]:
    """Load rows of any of the three layouts (detected per row), at most ``limit``."""
    path = Path(path)
    rows: list[QARow] = []
    for lineno, obj in read_jsonl(path):
        try:
            rows.append(_row_from(obj, ""))
        except (KeyError, TypeError, ValueError, SyntaxError) as exc:
            raise CorpusError(f"{path}:{lineno}: unreadable row ({exc})") from None
        if limit is not None and len(rows) >= limit:
            break
    return rows
