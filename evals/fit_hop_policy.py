"""Fit the hop policy's schedules (``rootweaver_innovations/data/hop_policy.json``) on the even rows.

For each passage budget, a grid over :class:`~rootweaver_innovations.loop.hops.HopSchedule`
sizes; the chosen schedule maximises the mean all-gold-in-trajectory share over the even
rows of HotpotQA, 2Wiki and MuSiQue (each set its own open pool), ties to the earlier grid
point. Gold labels are used here only, to score; the loop never sees them. Odd rows are
never read.

    python -m evals.fit_hop_policy [--out PATH] [--limit N]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.loop.hops import POLICY_FILE, HopPolicyParams, HopSchedule
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

from .datasets import DATASETS, build_open_pool, load_rows
from .loops import product_loop

GRIDS: dict[int, dict[str, Sequence[int]]] = {
    6: {"first_hop": (2, 3), "question_links": (1, 2), "title_links": (1, 2), "spans": (1, 2)},
    10: {"first_hop": (3, 4, 5), "question_links": (1, 2), "title_links": (1, 2, 3), "spans": (1, 2, 3)},
}
FIXED = {"span_sources": 2, "lead_sentences": 2, "link_depth": 100}


def _all_gold(rag: MultiHopRAG, questions: Sequence[str], gold: Sequence[frozenset[str]]) -> float:
    hits = []
    for q, g in zip(questions, gold):
        if g:
            got = {pid for h in rag.multi_hop_search(q).hops for pid in h.retrieved_ids}
            hits.append(g <= got)
    return float(np.mean(hits))


def fit(limit: int | None) -> dict:
    """The payload of ``hop_policy.json``: chosen schedules, grid scores, provenance."""
    sets = []
    for name in sorted(DATASETS):
        pool = build_open_pool(load_rows(name, limit)[0::2])
        sets.append((name, BM25Retriever(pool.passages), pool))
    loops = {name: product_loop(r) for name, r, _ in sets}  # one title index per set, shared by every trial
    schedules, scores = {}, {}
    for budget, grid in GRIDS.items():
        best = None
        for values in itertools.product(*grid.values()):
            schedule = HopSchedule(**dict(zip(grid, values)), **FIXED)
            params = HopPolicyParams(((budget, schedule),), {})
            per_set = {name: _all_gold(dataclasses.replace(loops[name], max_passages=budget, hop_policy=params), pool.questions, pool.gold)
                       for name, r, pool in sets}
            mean = float(np.mean(list(per_set.values())))
            scores.setdefault(str(budget), []).append({**dict(zip(grid, values)), **per_set, "mean": round(mean, 4)})
            print(budget, values, {k: round(v, 3) for k, v in per_set.items()}, round(mean, 4), file=sys.stderr)
            if best is None or mean > best[0]:
                best = (mean, schedule)
        schedules[str(budget)] = {f: getattr(best[1], f) for f in HopSchedule.__slots__}
    return {
        "provenance": {
            "data": [f"evals/data/{DATASETS[n]}" for n in sorted(DATASETS)],
            "rows": "even-indexed rows (0, 2, 4, ...)" + (f" of the first {limit}" if limit else ""),
            "objective": "mean over the three sets of the share of questions with all gold paragraphs in the trajectory",
            "retriever": "BM25 (bm25s), open pool of the even rows' paragraphs per set",
            "date": datetime.date.today().isoformat(),
            "command": "python -m evals.fit_hop_policy" + (f" --limit {limit}" if limit else ""),
        },
        "schedules": schedules,
        "grid_scores": scores,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=POLICY_FILE)
    ap.add_argument("--limit", type=int, help="first N rows of each file only (before taking the even half)")
    args = ap.parse_args(argv)
    payload = fit(args.limit)
    HopPolicyParams.from_mapping(payload)  # what is written must load
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {payload['schedules']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
