"""Peak memory of every compaction strategy on the ~7.7 KB benchmark context and a 2 MB one.

Usage: python benchmarks/bench_memory.py [--sizes 7715,2000000] [--budget 2000] [--strategies line,submodular,evidence]
       [--per-line paragraph|sentence] [--max-input-lines 5000]

Each (strategy, context) runs in a fresh child process (``--child``) that builds the
context, then compacts it once under ``tracemalloc`` (peak of Python and numpy
allocations during the call) and reads the process's RSS high-water mark
(``ru_maxrss``) before and after. Printed: peak traced MB, RSS growth MB, the child's
total RSS high-water MB, wall seconds, and the traced peak as a ratio of ``line``'s on
the same context in the same run.

The small context is ``benchmarks/bench_compaction.py``'s (5 hop blocks of the bundled
demo corpus, 7,715 chars). The large one is hop blocks (one per question) of fact lines
from the bundled HotpotQA dev subset (``evals/data/hotpotqa.jsonl.gz``), cut at the
requested size: with ``--per-line paragraph`` (default) one "title | paragraph" line per
paragraph (2,000,000 chars: 4,158 lines, within the default input cap of 5,000
lines); with ``--per-line sentence`` one "title | sentence" line per sentence (about
13,300 lines, which needs ``--max-input-lines 20000`` and exercises the packers'
recompute-columns path beyond 4,096 candidates).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = 7715


def build_large_context(target_chars: int, per_line: str = "paragraph") -> tuple[str, str, list[str]]:
    """Hop blocks of HotpotQA fact lines (one per ``paragraph`` or ``sentence``), at most
    ``target_chars`` long (whole lines)."""
    from rootweaver_innovations.text import reasoning_key_terms
    from rootweaver_innovations.context_format import format_fact, format_header
    from rootweaver_innovations.corpus import load_qa_rows

    rows = load_qa_rows(REPO / "evals" / "data" / "hotpotqa.jsonl.gz")
    lines: list[str] = []
    size = -1
    for row in rows * (1 + target_chars // 1_000_000):
        block = [format_header(row.question)]
        if per_line == "sentence":
            block += [format_fact(p.title, s) for p in row.passages for s in p.sentences]
        else:
            block += [format_fact(p.title, p.text) for p in row.passages]
        for line in block + [""]:
            if size + 1 + len(line) > target_chars:
                return "\n".join(lines).rstrip("\n"), rows[0].question, reasoning_key_terms(rows[0].question)[:4]
            lines.append(line)
            size += 1 + len(line)
    raise ValueError(f"the bundled rows hold fewer than {target_chars} chars")


def build(size: int, per_line: str) -> tuple[str, str, list[str]]:
    if size == SMALL:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from bench_compaction import build_context

        return build_context()
    return build_large_context(size, per_line)


def child(strategy: str, size: int, budget: int, per_line: str, max_input_lines: int) -> None:
    from rootweaver_innovations.strategies import make_compactor

    text, question, open_terms = build(size, per_line)
    compactor = make_compactor(strategy, max_input_lines=max_input_lines)
    compactor("warm up | imports and tokenizer", max_chars=budget, question=question)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    res = compactor(text, max_chars=budget, question=question, open_terms=open_terms)
    seconds = time.perf_counter() - t0
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "chars": len(text), "lines": text.count("\n") + 1, "out_chars": len(res.text),
        "traced_mb": peak / 2**20, "rss_growth_mb": (rss_after - rss_before) / 1024,
        "rss_mb": rss_after / 1024, "seconds": seconds,
    }))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=f"{SMALL},2000000", help="context sizes in chars (7715 = the benchmark one)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--strategies", default="line,submodular,evidence")
    ap.add_argument("--per-line", choices=("paragraph", "sentence"), default="paragraph",
                    help="large context: one fact line per paragraph or per sentence")
    ap.add_argument("--max-input-lines", type=int, default=5000, help="the compactors' input cap on lines")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    ap.add_argument("--child", nargs=2, metavar=("STRATEGY", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.budget, args.per_line, args.max_input_lines)
        return
    strategies = args.strategies.split(",")
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpu, budget {args.budget} "
          f"chars, one line per {args.per_line}, max input lines {args.max_input_lines}")
    print("| context | strategy | lines | peak traced MB | RSS growth MB | RSS total MB | seconds | traced / line |")
    print("|---|---|---|---|---|---|---|---|")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for size in map(int, args.sizes.split(",")):
        base = None
        for strategy in strategies:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", strategy, str(size), "--budget", str(args.budget),
                 "--per-line", args.per_line, "--max-input-lines", str(args.max_input_lines)],
                capture_output=True, text=True, env=env, timeout=args.timeout,
            )
            if proc.returncode:
                print(f"| {size} | {strategy} | failed: {proc.stderr.strip().splitlines()[-1]} |||||")
                continue
            r = json.loads(proc.stdout)
            base = r["traced_mb"] if strategy == "line" else base
            ratio = f"{r['traced_mb'] / base:.1f}x" if base else "n/a"
            print(f"| {r['chars']:,} chars | {strategy} | {r['lines']:,} | {r['traced_mb']:.2f} | "
                  f"{r['rss_growth_mb']:.1f} | {r['rss_mb']:.0f} | {r['seconds']:.2f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
