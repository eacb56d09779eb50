"""Large-corpus benchmark: a built, memory-mapped index against the in-memory BM25 index.

    python benchmarks/bench_index.py --sizes 100000 1000000 [--skip-memory-above 1000000]

For each size it generates (once, cached under ``.cache/bench-index/``) a synthetic corpus
grown from the bundled demo corpus and the bundled HotpotQA paragraphs
(``evals/data/hotpotqa.jsonl.gz``): the demo corpus first, verbatim (so the 60 golden
questions find their passages), then copies of the HotpotQA paragraphs whose capitalised
words get one of ten copy-dependent suffixes, so the vocabulary grows with the size.

Every measurement runs in its own child process (one at a time, never in parallel), so
peak RSS is that step's own:

- ``index build``: wall time and peak RSS of :func:`build_index`;
- worker 1 and worker 2 (the second started while the first is alive): open time, RSS
  after answering, the loop's ms per question over the 60 golden questions (median of
  three warm passes after a first; page cache warm) and ms per search of their
  sub-queries; for worker 2 also
  its private memory (``Private_Clean + Private_Dirty`` of ``/proc/PID/smaps_rollup``),
  i.e. what a second worker adds;
- the in-memory baseline (``load_corpus_jsonl`` + ``BM25Retriever``): build time, peak
  RSS, loop and search ms; and whether its trajectories (sub-queries and retrieved ids)
  equal the index workers' on all 60 questions;
- the first answer a user waits for: ``rootweaver ask --index DIR --reader none --json``
  of a golden question from a cold process (wall time and peak RSS, median of
  ``--cold-runs``), beside the same command over the bundled demo corpus (``ask`` with no
  ``--index``), measured in the same minutes as the baseline; and the same first answer
  again with ``--busy`` CPU-bound processes running beside it (default 2: a user's
  machine is rarely idle).

The loop's ms per question covers all of ``multi_hop_search``: the question's search, the
title-link queries of the bridge plan, the hop searches and the passages read.

Prints a Markdown table with times as wall (CPU): on a shared machine the wall time
includes waiting for a core, the CPU time is what the code costs. The 1-minute load
average at the start of each size is printed too. Peak RSS is ``ru_maxrss``; RSS counts
the index's mapped pages the process touched. Exit 1 if any trajectories differ.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = ROOT / ".cache" / "bench-index"
_CAPITAL = re.compile(r"\b[A-Z][a-z]+\b")
_SUFFIXES = 10


def _sources() -> list[dict]:
    """Demo passages first, then the distinct HotpotQA paragraphs (title, sentences)."""
    from rootweaver_innovations.documents.demo import demo_passages

    out = [{"id": p.id, "title": p.title, "sentences": list(p.sentences)} for p in demo_passages()]
    seen = {p["title"] for p in out}
    with gzip.open(ROOT / "evals" / "data" / "hotpotqa.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            ctx = row["context"] if isinstance(row["context"], list) else json.loads(row["context"])
            for title, sents in ctx:
                if title not in seen and any(s.strip() for s in sents):
                    seen.add(title)
                    out.append({"title": title, "sentences": [s.strip() for s in sents if s.strip()]})
    return out


def _perturb(text: str, copy: int) -> str:
    def sub(m: re.Match) -> str:
        word = m.group(0)
        v = zlib.crc32(f"{word}|{copy}".encode()) % (_SUFFIXES + 1)
        return word if v == 0 else word + "abcdefghijk"[v - 1] * 2

    return _CAPITAL.sub(sub, text)


def make_corpus(n: int) -> Path:
    """The synthetic corpus of ``n`` passages (generated once, then cached)."""
    path = CACHE / f"corpus-{n}.jsonl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    src = _sources()
    demo = [s for s in src if "id" in s]
    hotpot = [s for s in src if "id" not in s]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for i in range(n):
            if i < len(demo):
                rec = demo[i]
            else:
                j = i - len(demo)
                copy, s = divmod(j, len(hotpot))
                s = hotpot[s]
                rec = {"id": f"syn{copy}:{j}", "title": _perturb(s["title"], copy),
                       "sentences": [_perturb(t, copy) for t in s["sentences"]]}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.rename(path)
    return path


# ---------------------------------------------------------------- child processes

def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its finished children (build workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _answer(retriever) -> dict:
    """Loop and search timings over the golden questions, and the trajectories."""
    from rootweaver_innovations.documents.demo import load_questions
    from evals.loops import product_loop

    rag = product_loop(retriever)
    questions = [q.question for q in load_questions()]
    first = [rag.multi_hop_search(q) for q in questions]
    passes = []
    for _ in range(3):  # the median warm pass: one pass of 60 questions is under a second
        t0, c0 = time.perf_counter(), time.process_time()
        for q in questions:
            rag.multi_hop_search(q)
        passes.append(((time.perf_counter() - t0) * 1000 / len(questions),
                       (time.process_time() - c0) * 1000 / len(questions)))
    loop_ms, loop_cpu_ms = sorted(passes)[1]
    subs = [h.sub_query for r in first for h in r.hops]
    t0, c0 = time.perf_counter(), time.process_time()
    for s in subs:
        retriever.search(s, 10)
    search_ms = (time.perf_counter() - t0) * 1000 / max(len(subs), 1)
    search_cpu_ms = (time.process_time() - c0) * 1000 / max(len(subs), 1)
    traj = [[(h.sub_query, list(h.retrieved_ids)) for h in r.hops] for r in first]
    return {"loop_ms": loop_ms, "loop_cpu_ms": loop_cpu_ms, "search_ms": search_ms, "search_cpu_ms": search_cpu_ms,
            "searches": len(subs), "trajectories": traj}


def _child(argv: list[str]) -> None:
    mode, *rest = argv
    if mode == "build":
        from rootweaver_innovations.retrieval.index import build_index

        corpus, out, workers = Path(rest[0]), Path(rest[1]), int(rest[2])
        t0 = time.perf_counter()
        last = [0.0]

        def progress(p) -> None:
            if time.perf_counter() - last[0] > 10:
                last[0] = time.perf_counter()
                print(p.line(), file=sys.stderr, flush=True)

        manifest = build_index(corpus, out, workers=workers, progress=progress)
        res = {"build_s": time.perf_counter() - t0, "cpu_s": _cpu_s(), "peak_mb": _peak_mb(),
               "vocab": manifest.components["bm25"]["vocab_size"], "nnz": manifest.components["bm25"]["nnz"]}
    elif mode == "worker":
        from rootweaver_innovations.retrieval.index import open_index

        t0 = time.perf_counter()
        index = open_index(rest[0])
        retriever = index.retriever()
        open_s = time.perf_counter() - t0
        res = {"open_s": open_s, "rss_open_mb": _rss_mb(), **_answer(retriever), "rss_mb": _rss_mb()}
    else:  # memory
        from rootweaver_innovations.documents.corpus import load_corpus_jsonl
        from rootweaver_innovations.retrieval.retrievers import BM25Retriever

        t0 = time.perf_counter()
        retriever = BM25Retriever(load_corpus_jsonl(rest[0]))
        build_s, cpu_s = time.perf_counter() - t0, _cpu_s()
        res = {"build_s": build_s, "cpu_s": cpu_s, **_answer(retriever), "rss_mb": _rss_mb(), "peak_mb": _peak_mb()}
    print(json.dumps(res), flush=True)
    if mode == "worker" and rest[1:] == ["--hold"]:
        sys.stdin.readline()  # stay alive (mapped pages held) until the driver says so


def _start(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, __file__, "_child", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


def _result(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"child {proc.args[3:]} failed (exit {proc.wait()})")
    return json.loads(line)


def _private_mb(pid: int) -> float:
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total / 1024


def _cold_ask(*args: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``rootweaver ask ... --reader none --json`` process."""
    from rootweaver_innovations.documents.demo import load_questions

    question = next(q.question for q in load_questions() if q.type == "bridge")
    exe = Path(sys.executable).with_name("rootweaver")
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(exe), "ask", question, *args, "--reader", "none", "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"rootweaver ask {' '.join(args)} failed: {proc.stderr.read().decode()[-300:]}")
    return wall, usage.ru_maxrss / 1024


