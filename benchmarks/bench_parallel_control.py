"""Control for every 1-vs-2 process benchmark here: how much faster two CPU-bound processes
finish a fixed amount of pure Python work than one, on this machine, now (no rootweaver code).

    python benchmarks/bench_parallel_control.py [--rounds 3] [--work 30000000]

Prints, per round, one process's seconds, the two processes' seconds, and the ratio
2 * t1 / max(t2a, t2b): 2.0 on two free cores, lower when the second vCPU is shared.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor


def spin(work: int) -> float:
    started, x = time.perf_counter(), 0
    for i in range(work):
        x += i * i
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", type=int, default=30_000_000)
    args = p.parse_args()
    with ProcessPoolExecutor(2) as pool:
        pool.submit(spin, 1).result()  # both workers started before timing
        for r in range(1, args.rounds + 1):
            one = pool.submit(spin, args.work).result()
            pair = [f.result() for f in [pool.submit(spin, args.work), pool.submit(spin, args.work)]]
            print(f"round {r}: one {one:.2f} s, two {pair[0]:.2f} / {pair[1]:.2f} s, x{2 * one / max(pair):.2f}")


if __name__ == "__main__":
    main()
