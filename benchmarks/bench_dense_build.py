"""What embeddings add to an index build: ``rootweaver index build`` with and without ``--dense``.

    python benchmarks/bench_dense_build.py --passages 20000 [--threads 2]

Both builds read the synthetic corpus of ``--passages`` lines that ``benchmarks/bench_index.py``
generates (once, under ``.cache/bench-index/``; the text its 1M-passage figure is grown from), one
after the other in this run, each in its own ``rootweaver``
process with ``OMP_NUM_THREADS=--threads``. Prints the wall time of each, their ratio, the
embedding pass's passages per second, the bytes the ``dense`` component adds per passage, and
the 1M-passage build time that rate implies (a linear extrapolation: the embedding pass is one
model call per batch of 256 passages, so its time grows with the passage count and their length).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_index import make_corpus  # noqa: E402


def build(corpus: Path, out: Path, threads: int, *extra: str) -> float:
    """Seconds for one ``rootweaver index build`` of ``corpus`` in its own process."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rootweaver_capabilities.cli.main", "index", "build", str(corpus),
                    "--out", str(out), *extra], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=20_000)
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of the builds (torch's threads)")
    args = ap.parse_args(argv)
    corpus = make_corpus(args.passages)
    with tempfile.TemporaryDirectory() as tmp:
        load = os.getloadavg()[0]
        plain = build(corpus, Path(tmp) / "plain", args.threads)
        dense = build(corpus, Path(tmp) / "dense", args.threads, "--dense")
        manifest = json.loads((Path(tmp) / "dense" / "manifest.json").read_text(encoding="utf-8"))
        added = manifest["files"]["dense/embeddings.npy"]["bytes"]
        shutil.rmtree(Path(tmp) / "plain")
    rate = args.passages / max(dense - plain, 1e-9)
    print(f"{args.passages:,} passages, OMP_NUM_THREADS={args.threads}, load average {load:.2f} at the start")
    print(f"index build            {plain:8.1f} s")
    print(f"index build --dense    {dense:8.1f} s   ({dense / plain:.1f}x the build without)")
    print(f"embedding pass         {rate:8.0f} passages/s; dense/embeddings.npy {added / args.passages:.0f} bytes "
          "a passage")
    print(f"implied for 1,000,000 passages: embedding {1_000_000 / rate / 3600:.1f} h, "
          f"{added / args.passages * 1e6 / 2**30:.2f} GiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
