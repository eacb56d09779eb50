"""Median time to pack 100 candidates under a 160-token budget: submodular beside naive.

Candidates are the sentences ("<title> | <sentence>") of the BM25 top passages of a
golden question over the bundled demo corpus, 100 of them, relevance = TF-IDF cosine with
the question. Embeddings are computed once before timing (MiniLM when the ``dense`` extra
is installed, else seeded random unit vectors: the packer's cost does not depend on the
values). Token counts are warmed once (the Qwen2.5 counter memoises per text); the cold
first call, tokenisation included, is reported separately. Every policy is timed in the
same run, interleaved, on identical inputs; each timed call is a full ``pack`` (selection
contract, similarity from embeddings, objective set-up, policy, record).

Two clocks per call: wall time (``perf_counter``) and the process's CPU time
(``process_time``). On a machine shared with other work the wall clock also counts the time
the process waits for a core (a call that crosses a scheduler slice waits for the other
runnable tasks), so the CPU-time median is the packer's own cost and the wall median is what
a caller saw on this machine at this load; both are printed, with the load average.

BLAS runs single-threaded unless the environment says otherwise: on a 2-core machine
shared with other work, OpenBLAS's threads turn a 100x384 matrix product from ~0.1 ms into
~15 ms (measured here), and packing matrices are far too small to gain from threads.

Run: ``python3 benchmarks/bench_packing.py [--repeats 200] [--embeddings minilm|random]``;
``--candidates 50 --policies naive focused mmr submodular evidence`` times the ``evidence``
policy on ~50 candidates (issue 8), its own target line printed beside submodular's.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from rootweaver_innovations.demo import demo_passages, load_questions  # noqa: E402
from rootweaver_innovations.packing import (  # noqa: E402
    POLICIES,
    Budget,
    Candidate,
    dense_similarity,
    pack,
    tfidf_relevance,
)
from rootweaver_innovations.retrieval import BM25Retriever  # noqa: E402

N_CANDIDATES = 100
BUDGET_TOKENS = 160


def machine_info() -> str:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.platform()} | {cpu} | {os.cpu_count()} logical CPUs | load avg {load} | "
        f"python {platform.python_version()} | numpy {np.__version__} | "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )


def build_candidates(n_candidates: int = N_CANDIDATES) -> tuple[str, list[Candidate]]:
    passages = demo_passages()
    question = load_questions()[0].question
    lines: list[tuple[str, str]] = []
    for hit in BM25Retriever(passages).search(question, len(passages)):
        lines.extend((hit.passage.title, f"{hit.passage.title} | {s}") for s in hit.passage.sentences)
        if len(lines) >= n_candidates:
            break
    lines = lines[:n_candidates]
    rel = tfidf_relevance(question, [t for _doc, t in lines])
    return question, [Candidate(f"s{i}", doc, text, i, float(rel[i])) for i, (doc, text) in enumerate(lines)]


def embed(texts: list[str], how: str) -> tuple[np.ndarray, str]:
    if how == "minilm":
        try:
            from rootweaver_innovations.embeddings import MiniLMEmbedder

            return MiniLMEmbedder().encode(texts), "MiniLM (all-MiniLM-L6-v2, 384-d)"
        except ImportError as exc:
            print(f"note: {exc}; falling back to random embeddings", file=sys.stderr)
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(len(texts), 384))
    return emb / np.linalg.norm(emb, axis=1, keepdims=True), "seeded random unit vectors (384-d)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--embeddings", choices=("minilm", "random"), default="minilm")
    ap.add_argument("--policies", nargs="+", default=["naive", "focused", "mmr", "submodular"])
    ap.add_argument("--candidates", type=int, default=N_CANDIDATES)
    args = ap.parse_args()

    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print("machine:", machine_info())
    question, cands = build_candidates(args.candidates)
    emb, emb_kind = embed([c.text for c in cands], args.embeddings)
    budget = Budget.tokens(BUDGET_TOKENS)
    print(f"question: {question!r}")
    print(f"candidates: {len(cands)}, embeddings: {emb_kind}, budget: {BUDGET_TOKENS} tokens (Qwen2.5 tokenizer)")

    t0 = time.perf_counter()
    pack("submodular", cands, question, budget, similarity=dense_similarity(emb))
    cold = time.perf_counter() - t0

    for policy in args.policies:
        if policy not in POLICIES:
            ap.error(f"unknown policy {policy!r}; choose from {sorted(POLICIES)}")
    if "naive" not in args.policies or "submodular" not in args.policies:
        ap.error("--policies must include naive and submodular")
    wall: dict[str, list[float]] = {p: [] for p in args.policies}
    cpu: dict[str, list[float]] = {p: [] for p in args.policies}
    results = {}
    for _ in range(args.repeats):
        for policy in args.policies:
            w0, c0 = time.perf_counter(), time.process_time()
            results[policy] = pack(policy, cands, question, budget, similarity=dense_similarity(emb))
            c1, w1 = time.process_time(), time.perf_counter()
            wall[policy].append(w1 - w0)
            cpu[policy].append(c1 - c0)

    print(f"cold first submodular call (loading the tokenizer, tokenising {len(cands)} candidates): {cold * 1e3:.1f} ms")
    print(f"medians over {args.repeats} interleaved repeats (warm token counts), load avg now "
          f"{os.getloadavg()[0]:.2f}:")
    naive_cpu, naive_wall = statistics.median(cpu["naive"]), statistics.median(wall["naive"])
    for policy in args.policies:
        mc, mw = statistics.median(cpu[policy]), statistics.median(wall[policy])
        r = results[policy]
        print(
            f"  {policy:<11} cpu {mc * 1e3:6.3f} ms (x{mc / naive_cpu:4.2f} naive)   "
            f"wall {mw * 1e3:6.3f} ms (x{mw / naive_wall:4.2f})   "
            f"snippets {len(r.packet):2d}  tokens {r.tokens:3d}  F {r.objective:.3f}"
        )
    sub_cpu, sub_wall = statistics.median(cpu["submodular"]), statistics.median(wall["submodular"])
    print(
        f"submodular: cpu {sub_cpu * 1e3:.3f} ms, wall {sub_wall * 1e3:.3f} ms "
        f"(target < 2 ms: cpu {'met' if sub_cpu < 2e-3 else 'NOT met'}, wall {'met' if sub_wall < 2e-3 else 'NOT met'}); "
        f"naive: cpu {naive_cpu * 1e3:.3f} ms, wall {naive_wall * 1e3:.3f} ms; "
        f"ratio cpu {sub_cpu / naive_cpu:.2f}, wall {sub_wall / naive_wall:.2f}"
    )
    if "evidence" in args.policies:
        ev_cpu, ev_wall = statistics.median(cpu["evidence"]), statistics.median(wall["evidence"])
        print(f"evidence: cpu {ev_cpu * 1e3:.3f} ms, wall {ev_wall * 1e3:.3f} ms (target < 2 ms: cpu "
              f"{'met' if ev_cpu < 2e-3 else 'NOT met'}, wall {'met' if ev_wall < 2e-3 else 'NOT met'})")

if __name__ == "__main__":
    main()
