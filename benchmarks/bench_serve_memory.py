"""RSS of a long-running `rootweaver serve` over many distinct questions: it must level off.

Usage: python benchmarks/bench_serve_memory.py [--questions 600] [--every 100] [--strategy evidence]

Starts `rootweaver serve` (extractive reader, the bundled demo corpus, compaction on with
``--strategy``) as a child process, feeds it the first ``--questions`` distinct questions
of the bundled HotpotQA, 2WikiMultihopQA and MuSiQue rows one at a time, and prints the
child's RSS (``VmRSS``) after the first answer and after every ``--every`` answers, and
its growth from the first sample: bounded memos show a plateau, an unbounded one a line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def _questions(n: int) -> list[str]:
    from evals.qa_rows import load_qa_rows

    seen: dict[str, None] = {}
    for name in ("hotpotqa", "2wiki", "musique"):
        for row in load_qa_rows(REPO / "evals" / "data" / f"{name}.jsonl.gz"):
            seen.setdefault(" ".join(row.question.split()))
            if len(seen) == n:
                return list(seen)
    return list(seen)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=600)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--strategy", default="evidence")
    args = ap.parse_args()
    questions = _questions(args.questions)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "serve.yaml"
        config.write_text(f"llm:\n  provider: none\ncompaction:\n  strategy: {args.strategy}\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([sys.executable, "-m", "rootweaver_capabilities.cli.main", "serve", "--config", str(config)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        print(f"{len(questions)} distinct questions, strategy {args.strategy}, extractive reader")
        print("| answers | RSS MB | growth MB | seconds |")
        print("|---|---|---|---|")
        start, first = time.perf_counter(), None
        for i, q in enumerate(questions, 1):
            proc.stdin.write(q + "\n")
            proc.stdin.flush()
            proc.stdout.readline()
            if i == 1 or i % args.every == 0 or i == len(questions):
                rss = _rss_mb(proc.pid)
                first = rss if first is None else first
                print(f"| {i} | {rss:.1f} | {rss - first:+.1f} | {time.perf_counter() - start:.0f} |", flush=True)
        proc.stdin.close()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
