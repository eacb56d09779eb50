"""All-gold of the loop over a two-shard sphinxql index vs the local BM25 index, and latency.

Usage: python benchmarks/bench_sphinxql.py --dataset hotpotqa|2wiki --hosts 127.0.0.1:9306,127.0.0.1:9406
           --nodes 127.0.0.1:9306:9312,127.0.0.1:9406:9412 [--rows odd] [--limit N] [--no-export]

The corpus is the open pool of the chosen rows (as ``rootweaver eval e2e``); it is exported
into the running searchd nodes (index ``rw_<dataset>``, written by ``rootweaver index export
--to sphinxql --conf-dir`` with the same ``--index``) unless ``--no-export``. Both loops are
``MultiHopRAG`` with the defaults (evidence stop rule, 10 passages). Prints all-gold (every
gold paragraph in the trajectory) of each, how many trajectories are identical, and
per-search / per-question latency (median, p95) of each retriever.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from evals.datasets import build_open_pool, load_rows
from rootweaver_capabilities.config import SphinxQLConfig
from rootweaver_capabilities.cluster.sphinxql import SphinxQLRetriever, export_corpus, parse_nodes
from evals.loops import product_loop
from rootweaver_innovations.retrieval.retrievers import BM25Retriever


class _Timed:
    def __init__(self, inner):
        self.inner, self.times = inner, []
        self.passages = inner.passages

    def search(self, query, k):
        t = time.perf_counter()
        try:
            return self.inner.search(query, k)
        finally:
            self.times.append(time.perf_counter() - t)


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="hotpotqa")
    p.add_argument("--hosts", required=True)
    p.add_argument("--nodes", required=True)
    p.add_argument("--rows", choices=("all", "even", "odd"), default="odd")
    p.add_argument("--limit", type=int)
    p.add_argument("--no-export", action="store_true")
    args = p.parse_args()
    rows = load_rows(args.dataset, None)
    rows = {"all": rows, "even": rows[0::2], "odd": rows[1::2]}[args.rows][: args.limit]
    pool = build_open_pool(rows)
    index = f"rw_{args.dataset.replace('2wiki', 'twowiki')}"
    if not args.no_export:
        t = time.perf_counter()
        export_corpus(pool.passages, parse_nodes(args.nodes), index=index)
        print(f"exported {len(pool.passages)} passages to {args.nodes} in {time.perf_counter() - t:.1f} s")
    local = _Timed(BM25Retriever(pool.passages))
    remote = _Timed(SphinxQLRetriever(SphinxQLConfig(hosts=args.hosts, index=index)))
    out = {}
    for name, r in (("local", local), ("sphinxql", remote)):
        rag = product_loop(r)
        hits, trajs, per_q = [], [], []
        for i, row in enumerate(rows):
            t = time.perf_counter()
            res = rag.multi_hop_search(row.question)
            per_q.append(time.perf_counter() - t)
            ids = [pid for h in res.hops for pid in h.retrieved_ids]
            trajs.append(ids)
            if pool.gold[i]:
                hits.append(float(pool.gold[i] <= set(ids)))
        out[name] = {"all_gold": statistics.mean(hits), "n_scored": len(hits), "trajectories": trajs,
                     "search_ms_median": _pct(r.times, 0.5), "search_ms_p95": _pct(r.times, 0.95),
                     "question_ms_median": _pct(per_q, 0.5), "question_ms_p95": _pct(per_q, 0.95),
                     "searches": len(r.times)}
    same = sum(a == b for a, b in zip(out["local"]["trajectories"], out["sphinxql"]["trajectories"]))
    report = {"dataset": args.dataset, "rows": args.rows, "questions": len(rows), "pool_passages": len(pool.passages),
              "identical_trajectories": same,
              **{n: {k: v for k, v in d.items() if k != "trajectories"} for n, d in out.items()}}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
