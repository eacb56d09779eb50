"""The pieces of a batch every worker runs, local or on Ray: the records, one chunk's answers,
and the worker's capability (see :mod:`rootweaver_capabilities.batch.run` for the contract)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rootweaver_capabilities.batch.base import BatchError
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.result_json import result_record

__all__ = ["BatchError", "BatchInputError", "BatchSummary", "Question", "answer_question", "done_ids", "read_questions"]


class BatchInputError(ValueError):
    """A malformed questions file; the one-line message names ``file:line``."""


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str


@dataclass(slots=True)
class BatchSummary:
    """What a run did: ``answered`` now, ``skipped`` (already in the output), ``failed`` ids
    with their one-line errors, ``resubmitted`` chunks and ``lost_workers`` (Ray actors that
    died), questions returned per Ray node (``per_node``, delivered, duplicates included),
    wall ``seconds`` (start to last answer, worker start-up included) and ``first_answer_s``
    (start to the first answer written: mostly start-up; ``None`` when none was)."""

    total: int = 0
    answered: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    resubmitted: int = 0
    lost_workers: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    first_answer_s: float | None = None


def read_questions(path: str | Path) -> list[Question]:
    """The questions of ``path`` in file order (see the module docstring for the format)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BatchInputError(f"{path}: cannot read ({exc.strerror})") from None
    out: list[Question] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BatchInputError(f"{where}: not a JSON object ({exc.__class__.__name__})") from None
        if not isinstance(obj, dict):
            raise BatchInputError(f"{where}: expected a JSON object {{id, question}}, got {type(obj).__name__}")
        qid, question = obj.get("id"), obj.get("question")
        if not isinstance(qid, str) or not qid.strip():
            raise BatchInputError(f"{where}: 'id' must be a non-empty string")
        if not isinstance(question, str) or not question.strip():
            raise BatchInputError(f"{where}: 'question' must be a non-empty string")
        if qid in seen:
            raise BatchInputError(f"{where}: duplicate id {qid[:80]!r} (first on line {seen[qid]})")
        seen[qid] = lineno
        out.append(Question(qid, question))
    return out


def done_ids(path: str | Path) -> set[str]:
    """Ids already answered in the output ``path`` (empty when it does not exist).

    A torn last line (no newline: the writer died mid-line) is cut off the file so the
    next append starts on a fresh line; any other unreadable line is an error naming it.
    """
    path = Path(path)
    if not path.exists():
        return set()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(keep)
        data = data[:keep]
    ids: set[str] = set()
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            ids.add(obj["id"])
        except (ValueError, KeyError, TypeError):
            raise BatchInputError(f"{path}:{lineno}: not an answer line of `rootweaver batch`") from None
    return ids


def answer_question(capability: MultiHopCapability, question: str) -> dict[str, Any]:
    """``rootweaver ask --json``'s record of ``question`` answered by ``capability``.

    Raises ``RuntimeError`` when the capability flag is off (nothing was answered).
    """
    result = capability.execute(RequestContext(query=question))
    if result is None:
        raise RuntimeError(f"the capability flag {capability.config.flags.capability_flag} is off: nothing answered")
    return result_record(result, detail=True)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def _answer_chunk(capability: MultiHopCapability, chunk: Sequence[tuple[str, str]]) -> list[tuple[str, bool, Any]]:
    """``(id, ok, record or one-line error)`` for each ``(id, question)`` of ``chunk``."""
    out = []
    for qid, question in chunk:
        try:
            out.append((qid, True, answer_question(capability, question)))
        except Exception as exc:  # noqa: BLE001 - one bad question must not end the batch
            out.append((qid, False, _one_line(exc)))
    return out


def _capability(config_mapping: dict[str, Any], source: str) -> MultiHopCapability:
    """The worker's capability, its reader loaded before the first question."""
    from rootweaver_capabilities.assembly import build_synthesizer

    config = MultiHopConfig.from_mapping(config_mapping, source=source)
    synthesizer = build_synthesizer(config)
    if hasattr(synthesizer, "load"):
        synthesizer.load()
    return MultiHopCapability(config, synthesizer=synthesizer)
