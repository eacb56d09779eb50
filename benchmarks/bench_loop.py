"""Milliseconds per question of the multi-hop loop: the evidence policy beside the seed's coverage rule.

Usage: python benchmarks/bench_loop.py [--questions 300] [--rounds 3] [--max-passages 10]
[--layout paragraphs|opaque|chunks]

Pool: every paragraph of the bundled HotpotQA dev file (BM25, bm25s backend), laid out as
``--layout`` (:mod:`evals.layouts`; ``chunks``: untitled 40-word windows, the budget then
counts windows by reading), the index and the title index built once before timing. Both loops (compaction off, no synthesizer, so
no LLM) answer the same questions in interleaved rounds; the median over rounds of each
loop's mean per question is reported, in wall-clock and in this thread's CPU time (robust
when other processes share the cores). Target: the evidence loop under 10 ms per question.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Sequence

from evals.datasets import build_open_pool, load_rows
from evals.layouts import LAYOUTS, lay_out
from evals.loops import product_loop
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

TARGET_MS = 10.0


def per_question_ms(rag: MultiHopRAG, questions: Sequence[str], clock) -> float:
    t0 = clock()
    for q in questions:
        rag.multi_hop_search(q)
    return (clock() - t0) / 1e6 / len(questions)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=300, help="first N questions of the dev file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-passages", type=int, default=10)
    ap.add_argument("--layout", choices=LAYOUTS, default="paragraphs")
    args = ap.parse_args()
    rows = load_rows("hotpotqa", None)
    pool = build_open_pool(rows)
    passages = lay_out(rows, pool, args.layout).passages
    t0 = time.perf_counter()
    retriever = BM25Retriever(passages)
    t_bm25 = time.perf_counter() - t0
    t0 = time.perf_counter()
    loops = {
        "evidence (default)": product_loop(retriever, max_passages=args.max_passages),
        "coverage (seed, baseline)": product_loop(retriever, stop_rule="coverage", max_hops=5, max_passages=15),
    }
    t_index = time.perf_counter() - t0
    questions = list(pool.questions[: args.questions])
    for rag in loops.values():  # warm-up
        for q in questions[:20]:
            rag.multi_hop_search(q)
    print(f"python {platform.python_version()} on {platform.machine()}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"pool: {len(passages)} passages ({args.layout}) of the HotpotQA dev paragraphs; BM25 index {t_bm25:.2f} s, title index "
          f"(both loops) {t_index:.2f} s; {len(questions)} questions x {args.rounds} rounds")
    for label, clock in (("wall", time.perf_counter_ns), ("thread CPU", time.thread_time_ns)):
        samples: dict[str, list[float]] = {name: [] for name in loops}
        for _ in range(args.rounds):
            for name, rag in loops.items():
                samples[name].append(per_question_ms(rag, questions, clock))
        ms = {name: statistics.median(v) for name, v in samples.items()}
        new, base = ms["evidence (default)"], ms["coverage (seed, baseline)"]
        print(f"[{label}] evidence loop {new:6.2f} ms/question | coverage loop (baseline) {base:6.2f} ms/question "
              f"= {new / base:4.1f}x | target < {TARGET_MS:.0f} ms: {'MET' if new < TARGET_MS else 'NOT MET'}")


if __name__ == "__main__":
    main()