def _median_cold(runs: int, *args: str) -> dict:
    walls, peaks = zip(*(_cold_ask(*args) for _ in range(runs)))
    return {"s": statistics.median(walls), "peak_mb": max(peaks)}


def _busy_cold(busy: int, runs: int, *args: str) -> dict:
    """:func:`_median_cold` with ``busy`` busy-loop processes beside it (stopped by PID after)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        return _median_cold(runs, *args)
    finally:
        for p in loops:
            p.kill()
            p.wait()


def run(n: int, memory: bool, keep: bool, workers: int, cold_runs: int, busy: int) -> dict:
    corpus = make_corpus(n)
    out = CACHE / f"index-{n}"
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    p = _start("build", str(corpus), str(out), str(workers))
    build = _result(p)
    p.wait()
    cold = {"index": _median_cold(cold_runs, "--index", str(out)), "demo": _median_cold(cold_runs),
            "busy": _busy_cold(busy, cold_runs, "--index", str(out))}
    w1 = _start("worker", str(out), "--hold")
    r1 = _result(w1)
    w2 = _start("worker", str(out), "--hold")
    r2 = _result(w2)
    r2["private_mb"] = _private_mb(w2.pid)
    for w in (w1, w2):
        w.stdin.write("\n")
        w.stdin.flush()
        w.wait()
    mem = None
    if memory:
        p = _start("memory", str(corpus))
        mem = _result(p)
        p.wait()
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    return {"n": n, "load": load, "build": build, "cold": cold, "w1": r1, "w2": r2, "memory": mem,
            "same_workers": r1["trajectories"] == r2["trajectories"],
            "same_memory": None if mem is None else mem["trajectories"] == r1["trajectories"]}


def table(rows: list[dict]) -> str:
    """Markdown table; times are wall (CPU) so a loaded machine's queueing is visible."""
    head = ("| passages | terms | load avg | index build s | build peak RSS MB | first answer s (peak RSS MB) | "
            "with busy processes s | demo corpus first answer s | open s | RSS answering MB | "
            "2nd worker adds MB | loop ms/q | search ms | in-memory build s | in-memory peak RSS MB | "
            "in-memory loop ms/q | in-memory search ms | trajectories = in-memory (60 q) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        b, w1, w2, m = r["build"], r["w1"], r["w2"], r["memory"]
        mem = (f"{m['build_s']:.1f} ({m['cpu_s']:.1f}) | {m['peak_mb']:,.0f} | {m['loop_ms']:.2f} "
               f"({m['loop_cpu_ms']:.2f}) | {m['search_ms']:.2f} ({m['search_cpu_ms']:.2f}) | "
               f"{'yes' if r['same_memory'] else 'NO'}") if m else "not run | | | | not run"
        lines.append(f"| {r['n']:,} | {b['vocab']:,} | {r['load']:.1f} | {b['build_s']:.1f} ({b['cpu_s']:.1f}) | "
                     f"{b['peak_mb']:,.0f} | {r['cold']['index']['s']:.2f} ({r['cold']['index']['peak_mb']:,.0f}) | "
                     f"{r['cold']['busy']['s']:.2f} | {r['cold']['demo']['s']:.2f} | {w1['open_s']:.2f} | "
                     f"{w1['rss_mb']:,.0f} | {w2['private_mb']:,.0f} | "
                     f"{w1['loop_ms']:.2f} ({w1['loop_cpu_ms']:.2f}) | {w1['search_ms']:.2f} "
                     f"({w1['search_cpu_ms']:.2f}) | {mem} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--skip-memory-above", type=int, default=1_000_000,
                    help="no in-memory baseline above this many passages (it would not fit)")
    ap.add_argument("--keep", action="store_true", help="keep the built indexes under .cache/bench-index")
    ap.add_argument("--workers", type=int, default=2, help="build processes (rootweaver index build --workers)")
    ap.add_argument("--cold-runs", type=int, default=3, help="cold `rootweaver ask` processes per figure (median)")
    ap.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the busy first-answer figure")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        r = run(n, n <= args.skip_memory_above, args.keep, args.workers, args.cold_runs, args.busy)
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items() if k in ("n", "same_workers", "same_memory")}
                         | {"build": r["build"], "cold": r["cold"],
                            "w1": {k: v for k, v in r["w1"].items() if k != "trajectories"},
                            "w2_private_mb": r["w2"]["private_mb"]}), file=sys.stderr, flush=True)
    print(table(rows))
    ok = all(r["same_workers"] and r["same_memory"] is not False for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["_child"]:
        _child(sys.argv[2:])
    else:
        sys.exit(main())
