"""How long ``rootweaver --help`` takes next to bare Python, and which heavy modules it loads.

    python benchmarks/bench_cli_start.py [--runs 20]

Times ``--runs`` cold runs each of ``python -c pass``, the ``rootweaver`` console script next
to ``sys.executable`` with ``--help``, and ``python -m rootweaver_capabilities.cli.main --help``,
interleaved so that a busy machine slows all three alike. Prints each median, its ratio to
bare Python's (the goal: at most 3x) and the load average, then the heavy modules a child
that runs ``--help`` ends up with (none is the goal). The environment is the caller's: with
``PYTHONDONTWRITEBYTECODE`` set, rootweaver's own modules are compiled on every run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("numpy", "yaml", "rootweaver_innovations.retrieval.retrievers", "rootweaver_innovations.compaction.packing",
         "rootweaver_innovations.compaction.strategies", "rootweaver_innovations.loop.multihop", "rootweaver_capabilities.config",
         "rootweaver_capabilities.capability", "rootweaver_capabilities.assembly", "rootweaver_capabilities.batch.run")

_LOADED = """
import runpy, sys
sys.argv = ["rootweaver", "--help"]
try:
    runpy.run_module("rootweaver_capabilities.cli.main", run_name="__main__")
except SystemExit:
    pass
print([m for m in {heavy!r} if m in sys.modules], file=sys.stderr)
"""


def _seconds(cmd: list[str]) -> float:
    """Wall time of one run of ``cmd`` (output discarded; a failing run is an error)."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="cold runs of each command (default 20)")
    args = parser.parse_args()
    script = Path(sys.executable).with_name("rootweaver")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "rootweaver --help": [str(script), "--help"],
        "python -m rootweaver_capabilities.cli.main --help": [sys.executable, "-m", "rootweaver_capabilities.cli.main", "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for cmd in commands.values():  # warm-up: file cache
        _seconds(cmd)
    for _ in range(args.runs):
        for name, cmd in commands.items():
            times[name].append(_seconds(cmd))
    base = statistics.median(times["python -c pass"])
    print(f"{args.runs} runs each; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    for name, ts in times.items():
        median = statistics.median(ts)
        print(f"  {name:<46} median {median * 1000:7.1f} ms  {median / base:5.2f}x bare Python")
    child = subprocess.run([sys.executable, "-c", _LOADED.format(heavy=HEAVY)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, check=True)
    print(f"heavy modules loaded by --help: {child.stderr.strip()}")


if __name__ == "__main__":
    main()
