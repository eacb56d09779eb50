"""The bundled demo corpus and golden questions (HotpotQA-derived, CC BY-SA 4.0).

See ``data/demo/NOTICE.md`` for provenance. File I/O only; no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .corpus import CorpusError, Passage, read_jsonl, load_corpus_jsonl

__all__ = ["DEMO_CORPUS", "GOLDEN_QUESTIONS", "GoldenQuestion", "demo_passages", "load_questions"]

_DIR = Path(__file__).resolve().parent / "data" / "demo"
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


def load_questions(path: str | Path = GOLDEN_QUESTIONS) -> list[GoldenQuestion]:
    """Questions JSONL: ``{"id", "question"}`` required; ``answer``, ``type``,
    ``supporting_titles`` optional. Raises :class:`CorpusError` naming file and line."""
    path = Path(path)
    out = []
    for lineno, obj in read_jsonl(path):
        if not isinstance(obj.get("question"), str) or not obj["question"].strip():
            raise CorpusError(f"{path}:{lineno}: field 'question' must be a non-empty string")
        out.append(GoldenQuestion(
            id=str(obj.get("id", lineno)), question=obj["question"], answer=str(obj.get("answer", "")),
            type=str(obj.get("type", "")), supporting_titles=tuple(obj.get("supporting_titles", ())),
        ))
    if not out:
        raise CorpusError(f"{path}: no questions")
    return out
