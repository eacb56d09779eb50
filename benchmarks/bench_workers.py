"""Throughput of MultiHopCapability: one process, 4 threads, and N worker processes.

Usage: python benchmarks/bench_workers.py [--requests 3000] [--rounds 3] [--workers 1,2] [--threads 4] [--config PATH]

All in one run, over the bundled demo corpus and its golden questions (cycled), with the
shipped config (``configs/retrieval/multi_hop.yaml``) unless ``--config`` is given:

- ``1 process, 1 thread``: ``execute`` in a loop (the reference figure);
- ``1 process, T threads``: the same requests through one capability from a thread pool;
- ``N worker processes``: the capability is built and warmed up (BM25 index, RAG
  instances) in the parent, then ``fork``-ed; each worker answers its share of the
  requests. The index is shared copy-on-write, not rebuilt or copied: its numpy buffers
  are never written after the fork, so their pages stay shared. Each worker reports its
  RSS and PSS (``/proc/self/smaps_rollup``; PSS splits shared pages among the processes
  sharing them, so PSS well under RSS means shared pages).

Wall time is from the start signal to the last answer; requests/s = requests / wall time.
Modes run interleaved for ``--rounds`` rounds (the machine's load drifts); the median and
the best rate are printed, with "cores used" = CPU seconds of the process(es) / wall
seconds (threads: about 1, the GIL; N workers: up to N when the machine has N idle cores).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_innovations.documents.demo import load_questions

REPO = Path(__file__).resolve().parents[1]


def _memory_mb() -> tuple[float, float]:
    """(RSS, PSS) of this process in MB, from /proc/self/smaps_rollup (Linux)."""
    values = {}
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if parts[0] in ("Rss:", "Pss:"):
                values[parts[0]] = int(parts[1]) / 1024
    return values["Rss:"], values["Pss:"]


def _answer(capability: MultiHopCapability, questions: list[str]) -> int:
    for q in questions:
        capability.execute(RequestContext(query=q))
    return len(questions)


def _worker(capability, questions, start, results) -> None:
    start.wait()
    cpu0 = time.process_time()
    n = _answer(capability, questions)
    results.put((n, time.perf_counter(), time.process_time() - cpu0, *_memory_mb()))


def run_processes(capability: MultiHopCapability, questions: list[str], n_workers: int) -> tuple[float, float, list]:
    """(wall seconds, CPU seconds, [(RSS, PSS) per worker]) for ``n_workers`` forked workers
    answering ``questions`` between them."""
    ctx = mp.get_context("fork")
    start, results = ctx.Event(), ctx.Queue()
    shares = [questions[k::n_workers] for k in range(n_workers)]
    procs = [ctx.Process(target=_worker, args=(capability, share, start, results)) for share in shares]
    for p in procs:
        p.start()
    time.sleep(0.5)  # every worker forked and waiting
    t0 = time.perf_counter()
    start.set()
    done = [results.get() for _ in procs]
    for p in procs:
        p.join()
    assert sum(d[0] for d in done) == len(questions)
    return max(d[1] for d in done) - t0, sum(d[2] for d in done), [(d[3], d[4]) for d in done]


def run_threads(capability: MultiHopCapability, questions: list[str], n_threads: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process) for ``n_threads`` threads sharing one capability."""
    shares = [questions[k::n_threads] for k in range(n_threads)]
    with ThreadPoolExecutor(n_threads) as pool:
        t0, cpu0 = time.perf_counter(), time.process_time()
        assert sum(pool.map(lambda s: _answer(capability, s), shares)) == len(questions)
        return time.perf_counter() - t0, time.process_time() - cpu0


def run_loop(capability: MultiHopCapability, questions: list[str]) -> tuple[float, float]:
    t0, cpu0 = time.perf_counter(), time.process_time()
    _answer(capability, questions)
    return time.perf_counter() - t0, time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=3000, help="requests per mode and round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; median and best are printed")
    ap.add_argument("--workers", default="1,2", help="comma list of worker-process counts")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "retrieval" / "multi_hop.yaml")
    args = ap.parse_args()
    config = MultiHopConfig.from_yaml(args.config)
    golden = [q.question for q in load_questions()]
    questions = [golden[i % len(golden)] for i in range(args.requests)]
    capability = MultiHopCapability(config)
    _answer(capability, golden)  # warm-up: builds the index and the RAG instances before any fork

    modes = {"1 process, 1 thread": lambda: (*run_loop(capability, questions), [])}
    modes[f"1 process, {args.threads} threads"] = lambda: (*run_threads(capability, questions, args.threads), [])
    for n in map(int, args.workers.split(",")):
        modes[f"{n} worker process{'es' if n > 1 else ''}"] = lambda n=n: run_processes(capability, questions, n)
    runs: dict[str, list] = {name: [] for name in modes}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, run in modes.items():
            runs[name].append(run())
    load_after = os.getloadavg()[0]

    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpu, "
          f"load average {load_before:.1f} -> {load_after:.1f}; {args.requests} requests x {args.rounds} rounds, "
          f"config {args.config.name} (compaction {config.compaction.strategy if config.compaction.enabled else 'off'})")
    print("| mode | requests/s (median) | best | median vs 1 process, 1 thread | cores used | worker RSS / PSS MB |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(args.requests / wall for wall, _cpu, _mem in runs["1 process, 1 thread"])
    for name, results in runs.items():
        rates = [args.requests / wall for wall, _cpu, _mem in results]
        cores = statistics.median(cpu / wall for wall, cpu, _mem in results)
        mem = ", ".join(f"{rss:.0f} / {pss:.0f}" for rss, pss in results[-1][2])
        print(f"| {name} | {statistics.median(rates):,.0f} | {max(rates):,.0f} | "
              f"{statistics.median(rates) / base:.2f}x | {cores:.2f} | {mem} |")


if __name__ == "__main__":
    main()
