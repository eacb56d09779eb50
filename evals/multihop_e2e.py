"""MultiHopRAG end to end on an open pool: what the loop finds and what survives compaction.

Retrieval side: the share of questions whose gold paragraphs are all in the loop's
trajectory, beside the seed's coverage-rule loop, single-shot BM25 given the same number
of passages as the loop (per question, so the mean matches the loop's), top-5, top-10
and a naive two-hop (top-5 for the question, then top-5 new for the question plus the
first hop's titles); each baseline with the paired-bootstrap CI of loop minus baseline.
With ``opaque_titles`` every passage title is replaced by an opaque id first (no title
links can be found). Context side, per strategy (off, line, submodular) and char budget:
answer-in-context of the synth context for the loop and for the coverage-rule loop (with
the paired CI), gold-paragraph coverage, synth size; the trajectories must be identical
across settings.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from rootweaver_innovations.corpus import Passage, QARow
from rootweaver_innovations.diagnostics import answer_in_context, gold_doc_coverage, paired_bootstrap_ci
from rootweaver_innovations.multihop import MultiHopRAG, MultiHopResult
from rootweaver_innovations.retrieval import BM25Retriever
from rootweaver_innovations.strategies import make_compactor

from .datasets import build_open_pool
from .report import progress

__all__ = ["BASELINES", "E2E_BUDGETS", "opaque", "run_multihop_eval"]

E2E_BUDGETS = (500, 1000, 2000)
BASELINES = ("coverage_loop", "single_same_n", "single_5", "single_10", "two_hop_5_5")
SEED_LOOP = {"stop_rule": "coverage", "max_hops": 5, "max_passages": 15}  # the seed's loop, unchanged


def opaque(passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The same passages with every title replaced by an opaque id (``doc-<id>``)."""
    return tuple(Passage(p.id, f"doc-{p.id}", p.sentences) for p in passages)


def _ids(res: MultiHopResult) -> list[str]:
    return [pid for h in res.hops for pid in h.retrieved_ids]


def run_multihop_eval(
    rows: Sequence[QARow],
    *,
    budgets: Sequence[int] = E2E_BUDGETS,
    strategies: Sequence[str] = ("line", "submodular"),
    max_passages: int = 10,
    stop_rule: str = "evidence",
    opaque_titles: bool = False,
    n_resamples: int = 10_000,
    seed: int = 0,
    show_progress: bool = True,
) -> dict:
    """Run the loop for every row over the pooled paragraphs of all ``rows``."""
    pool = build_open_pool(rows)
    passages = opaque(pool.passages) if opaque_titles else pool.passages
    retriever = BM25Retriever(passages)
    loop = {"max_passages": max_passages, "stop_rule": stop_rule}
    off_rag = MultiHopRAG(retriever, **loop)
    seed_rag = MultiHopRAG(retriever, **SEED_LOOP)
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
            hit[name].append(float(gold <= set(found)))
    cis = {b: asdict(paired_bootstrap_ci(hit["loop"], hit[b], n_resamples=n_resamples, seed=seed)) for b in BASELINES}
    answerable = [r.answer.strip().lower() not in ("yes", "no") for r in rows]

    def aic(results: Sequence[MultiHopResult]) -> list[float]:
        return [float(answer_in_context(r.answer, res.synth_context)) for r, res, a in zip(rows, results, answerable) if a]

    def context_row(label: str, budget: int | None, results, seed_results) -> dict:
        cov = []
        for i, res in enumerate(results):
            kept_lines = set(res.synth_context.split("\n"))
            kept = {f.passage_id for f in res.facts if f.line in kept_lines}
            cov.append(gold_doc_coverage(kept, pool.gold[i]) if pool.gold[i] else 0.0)
        sizes = [res.context_chars for res in results]
        new, old = aic(results), aic(seed_results)
        ci = paired_bootstrap_ci(new, old, n_resamples=n_resamples, seed=seed)
        return {"strategy": label, "budget": budget, "answer_in_context": float(np.mean(new)),
                "answer_in_context_coverage_loop": float(np.mean(old)), "aic_ci_vs_coverage_loop": asdict(ci),
                "gold_coverage": float(np.mean(cov)), "median_chars": statistics.median(sizes),
                "mean_chars": float(np.mean(sizes)), "max_chars_seen": max(sizes)}

    table = [context_row("off", None, offs, seed_offs)]
    hops_identical = True
    for strategy in strategies:
        compactor = make_compactor(strategy)
        for budget in budgets:
            on = dict(compaction_enabled=True, compaction_max_chars=budget, compactor=compactor)
            rag, seed_on = MultiHopRAG(retriever, **loop, **on), MultiHopRAG(retriever, **SEED_LOOP, **on)
            results, seed_results = [], []
            for r in progress(rows, f"{strategy}@{budget}", show_progress):
                results.append(rag.multi_hop_search(r.question))
                seed_results.append(seed_on.multi_hop_search(r.question))
            hops_identical &= all(a.trajectory() == b.trajectory() and a.stop_reason == b.stop_reason
                                  for a, b in zip(results + seed_results, offs + seed_offs))
            table.append(context_row(strategy, budget, results, seed_results))
    hops = [r.hop_count for r in offs]
    stops = [r.stop_reason for r in offs]
    return {
        "n_questions": len(rows),
        "n_scored": len(scored),
        "pool_passages": len(passages),
        "opaque_titles": opaque_titles,
        "loop": loop,
        "coverage_loop": SEED_LOOP,
        "mean_passages_loop": float(np.mean(n_passages)),
        "mean_passages_coverage_loop": float(np.mean([len(_ids(r)) for r in seed_offs])),
        "n_without_gold": len(rows) - len(scored),
        "all_gold": {k: float(np.mean(v)) for k, v in hit.items()},
        "ci_loop_minus": cis,
        "hop_count_distribution": {str(h): hops.count(h) for h in sorted(set(hops))},
        "stop_reasons": {s: stops.count(s) for s in sorted(set(stops))},
        "trajectories_identical_across_settings": hops_identical,
        "n_answer_in_context": int(sum(answerable)),
        "context": table,
    }
