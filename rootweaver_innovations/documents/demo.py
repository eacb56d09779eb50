"""The bundled demo corpus and golden questions (HotpotQA-derived, CC BY-SA 4.0).

See ``data/demo/NOTICE.md`` for provenance. File I/O only; no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rootweaver_innovations.documents.corpus import CorpusError, Passage, _kind, _string, load_corpus_jsonl, read_jsonl

__all__ = ["DEMO_CORPUS", "GOLDEN_QUESTIONS", "GoldenQuestion", "demo_passages", "load_questions"]

_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"
DEMO_CORPUS = _DIR / "corpus.jsonl"
GOLDEN_QUESTIONS = _DIR / "golden_questions.jsonl"


@dataclass(frozen=True, slots=True)
class GoldenQuestion:
    """A question with its gold answer and gold titles (evaluation only)."""

    id: str
    question: str
    answer: str = ""
    type: str = ""
    supporting_titles: tuple[str, ...] = ()


def demo_passages() -> list[Passage]:
    """The 598 bundled passages."""
    return load_corpus_jsonl(DEMO_CORPUS)


def _question_from(obj: dict, lineno: int) -> GoldenQuestion:
    fields = {}
    for key in ("id", "answer", "type"):
        value = obj.get(key, str(lineno) if key == "id" else "")
        if isinstance(value, int) and not isinstance(value, bool) and key == "id":
            value = str(value)
        if not isinstance(value, str):
            raise CorpusError(f"field {key!r} must be a string, got {_kind(value)}")
        fields[key] = value
    titles = obj.get("supporting_titles", [])
    if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
        raise CorpusError(f"field 'supporting_titles' must be a list of strings, got {_kind(titles)}")
    return GoldenQuestion(question=_string(obj.get("question"), "question"), supporting_titles=tuple(titles), **fields)


def load_questions(path: str | Path = GOLDEN_QUESTIONS) -> list[GoldenQuestion]:
    """Questions JSONL: ``{"id", "question"}`` required; ``answer``, ``type``,
    ``supporting_titles`` optional (absent, not null). Raises :class:`CorpusError` naming
    file, line and field."""
    path = Path(path)
    out = []
    for lineno, obj in read_jsonl(path):
        try:
            out.append(_question_from(obj, lineno))
        except CorpusError as exc:
            raise CorpusError(f"{path}:{lineno}: {exc}") from None
    if not out:
        raise CorpusError(f"{path}: no questions")
    return out
