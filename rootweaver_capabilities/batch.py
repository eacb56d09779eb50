"""``rootweaver batch``: answer a JSONL file of questions with local processes or a Ray cluster.

Contract:

- Input ``QUESTIONS.jsonl``: one JSON object per non-blank line with a non-empty string
  ``id`` and a non-empty string ``question``; ids are unique. Anything else is bad input:
  :class:`BatchInputError` naming ``file:line`` (the CLI prints it as one line, exit 2)
  before any question is answered.
- Output ``ANSWERS.jsonl``: one line per answered question, ``{"id": ..., **record}`` where
  ``record`` is what ``rootweaver ask --json`` prints (:func:`answer_question`). Lines are
  written **only by the driver**, one ``write`` + ``flush`` each, in completion order (not
  input order: compare files by id). A question whose id is already in the output is
  never answered again (resume), and the driver never writes an id twice, whatever the
  workers deliver (a retried chunk whose first delivery also arrived is dropped).
  A torn last line (a crash in the middle of a write) is cut off before appending.
- Questions that raise are not written; they are reported on stderr and counted, the
  batch goes on, and :func:`run_batch` reports them (the CLI exits 1): a rerun retries
  exactly those.
- Workers: ``workers == 1`` answers in this process; ``workers > 1`` uses that many local
  processes (``spawn``), each building the capability once; ``ray`` given uses a Ray actor
  pool on the cluster at that address (``"auto"``: the running cluster), one actor per
  CPU by default, each building the capability (index opened from the configured path,
  reader loaded) once. An actor that dies (its node lost) is dropped and its in-flight
  chunks are resubmitted to the surviving actors, so the batch completes with every
  answer exactly once as long as one actor survives; when none does, :class:`BatchError`.

Each worker answers with ``MultiHopCapability(config)``, exactly what ``ask --config``
does, so the answers equal a one-process run's (same code, same config, deterministic
retrieval and reader settings).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import MultiHopConfig
from .multi_hop import MultiHopCapability, RequestContext
from .records import result_record

__all__ = [
    "BatchError",
    "BatchInputError",
    "BatchSummary",
    "answer_question",
    "done_ids",
    "read_questions",
    "run_batch",
]

CHUNK = 8  # questions per task sent to a worker: amortises the per-task overhead (Ray: ~1 ms)


class BatchInputError(ValueError):
    """A malformed questions file; the one-line message names ``file:line``."""


class BatchError(RuntimeError):
    """The batch cannot go on (e.g. every Ray actor is gone); answers so far are kept."""


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
    from .multi_hop import build_synthesizer

    config = MultiHopConfig.from_mapping(config_mapping, source=source)
    synthesizer = build_synthesizer(config.llm)
    if hasattr(synthesizer, "load"):
        synthesizer.load()
    return MultiHopCapability(config, synthesizer=synthesizer)


_WORKER: MultiHopCapability | None = None  # one per local worker process, built by _init_worker


def _init_worker(config_mapping: dict[str, Any], source: str) -> None:
    global _WORKER
    _WORKER = _capability(config_mapping, source)


def _work(chunk: Sequence[tuple[str, str]]) -> list[tuple[str, bool, Any]]:
    assert _WORKER is not None, "worker not initialised"
    return _answer_chunk(_WORKER, chunk)


class _Writer:
    """The driver's output: one flushed line per new id, never an id twice; progress on stderr."""

    def __init__(self, path: Path, summary: BatchSummary, done: set[str], show: bool):
        self._fh = path.open("a", encoding="utf-8")
        self._s = summary
        self._done = done
        self._show = show
        self._tty = sys.stderr.isatty()
        self._start = time.perf_counter()
        self._last = 0.0

    def deliver(self, results: Iterable[tuple[str, bool, Any]]) -> None:
        for qid, ok, payload in results:
            if qid in self._done:
                continue
            if ok:
                self._fh.write(json.dumps({"id": qid, **payload}, ensure_ascii=False) + "\n")
                self._fh.flush()
                if self._s.first_answer_s is None:
                    self._s.first_answer_s = time.perf_counter() - self._start
                self._done.add(qid)
                self._s.answered += 1
                self._s.failed.pop(qid, None)
            else:
                self._s.failed[qid] = payload
                print(f"rootweaver batch: {qid}: {payload}", file=sys.stderr, flush=True)
        self.progress()

    def progress(self, final: bool = False) -> None:
        if not self._show:
            return
        now = time.perf_counter() - self._start
        if not final and not self._tty and now - self._last < 10:
            return
        self._last = now
        s = self._s
        todo = s.total - s.skipped
        width = 30
        fill = int(width * (s.answered + len(s.failed)) / todo) if todo else width
        rate = s.answered / now if now > 0 else 0.0
        line = (f"[{'#' * fill}{'.' * (width - fill)}] {s.answered + len(s.failed)}/{todo} "
                f"({s.skipped} skipped, {len(s.failed)} failed) {rate:.1f} q/s")
        print(f"\r{line}" if self._tty else line, end="\n" if final or not self._tty else "", file=sys.stderr,
              flush=True)

    def close(self) -> None:
        self._fh.close()


