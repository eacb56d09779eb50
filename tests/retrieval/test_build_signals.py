"""Signals during `rootweaver index build`: SIGTERM and SIGINT leave no process,
no temporary directory and no traceback; SIGKILL leaves no orphaned worker, and the next
build beside it removes the temporary directory the killed one left.

Real processes: the CLI in a subprocess with ``--workers 2``, signalled while its workers
are alive and its temporary directory exists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rootweaver_innovations.retrieval.index import build_index

REPO = Path(__file__).resolve().parents[2]
GRACE_S = 5.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A corpus large enough that a 2-worker build in chunks of 200 runs for seconds."""
    path = tmp_path_factory.mktemp("sig") / "big.jsonl"
    words = ["river", "acme", "rocket", "paris", "film", "director", "song", "born", "launch", "city"]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(120_000):
            text = " ".join(f"{words[(i * 7 + k) % 10]}{(i + k) % 997}" for k in range(30))
            fh.write(json.dumps({"id": f"p{i}", "title": f"T{i % 5000}", "text": text}) + "\n")
    return path


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie has exited; only its parent's wait is missing
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


def _start_build(corpus: Path, out: Path) -> tuple[subprocess.Popen, list[int]]:
    """The build running with both workers alive and its temporary directory present."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootweaver_capabilities.cli.main", "index", "build", str(corpus), "--out", str(out),
         "--workers", "2", "--chunk-size", "200"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        workers = _children(proc.pid)
        if len(workers) >= 2 and list(out.parent.glob(f".{out.name}.building-*")):
            time.sleep(0.5)  # chunks in flight
            return proc, _children(proc.pid)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the build did not start its workers within 60 s")


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 128 + signal.SIGINT)])
def test_sigterm_and_sigint_leave_no_process_no_temp_dir_and_one_line(corpus, tmp_path, signum, code):
    out = tmp_path / "idx"
    proc, workers = _start_build(corpus, out)
    assert len(workers) >= 2
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the build still ran {GRACE_S} s after {signum.name}")
    assert proc.returncode == code
    assert _gone_within(workers, 0.5) == []
    assert list(tmp_path.iterdir()) == []
    assert err.count("\n") == 1 and "Traceback" not in err and signum.name in err, err


def test_sigkill_leaves_no_orphaned_worker_and_the_next_build_removes_its_temp_dir(corpus, tmp_path):
    out = tmp_path / "idx"
    proc, workers = _start_build(corpus, out)
    proc.kill()
    proc.wait(timeout=GRACE_S)
    assert _gone_within(workers, GRACE_S) == []
    assert list(tmp_path.glob(".idx.building-*"))  # nothing can clean up after SIGKILL ...
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps({"id": "a", "title": "A", "text": "x"}) + "\n")
    build_index(small, out)  # ... but the next build beside it does
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "small.jsonl"]
