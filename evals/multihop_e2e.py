"""MultiHopRAG end to end on an open pool: what the loop finds.

The share of questions whose gold paragraphs are all in the loop's
trajectory, beside the seed's coverage-rule loop, single-shot BM25 given the same number
of passages as the loop (per question, so the mean matches the loop's), top-5, top-10
and a naive two-hop (top-5 for the question, then top-5 new for the question plus the
first hop's titles); each baseline with the paired-bootstrap CI of loop minus baseline.
``layout`` lays the pool out as titled paragraphs, paragraphs with opaque titles or untitled
40-word windows, and says what finding the gold means in each (:mod:`evals.layouts`). What
survives into the synth context is :mod:`evals.synth_eval`'s part of the same report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from evals.qa_rows import QARow
from evals.diagnostics import paired_bootstrap_ci
from rootweaver_innovations.loop.multihop import MultiHopResult
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

from .datasets import build_open_pool
from .layouts import lay_out
from .loops import product_loop
from .report import progress

__all__ = ["BASELINES", "SEED_LOOP", "run_multihop_eval"]

BASELINES = ("coverage_loop", "single_same_n", "single_5", "single_10", "two_hop_5_5")
SEED_LOOP = {"stop_rule": "coverage", "max_hops": 5, "max_passages": 15}  # the seed's loop, unchanged


def _ids(res: MultiHopResult) -> list[str]:
    return [pid for h in res.hops for pid in h.retrieved_ids]


def run_multihop_eval(
    rows: Sequence[QARow],
    *,
    max_passages: int = 10,
    stop_rule: str = "evidence",
    layout: str = "paragraphs",
    n_resamples: int = 10_000,
    seed: int = 0,
    show_progress: bool = True,
) -> dict:
    """Run the loop for every row over the pooled paragraphs of all ``rows``, laid out as
    ``layout``; a JSON-ready report."""
    pool = build_open_pool(rows)
    laid = lay_out(rows, pool, layout)
    passages = laid.passages
    retriever = BM25Retriever(passages)
    off_rag = product_loop(retriever, max_passages=max_passages, stop_rule=stop_rule)
    seed_rag = dataclasses.replace(off_rag, **SEED_LOOP)
    scored = [i for i, g in enumerate(pool.gold) if g]
    hit: dict[str, list[float]] = {k: [] for k in ("loop", *BASELINES)}
    n_passages, offs, seed_offs = [], [], []
    for i, row in enumerate(progress(rows, "loop(off)", show_progress)):
        gold = pool.gold[i]
        res, old = off_rag.multi_hop_search(row.question), seed_rag.multi_hop_search(row.question)
        offs.append(res)
        seed_offs.append(old)
        got = _ids(res)
        n_passages.append(len(got))
        single = [h.passage for h in retriever.search(row.question, max(10, len(got)))]
        ids = [p.id for p in single]
        hop2 = " ".join([row.question, *(p.title for p in single[:5])])
        second = [h.passage.id for h in retriever.search(hop2, 15) if h.passage.id not in ids[:5]][:5]
        if not gold:  # counted below as rows without a gold paragraph, not scored on retrieval
            continue
        for name, found in (("loop", got), ("coverage_loop", _ids(old)), ("single_same_n", ids[: len(got)]),
                            ("single_5", ids[:5]), ("single_10", ids[:10]), ("two_hop_5_5", ids[:5] + second)):
            hit[name].append(laid.found(i, found))
    cis = {b: asdict(paired_bootstrap_ci(hit["loop"], hit[b], n_resamples=n_resamples, seed=seed)) for b in BASELINES}
    hops = [r.hop_count for r in offs]
    stops = [r.stop_reason for r in offs]
    return {
        "n_questions": len(rows),
        "n_scored": len(scored),
        "pool_passages": len(passages),
        "layout": layout,
        "loop": {"max_passages": max_passages, "stop_rule": stop_rule},
        "coverage_loop": SEED_LOOP,
        "mean_passages_loop": float(np.mean(n_passages)),
        "mean_passages_coverage_loop": float(np.mean([len(_ids(r)) for r in seed_offs])),
        "n_without_gold": len(rows) - len(scored),
        "all_gold": {k: float(np.mean(v)) for k, v in hit.items()},
        "ci_loop_minus": cis,
        "hop_count_distribution": {str(h): hops.count(h) for h in sorted(set(hops))},
        "stop_reasons": {s: stops.count(s) for s in sorted(set(stops))},
    }
