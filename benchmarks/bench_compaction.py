"""Median time to compact an ~8 KB, 5-hop context, beside a baseline from the same run.

Usage: python benchmarks/bench_compaction.py [--repeats 2000] [--budget 2000]

The context is built from the bundled demo corpus: 5 hop blocks ("From query: ..." header
plus the fact lines of 2 passages each), grown or cut to ~8 KB. Baseline: the cost of
``"\\n".join(text.split("\\n"))`` over the same text (the least any line-based pass pays).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from rootweaver_innovations.compaction import compact_lines, reasoning_key_terms
from rootweaver_innovations.context_format import format_fact, format_header
from rootweaver_innovations.demo import demo_passages, load_questions


def build_context(target_chars: int = 8192, hops: int = 5) -> tuple[str, str, list[str]]:
    passages = demo_passages()
    question = load_questions()[0].question
    blocks, i = [], 0
    per_block = target_chars // hops
    for h in range(hops):
        lines = [format_header(f"sub-query {h} {question}")]
        while sum(len(x) + 1 for x in lines) < per_block:
            p = passages[i % len(passages)]
            i += 1
            lines.extend(format_fact(p.title, s) for s in p.sentences)
        while sum(len(x) + 1 for x in lines) > per_block - 2:
            lines.pop()
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    return text, question, reasoning_key_terms(f"{question} extra open terms")[:4]


def median_us(fn, repeats: int, clock=time.perf_counter_ns) -> float:
    samples = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return statistics.median(samples) / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=2000)
    args = ap.parse_args()
    text, question, open_terms = build_context()
    n_lines = text.count("\n") + 1
    for _ in range(200):  # warm-up
        compact_lines(text, max_chars=args.budget, question=question, open_terms=open_terms)
    def baseline() -> str:
        return "\n".join(text.split("\n"))

    def compact() -> object:
        return compact_lines(text, max_chars=args.budget, question=question, open_terms=open_terms)

    print(f"python {platform.python_version()} on {platform.machine()}, {args.repeats} repeats, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"context: {len(text)} chars, {n_lines} lines, 5 hops; budget {args.budget} chars")
    # wall clock, and this thread's CPU time (robust when other processes share the cores)
    for label, clock in (("wall", time.perf_counter_ns), ("thread CPU", time.thread_time_ns)):
        base = median_us(baseline, args.repeats, clock)
        comp = median_us(compact, args.repeats, clock)
        print(f"[{label}] baseline split+join {base:8.2f} us | compact_lines {comp:8.2f} us "
              f"= {comp / base:5.1f}x baseline | target < 100 us: {'MET' if comp < 100 else 'NOT MET'}")


if __name__ == "__main__":
    main()
