"""Peak memory of every compaction strategy on the cases of issues 15 and 27, and what the
process-wide memos keep.

Usage: python benchmarks/bench_memory.py [--cases small,hotpot,one-lead,big-budget,memo]
       [--strategies line,submodular,evidence] [--budget 2000] [--limit-mb 200]

Each (case, strategy) runs in a fresh child process (``--child``) that builds the case's
facts, compacts a warm-up request, then compacts the case once under ``tracemalloc`` (peak
of Python and numpy allocations during the call) and reads the process's RSS high-water
mark (``ru_maxrss``) before and after: "RSS growth" is the memory the call took above the
process's baseline. Every strategy runs behind the product's input cap
(:func:`~rootweaver_innovations.compaction.strategies.make_compactor` defaults), budget in chars.

Cases:

- ``small``: ``benchmarks/bench_compaction.py``'s context (5 hop blocks of the demo corpus).
- ``hotpot``: one fact per paragraph of the bundled HotpotQA dev rows, one hop per
  question, up to 2,000,000 chars (about 4,150 lines).
- ``one-lead``: 4,558 one-sentence documents whose lines all open with the same lead
  entity.
- ``big-budget``: ``hotpot`` under a budget of 1,000,000 chars.
- ``memo``: 16,416 distinct lines of 20 KB turned into candidates 96 at a time (1.9 MB,
  within the input cap), as the packers do, then the memory still held after the calls (the process-wide memos);
  strategy column ``memos``.

Exit status 1 when a row's RSS growth is over ``--limit-mb`` (default 200), so the
benchmark is the check of the issue's "< 200 MB above baseline".
"""

from __future__ import annotations

import argparse
import gc
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
CASES = ("small", "hotpot", "one-lead", "big-budget", "memo")


