"""Median time of the line compactor on an ~8 KB, 5-hop trajectory, beside a baseline from the same run.

Usage: python benchmarks/bench_compaction.py [--repeats 2000] [--budget 2000]

The trajectory is built from the bundled demo corpus: 5 hops (a sub-query and the facts of 2
passages each), grown or cut to ~8 KB of rendered full context. Baseline: rendering that full
context to text from its facts (the least any pass over the context pays).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.line import CompactionRequest, LineCompactor
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.documents.demo import demo_passages, load_questions
from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import reasoning_key_terms


def build_request(budget: int, target_chars: int = 8192, hops: int = 5) -> CompactionRequest:
    passages = demo_passages()
    question = load_questions()[0].question
    queries = tuple(f"sub-query {h} {question}" for h in range(hops))
    facts: list[Fact] = []
    i, per_block = 0, target_chars // hops
    for h in range(hops):
        block: list[Fact] = []
        while sum(len(f.line) + 1 for f in block) < per_block:
            p = passages[i % len(passages)]
            i += 1
            block += [Fact(p.id, p.title, s, j, h, queries[h]) for j, s in enumerate(p.sentences)]
        while sum(len(f.line) + 1 for f in block) > per_block - 2:
            block.pop()
        facts += block
    open_terms = tuple(reasoning_key_terms(f"{question} extra open terms")[:4])
    return CompactionRequest(question, SynthContext(tuple(facts), queries), open_terms, Budget(budget, "chars"))


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
    request = build_request(args.budget)
    compactor = LineCompactor()
    text = request.context.text
    n_lines = request.context.rendering.line_count
    for _ in range(200):  # warm-up
        compactor(request)

    def baseline() -> str:
        return SynthContext(request.facts, request.hop_queries).text  # a new record: rendered afresh

    def compact() -> object:
        return compactor(request)

    print(f"python {platform.python_version()} on {platform.machine()}, {args.repeats} repeats, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"context: {len(text)} chars, {n_lines} lines, 5 hops; budget {args.budget} chars")
    # wall clock, and this thread's CPU time (robust when other processes share the cores)
    for label, clock in (("wall", time.perf_counter_ns), ("thread CPU", time.thread_time_ns)):
        base = median_us(baseline, args.repeats, clock)
        comp = median_us(compact, args.repeats, clock)
        print(f"[{label}] baseline render {base:8.2f} us | line compactor {comp:8.2f} us "
              f"= {comp / base:5.1f}x baseline | target < 100 us: {'MET' if comp < 100 else 'NOT MET'}")


if __name__ == "__main__":
    main()