def _chunks(items: Sequence[Question], size: int) -> Iterator[list[tuple[str, str]]]:
    for i in range(0, len(items), size):
        yield [(q.id, q.question) for q in items[i:i + size]]


def run_batch(
    questions: str | Path,
    out: str | Path,
    config: MultiHopConfig,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    chunk: int = CHUNK,
    show_progress: bool = True,
) -> BatchSummary:
    """Answer ``questions`` into ``out`` (see the module docstring); the summary of this run."""
    todo_all = read_questions(questions)
    out = Path(out)
    done = done_ids(out)
    summary = BatchSummary(total=len(todo_all))
    todo = [q for q in todo_all if q.id not in done]
    summary.skipped = len(todo_all) - len(todo)
    start = time.perf_counter()
    writer = _Writer(out, summary, done, show_progress)
    try:
        if todo:
            mapping, source = config.to_mapping(), config.source
            if ray_address is not None:
                from .batch_ray import run_on_ray

                run_on_ray(ray_address, mapping, source, list(_chunks(todo, chunk)), writer.deliver, summary,
                           workers=None if workers == 1 else workers)
            elif workers == 1:
                capability = _capability(mapping, source)
                for c in _chunks(todo, chunk):
                    writer.deliver(_answer_chunk(capability, c))
            else:
                _run_local(mapping, source, list(_chunks(todo, chunk)), writer.deliver, workers)
        writer.progress(final=True)
    finally:
        writer.close()
        summary.seconds = time.perf_counter() - start
    return summary


def _run_local(mapping: dict[str, Any], source: str, chunks: list[list[tuple[str, str]]],
               deliver: Callable[[Iterable[tuple[str, bool, Any]]], None], workers: int) -> None:
    """``chunks`` over ``workers`` spawned processes, results delivered as they complete."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = mp.get_context("spawn")  # no fork of a driver holding threads / mapped files
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(mapping, source)) as pool:
        queue = deque(chunks)
        pending = set()
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                pending.add(pool.submit(_work, queue.popleft()))
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                deliver(fut.result())


def load_config(path: Path | None) -> MultiHopConfig:
    """``--config FILE`` of ``ask`` and ``batch``: that YAML (as ``serve`` reads it), or every default."""
    return MultiHopConfig() if path is None else MultiHopConfig.from_yaml(path)


def _cmd_batch(args: Any) -> int:
    """Run the batch; exit 0 when every question is answered, 1 when some failed (rerun to retry)."""
    if args.ray is not None and args.ray != "auto" and ":" not in args.ray:
        raise BatchInputError(f"--ray must be 'auto' or HOST:PORT of a Ray cluster, got {args.ray!r}")
    config = load_config(args.config)
    s = run_batch(args.questions, args.out, config, workers=args.workers, ray_address=args.ray, chunk=args.chunk,
                  show_progress=not args.quiet)
    lost = f", {s.lost_workers} worker(s) lost, {s.resubmitted} chunk(s) resubmitted" if s.lost_workers else ""
    nodes = f"; per Ray node: {json.dumps(s.per_node)}" if s.per_node else ""
    first = f" (first answer after {s.first_answer_s:.1f} s)" if s.first_answer_s is not None else ""
    print(f"rootweaver batch: {s.answered} answered, {s.skipped} already in {args.out}, {len(s.failed)} failed "
          f"in {s.seconds:.1f} s{first}{lost}{nodes}", file=sys.stderr)
    return 1 if s.failed else 0


def add_batch_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    """The ``batch`` subcommand on the CLI's subparsers ``sub``."""
    b = sub.add_parser("batch", help="answer a JSONL file of {id, question} into a JSONL file (resumable; "
                       "local processes or a Ray cluster)")
    b.add_argument("questions", type=Path, help="JSONL: one {\"id\": ..., \"question\": ...} per line")
    b.add_argument("--out", type=Path, required=True, help="JSONL of answers, appended; ids already there are skipped")
    b.add_argument("--config", type=Path, help="the capability YAML (as `serve --config`); default: every default")
    b.add_argument("--workers", type=positive_int, default=1,
                   help="local worker processes (default 1: this process); with --ray: actors (default: one per CPU)")
    b.add_argument("--ray", metavar="auto|ADDRESS", help="run on a Ray cluster: auto (the running one) or HOST:PORT")
    b.add_argument("--chunk", type=positive_int, default=CHUNK,
                   help=f"questions per task sent to a worker (default {CHUNK}; larger amortises Ray's per-task cost, "
                        "smaller loses less work with a node)")
    b.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    b.set_defaults(func=_cmd_batch)