def _hotpot_facts(target_chars: int):
    """(question, facts): one fact per HotpotQA paragraph, one hop per row, whole lines up to
    ``target_chars`` of rendered context."""
    from evals.qa_rows import load_qa_rows
    from rootweaver_innovations.records import Fact

    rows = load_qa_rows(REPO / "evals" / "data" / "hotpotqa.jsonl.gz")
    facts, size = [], 0
    for hop, row in enumerate(rows * (1 + target_chars // 1_000_000)):
        size += len(row.question) + 14
        for k, p in enumerate(row.passages):
            fact = Fact(f"{hop}:{p.id}", p.title, p.text, 0, hop, row.question, k)
            size += len(fact.line) + 1
            if size > target_chars:
                return rows[0].question, facts
            facts.append(fact)
    return rows[0].question, facts


def _one_lead_facts(n: int = 4558):
    from rootweaver_innovations.records import Fact

    _question, base = _hotpot_facts(700_000)
    facts = [Fact(f"d{i}", f"Doc {i}", f"Acme Rocket Company {base[i % len(base)].body[:120]}", 0, i % 10,
                  "Acme Rocket Company launch", i) for i in range(n)]
    return "Where did the Acme Rocket Company launch its first rocket?", facts


def _small_facts():
    from rootweaver_innovations.documents.demo import demo_passages, load_questions
    from rootweaver_innovations.records import Fact

    question = load_questions()[0].question
    facts, i = [], 0
    for hop in range(5):
        size = 0
        while size < 1500:
            p = demo_passages()[i % 598]
            i += 1
            for k, s in enumerate(p.sentences):
                facts.append(Fact(p.id, p.title, s, k, hop, f"sub-query {hop} {question}"))
                size += len(facts[-1].line) + 1
    return question, facts


def _request(case: str, budget: int):
    from rootweaver_innovations.compaction.budget import Budget
    from rootweaver_innovations.compaction.line import CompactionRequest
    from rootweaver_innovations.compaction.synth_context import SynthContext

    if case == "small":
        question, facts = _small_facts()
    elif case == "one-lead":
        question, facts = _one_lead_facts()
    else:
        question, facts = _hotpot_facts(2_000_000)
        budget = 1_000_000 if case == "big-budget" else budget
    hops = [""] * (max(f.hop for f in facts) + 1)
    for f in facts:
        hops[f.hop] = hops[f.hop] or f.sub_query
    return CompactionRequest(question, SynthContext(tuple(facts), tuple(hops)), (), Budget(budget, "chars"))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(case: str, strategy: str, budget: int) -> dict:
    """One measurement (see the module docstring); a JSON-able dict."""
    from rootweaver_innovations.compaction.budget import Budget
    from rootweaver_innovations.compaction.line import CompactionRequest
    from rootweaver_innovations.compaction.synth_context import SynthContext
    from rootweaver_innovations.records import Fact
    from rootweaver_innovations.compaction.strategies import make_compactor

    if case == "memo":
        from rootweaver_innovations.compaction.packing.candidates import fact_candidates

        words = [f"w{k}" for k in range(4000)]
        lines = [" ".join(words[(i * 7 + j) % 4000] for j in range(4000))[:20_000] for i in range(16)]
        gc.collect()
        rss_before = _rss_mb()
        tracemalloc.start()
        t0 = time.perf_counter()
        for call in range(171):  # 16,416 distinct 20 KB lines, 96 per call (1.9 MB: within the input cap)
            facts = [Fact(f"p{call}-{i}", "T", f"{lines[i % 16]} {call} {i}", 0) for i in range(96)]
            fact_candidates("which w1 w2", facts)
            del facts
        seconds = time.perf_counter() - t0
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {"case": case, "strategy": "memos", "lines": 171 * 96, "chars": 171 * 96 * 20_000,
                "traced_mb": peak / 2**20, "held_mb": held / 2**20, "rss_growth_mb": _rss_mb() - rss_before,
                "rss_mb": _rss_mb(), "seconds": seconds}
    request = _request(case, budget)
    compactor = make_compactor(strategy)
    warm = Fact("w", "Warm", "Warm up imports and tokenizer.", 0)
    compactor(CompactionRequest(request.question, SynthContext((warm,), ("",)), (), Budget(200, "chars")))
    text = request.context.text
    gc.collect()
    rss_before = _rss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    res = compactor(request)
    seconds = time.perf_counter() - t0
    _held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"case": case, "strategy": strategy, "lines": text.count("\n") + 1, "chars": len(text),
            "out_chars": len(res.text), "traced_mb": peak / 2**20, "rss_growth_mb": _rss_mb() - rss_before,
            "rss_mb": _rss_mb(), "seconds": seconds}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--strategies", default="line,submodular,evidence")
    ap.add_argument("--budget", type=int, default=2000, help="chars (big-budget: 1,000,000)")
    ap.add_argument("--limit-mb", type=float, default=200.0, help="RSS growth allowed per row")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "STRATEGY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.budget)))
        return 0
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpu, budget {args.budget} "
          f"chars, limit {args.limit_mb:g} MB RSS growth")
    print("| case | strategy | lines | chars | peak traced MB | RSS growth MB | RSS total MB | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    over = 0
    for case in args.cases.split(","):
        for strategy in (["memos"] if case == "memo" else args.strategies.split(",")):
            proc = subprocess.run([sys.executable, __file__, "--child", case, strategy, "--budget", str(args.budget)],
                                  capture_output=True, text=True, env=env, timeout=args.timeout, check=False)
            if proc.returncode:
                print(f"| {case} | {strategy} | failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]} ||||||")
                over += 1
                continue
            r = json.loads(proc.stdout)
            over += r["rss_growth_mb"] > args.limit_mb
            held = f" (held after: {r['held_mb']:.1f})" if "held_mb" in r else ""
            print(f"| {case} | {strategy} | {r['lines']:,} | {r['chars']:,} | {r['traced_mb']:.1f}{held} | "
                  f"{r['rss_growth_mb']:.1f} | {r['rss_mb']:.0f} | {r['seconds']:.2f} |", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
