"""Median time for each compaction strategy to compact a loop's facts on the product path.

The facts are the sentences of the BM25-ranked demo passages for a golden question, cut to
100, handed to each registered strategy exactly as ``MultiHopRAG`` hands them (a
``CompactionRequest`` with a 160-token budget, counted by the reader's Qwen2.5 tokenizer):
candidates built by ``fact_candidates``, BM25 relevance, the policy, the rendered synth
context and the record. The baseline is the ``naive`` policy behind the same compactor
(the set-up every strategy pays plus the cheapest policy), timed in the same run, interleaved.
Each call gets a fresh request (built outside the clock, as the loop builds it), so the full
context a request renders once, on first use, is rendered inside every timed call.

Two clocks per call: CPU time of the process (the compactor's own cost) and wall time (what a
caller saw at this machine's load, printed with the load average). Token counts and per-text
parses are warm (memoised per text, as for passages that recur across questions); the cold
first call is reported separately, and a second pass times every strategy on facts whose
texts are new on every call (nothing memoised: a new question's passages).

Run: ``python benchmarks/bench_packing.py [--repeats 300] [--candidates 100]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: BLAS threads only add scheduling noise

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from rootweaver_innovations.compaction.line import CompactionRequest  # noqa: E402
from rootweaver_innovations.compaction.synth_context import SynthContext  # noqa: E402
from rootweaver_innovations.documents.demo import demo_passages, load_questions  # noqa: E402
from rootweaver_innovations.compaction.packing import Budget  # noqa: E402
from rootweaver_innovations.compaction.packing.compactor import PackingCompactor  # noqa: E402
from rootweaver_innovations.records import facts_from_passages  # noqa: E402
from rootweaver_innovations.retrieval.retrievers import BM25Retriever  # noqa: E402
from rootweaver_innovations.compaction.strategies import make_compactor, strategy_names  # noqa: E402

BUDGET_TOKENS = 160


def build_request(n_facts: int) -> CompactionRequest:
    question = load_questions()[0].question
    hits = BM25Retriever(demo_passages()).search(question, 40)
    facts = facts_from_passages([h.passage for h in hits], sub_query=question, scores=[h.score for h in hits])
    return CompactionRequest(question, SynthContext(tuple(facts[:n_facts]), (question,)), (), Budget.tokens(BUDGET_TOKENS))


def renewed(request: CompactionRequest, k: int) -> CompactionRequest:
    """``request`` with every fact's title and sentence made new (a marker word appended), so
    no per-text memo (token counts, parses, BM25 terms) holds them: a new question's facts."""
    facts = tuple(dataclasses.replace(f, title=f"{f.title} v{k}", sentence=f"{f.sentence} v{k}") for f in request.facts)
    return dataclasses.replace(request, context=request.context.with_facts(facts, "full"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--candidates", type=int, default=100)
    args = ap.parse_args()
    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(f"machine: {platform.platform()} | {os.cpu_count()} CPUs | load avg "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} | python {platform.python_version()}")
    request = build_request(args.candidates)
    compactors = {"naive (baseline)": PackingCompactor("naive")}
    compactors.update({name: make_compactor(name) for name in strategy_names()})
    t0 = time.perf_counter()
    compactors["evidence"](request)
    print(f"facts: {len(request.facts)}, budget {BUDGET_TOKENS} tokens; cold first evidence call "
          f"(tokenizer load, token counts): {(time.perf_counter() - t0) * 1e3:.1f} ms")
    cpu: dict[str, list[float]] = {k: [] for k in compactors}
    wall: dict[str, list[float]] = {k: [] for k in compactors}
    results = {}
    for _ in range(args.repeats):
        for name, compact in compactors.items():
            fresh = dataclasses.replace(request)
            w0, c0 = time.perf_counter(), time.process_time()
            results[name] = compact(fresh)
            c1, w1 = time.process_time(), time.perf_counter()
            cpu[name].append(c1 - c0)
            wall[name].append(w1 - w0)
    base_cpu, base_wall = statistics.median(cpu["naive (baseline)"]), statistics.median(wall["naive (baseline)"])
    print(f"medians over {args.repeats} interleaved repeats:")
    for name in compactors:
        mc, mw = statistics.median(cpu[name]), statistics.median(wall[name])
        r = results[name]
        print(f"  {name:<17} cpu {mc * 1e3:6.3f} ms (x{mc / base_cpu:4.2f})  wall {mw * 1e3:6.3f} ms "
              f"(x{mw / base_wall:4.2f})  kept {len(r.kept_facts):2d} facts, {r.used} tokens")
    ev = statistics.median(cpu["evidence"])
    print(f"evidence (the default): cpu {ev * 1e3:.3f} ms; target < 2 ms: {'met' if ev < 2e-3 else 'NOT met'}")
    cold_repeats = max(1, args.repeats // 3)
    cold: dict[str, list[float]] = {k: [] for k in compactors}
    for k in range(cold_repeats):
        for j, (name, compact) in enumerate(compactors.items()):
            new = renewed(request, k * len(compactors) + j)  # built outside the clock
            c0 = time.process_time()
            compact(new)
            cold[name].append(time.process_time() - c0)
    base_cold = statistics.median(cold["naive (baseline)"])
    print(f"new facts on every call (nothing memoised, as for a new question's passages), "
          f"medians over {cold_repeats} interleaved repeats:")
    for name in compactors:
        mc = statistics.median(cold[name])
        print(f"  {name:<17} cpu {mc * 1e3:6.3f} ms (x{mc / base_cold:4.2f})")


if __name__ == "__main__":
    main()
