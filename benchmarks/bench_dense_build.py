"""What embeddings add to an index build: ``rootweaver index build`` with and without ``--dense``.

    python benchmarks/bench_dense_build.py --passages 20000 [--threads 2] [--batch-sizes 16,64]

Both builds read the synthetic corpus of ``--passages`` lines that ``benchmarks/bench_index.py``
generates (once, under ``.cache/bench-index/``; the text its 1M-passage figure is grown from), one
after the other in this run, each in its own ``rootweaver``
process with ``OMP_NUM_THREADS=--threads``. Prints the wall time of each, their ratio, the
embedding pass's passages per second, the bytes the ``dense`` component adds per passage, and
the 1M-passage build time that rate implies (a linear extrapolation: the embedding pass is one
model call per batch of 256 passages, so its time grows with the passage count and their length).
``--batch-sizes`` then times the embedding model alone, in this process, on the first 2,048
passages in calls of 256 (as the build makes them) at each ``MiniLMEmbedder(batch_size=...)``,
and prints the passages per second and the ratio to the first size (the product's).
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


def batch_sizes(corpus: Path, sizes: list[int], threads: int, n: int = 2048) -> None:
    """Passages per second of the embedding model alone at each batch size, same passages."""
    import torch

    from rootweaver_innovations.documents.corpus import passage_from_object
    from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder
    from rootweaver_innovations.retrieval.retrievers import passage_text

    torch.set_num_threads(threads)
    with open(corpus, encoding="utf-8") as fh:
        texts = [passage_text(passage_from_object(json.loads(line), corpus, i)) for i, line in zip(range(1, n + 1), fh)]
    embedder = MiniLMEmbedder()
    embedder.encode(texts[:32])  # warm-up
    rates = []
    for size in sizes:
        embedder.batch_size = size
        start = time.perf_counter()
        for i in range(0, len(texts), 256):
            embedder.encode(texts[i:i + 256])
        rates.append(len(texts) / (time.perf_counter() - start))
        print(f"model alone, batch_size {size:4d}: {rates[-1]:6.1f} passages/s ({rates[-1] / rates[0]:.2f}x "
              f"batch_size {sizes[0]})", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=20_000)
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of the builds (torch's threads)")
    ap.add_argument("--batch-sizes", help="comma-separated batch sizes to time the model alone at, after the builds "
                    "(the first is the baseline of the ratios)")
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
    if args.batch_sizes:
        batch_sizes(corpus, [int(x) for x in args.batch_sizes.split(",")], args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
