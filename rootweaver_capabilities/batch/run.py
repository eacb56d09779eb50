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
from pathlib import Path
from typing import Any

from rootweaver_capabilities.batch.base import CHUNK
from rootweaver_capabilities.batch.work import (
    BatchError,
    BatchInputError,
    BatchSummary,
    Question,
    _answer_chunk,
    _capability,
    answer_question,
    done_ids,
    read_questions,
)
from rootweaver_capabilities.capability import MultiHopCapability
from rootweaver_capabilities.config import MultiHopConfig

__all__ = [
    "BatchError",
    "BatchInputError",
    "BatchSummary",
    "answer_question",
    "done_ids",
    "read_questions",
    "run_batch",
]

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
                from rootweaver_capabilities.batch.ray_pool import run_on_ray

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

