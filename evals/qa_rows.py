"""The bundled multi-hop dev sets (HotpotQA, 2WikiMultihopQA, MuSiQue) loaded into :class:`QARow`.

A row is a question, its gold answer, its own paragraphs (as product
:class:`~rootweaver_innovations.documents.corpus.Passage` objects) and its gold titles and
sentences; the gold fields score the evals and never reach the product. The layout is
detected per row (:func:`detect_layout`). A file the loader cannot read raises
:class:`~rootweaver_innovations.documents.corpus.CorpusError` naming the file, the line and
the field, as a corpus does.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rootweaver_innovations.documents.corpus import (
    CorpusError,
    Passage,
    _kind,
    _sentences,
    _string,
    read_jsonl,
    split_sentences,
)

__all__ = ["QARow", "detect_layout", "load_qa_rows"]


@dataclass(frozen=True, slots=True)
class QARow:
    """A multi-hop question with its own paragraphs and its gold labels."""

    id: str
    question: str
    answer: str
    passages: tuple[Passage, ...]
    gold_titles: tuple[str, ...]
    gold_sentences: tuple[tuple[str, int], ...]  # (title, sentence index); may be empty
    qtype: str = ""


def _field(obj: dict[str, Any], key: str) -> Any:
    """Some merged files store lists as Python literals in strings; decode those."""
    value = obj.get(key)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            pass
        except RecursionError:
            raise CorpusError(f"field {key!r} is nested too deeply") from None
        try:
            return ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise CorpusError(f"field {key!r} is neither JSON nor a Python literal") from None
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


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise CorpusError(f"field {name!r} must be an array, got {_kind(value)}")
    return value


def _row_from(obj: dict[str, Any], qid_prefix: str) -> QARow:
    """One :class:`QARow`; a :class:`CorpusError` naming the offending field otherwise.

    ``supporting_facts: null`` (paragraph-level gold) loads with ``supporting_titles`` as
    the gold titles; every other required field must be present and non-null.
    """
    layout = detect_layout(obj)
    id_key = "_id" if "_id" in obj else "id"
    raw_id = obj.get(id_key)
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    qid = _string(raw_id, id_key)
    question = _string(obj.get("question"), "question")
    answer = _string(obj.get("answer"), "answer")
    if layout == "musique":
        passages, gold_list = [], []
        for k, p in enumerate(_list(_field(obj, "paragraphs"), "paragraphs")):
            where = f"paragraphs[{k}]"
            if not isinstance(p, dict):
                raise CorpusError(f"field {where!r} must be an object, got {_kind(p)}")
            idx = p.get("idx")
            if isinstance(idx, bool) or not isinstance(idx, (int, str)) or idx == "":
                raise CorpusError(f"field '{where}.idx' must be an integer or a string, got {_kind(idx)}")
            title = _string(p.get("title"), f"{where}.title")
            passages.append(Passage(f"{qid_prefix}{qid}:{idx}", title,
                                    split_sentences(_string(p.get("paragraph_text"), f"{where}.paragraph_text"))))
            if p.get("is_supporting") is True:
                gold_list.append(title)
        return QARow(qid, question, answer, tuple(passages), tuple(dict.fromkeys(gold_list)), (), "musique")
    passages = []
    for k, pair in enumerate(_list(_field(obj, "context"), "context")):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise CorpusError(f"field 'context[{k}]' must be a [title, sentences] pair")
        title = _string(pair[0], f"context[{k}].title")
        passages.append(Passage(f"{qid_prefix}{qid}:{k}", title, _sentences(pair[1], f"context[{k}].sentences")))
    facts = []
    raw_facts = _field(obj, "supporting_facts")
    for k, fact in enumerate(_list(raw_facts, "supporting_facts") if raw_facts is not None else ()):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[1], int)
                and not isinstance(fact[1], bool)):
            raise CorpusError(f"field 'supporting_facts[{k}]' must be a [title, sentence index] pair")
        facts.append((_string(fact[0], f"supporting_facts[{k}].title"), fact[1]))
    raw_titles = _field(obj, "supporting_titles")
    if raw_titles is None:
        gold = tuple(dict.fromkeys(t for t, _ in facts))
    else:
        gold = tuple(_string(t, f"supporting_titles[{k}]")
                     for k, t in enumerate(_list(raw_titles, "supporting_titles")))
    qtype = obj.get("type")
    if qtype is not None and not isinstance(qtype, str):
        raise CorpusError(f"field 'type' must be a string, got {_kind(qtype)}")
    return QARow(qid, question, answer, tuple(passages), gold, tuple(facts), qtype or "")


def load_qa_rows(path: str | Path, limit: int | None = None) -> list[QARow]:
    """Load rows of any of the three layouts (detected per row), at most ``limit``.

    Raises :class:`CorpusError` naming the file, the line and the field for anything
    :func:`read_jsonl` rejects and for a null, missing or ill-typed field (a paragraph
    whose sentences are all blank included).
    """
    path = Path(path)
    rows: list[QARow] = []
    for lineno, obj in read_jsonl(path):
        try:
            rows.append(_row_from(obj, ""))
        except CorpusError as exc:
            raise CorpusError(f"{path}:{lineno}: {exc}") from None
        if limit is not None and len(rows) >= limit:
            break
    return rows
