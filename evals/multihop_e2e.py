"""MultiHopRAG end to end on an open pool: what the loop finds and what survives compaction.

Retrieval side: the share of questions whose gold paragraphs are all in the loop's
trajectory, beside single-shot BM25 given the same number of passages, top-5, top-10 and
a naive two-hop (top-5 for the question, then top-5 new for the question plus the first
hop's titles). Context side, per strategy (off, line, submodular) and char budget:
answer-in-context of the synth context, gold-paragraph coverage, synth size; the hop
counts must be identical across settings.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from rootweaver_innovations.corpus import QARow
from rootweaver_innovations.diagnostics import answer_in_context, gold_doc_coverage
from rootweaver_innovations.multihop import MultiHopRAG
from rootweaver_innovations.packing import Budget
from rootweaver_innovations.retrieval import BM25Retriever
from rootweaver_innovations.strategies import make_compactor

from .datasets import build_open_pool
from .report import progress

__all__ = ["E2E_BUDGETS", "run_multihop_eval"]

E2E_BUDGETS = (500, 1000, 2000)


def run_multihop_eval(
    rows: Sequence[QARow],
    *,
    budgets: Sequence[int] = E2E_BUDGETS,
    strategies: Sequence[str] = ("line", "submodular"),
    passages_per_hop: int = 3,
    show_progress: bool = True,
) -> dict:
    """Run the loop for every row over the pooled paragraphs of all ``rows``."""
    pool = build_open_pool(rows)
    retriever = BM25Retriever(pool.passages)
    off_rag = MultiHopRAG(retriever, passages_per_hop=passages_per_hop)
    n = len(rows)
    found = {"loop": 0, "single_same_n": 0, "single_5": 0, "single_10": 0, "two_hop_5_5": 0}
    n_passages, offs = [], []
    for i, row in enumerate(progress(rows, "loop(off)", show_progress)):
        gold = pool.gold[i]
        res = off_rag.multi_hop_search(row.question)
        offs.append(res)
        got = [pid for h in res.hops for pid in h.retrieved_ids]
        n_passages.append(len(got))
        single = [h.passage for h in retriever.search(row.question, max(10, len(got)))]
        ids = [p.id for p in single]
        hop2 = " ".join([row.question, *(p.title for p in single[:5])])
        second = [h.passage.id for h in retriever.search(hop2, 15) if h.passage.id not in ids[:5]][:5]
        if not gold:  # counted below as rows without a gold paragraph, not scored on retrieval
            continue
        found["loop"] += gold <= set(got)
        found["single_same_n"] += gold <= set(ids[: len(got)])
        found["single_5"] += gold <= set(ids[:5])
        found["single_10"] += gold <= set(ids[:10])
        found["two_hop_5_5"] += gold <= set(ids[:5] + second)
    answerable = [r.answer.strip().lower() not in ("yes", "no") for r in rows]

    def context_row(label: str, budget: int | None, results) -> dict:
        aic = [answer_in_context(r.answer, res.synth_context) for r, res, a in zip(rows, results, answerable) if a]
        cov = []
        for i, res in enumerate(results):
            kept = {f.passage_id for f in res.facts if f.line in set(res.synth_context.split("\n"))}
            cov.append(gold_doc_coverage(kept, pool.gold[i]) if pool.gold[i] else 0.0)
        sizes = [res.context_chars for res in results]
        return {"strategy": label, "budget": budget, "answer_in_context": float(np.mean(aic)),
                "gold_coverage": float(np.mean(cov)), "median_chars": statistics.median(sizes),
                "mean_chars": float(np.mean(sizes)), "max_chars_seen": max(sizes)}

    table = [context_row("off", None, offs)]
    hops_identical = True
    for strategy in strategies:
        compactor = make_compactor(strategy)
        for budget in budgets:
            rag = MultiHopRAG(retriever, passages_per_hop=passages_per_hop, compaction_enabled=True,
                              compaction_budget=Budget.chars(budget), compactor=compactor)
            results = [rag.multi_hop_search(r.question) for r in progress(rows, f"{strategy}@{budget}", show_progress)]
            hops_identical &= all(a.trajectory() == b.trajectory() for a, b in zip(results, offs))
            table.append(context_row(strategy, budget, results))
    hops = [r.hop_count for r in offs]
    return {
        "n_questions": n,
        "pool_passages": len(pool.passages),
        "passages_per_hop": passages_per_hop,
        "mean_passages_loop": float(np.mean(n_passages)),
        "n_without_gold": sum(not g for g in pool.gold),
        "all_gold": {k: v / max(1, n - sum(not g for g in pool.gold)) for k, v in found.items()},
        "hop_count_distribution": {str(h): hops.count(h) for h in sorted(set(hops))},
        "trajectories_identical_across_settings": hops_identical,
        "n_answer_in_context": int(sum(answerable)),
        "context": table,
    }
