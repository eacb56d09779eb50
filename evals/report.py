"""Report plumbing shared by the evals: progress on stderr, provenance, JSON/Markdown files."""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

__all__ = ["progress", "provenance", "write_json", "write_text"]

T = TypeVar("T")


def progress(items: Sequence[T], label: str, enabled: bool = True) -> Iterator[T]:
    """Yield ``items`` while drawing a one-line progress bar on stderr (if enabled and a TTY
    or ``enabled`` is forced by the caller); the bar never touches stdout."""
    n = len(items)
    t0 = time.perf_counter()
    step = max(1, n // 50)
    for i, item in enumerate(items):
        if enabled and (i % step == 0):
            done = int(30 * i / max(n, 1))
            rate = i / max(time.perf_counter() - t0, 1e-9)
            sys.stderr.write(f"\r{label:<22} [{'#' * done}{'.' * (30 - done)}] {i}/{n} {rate:6.1f}/s")
            sys.stderr.flush()
        yield item
    if enabled:
        sys.stderr.write(f"\r{label:<22} [{'#' * 30}] {n}/{n} {time.perf_counter() - t0:6.1f}s\n")


def provenance(command: Sequence[str], data: Iterable[str | Path] = (), seeds: dict | None = None) -> dict:
    """Who/what/when of a report: the command line, data files, seeds, date, machine."""
    return {
        "command": " ".join(command),
        "data": [str(d) for d in data],
        "seeds": seeds or {},
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}",
    }


def write_json(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
