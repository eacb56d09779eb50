"""The product path's synth context: what each compaction strategy keeps of the loop's facts.

For every question the shipped ``MultiHopRAG`` loop runs over the open pool (every
paragraph of the question set) with compaction off, then once per strategy and budget with
compaction on, exactly as ``rootweaver ask`` runs it. Per setting: answer-in-context (AiC)
of the synth context over non-yes/no questions, gold-paragraph coverage and all-gold of the
kept facts, synth size in chars and reader tokens, and for the packing strategies the
packing harness's AiC on the same facts (``pack`` over
:func:`~rootweaver_innovations.compaction.packing.candidates.fact_candidates`), which must match the
product path (no loss at the seam). Paired bootstrap CIs of AiC and all-gold against
``off`` and against ``line`` at the same budget, and against the seed's coverage-rule loop
(:data:`evals.multihop_e2e.SEED_LOOP`) under the same strategy and budget: does the loop put
more answers into the reader's context than before? Budgets are token budgets (Qwen2.5)
plus ``half`` (half the off context's median token count) and any char budgets asked for.
Gold labels only score; they never reach the loop or a compactor.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from evals.qa_rows import QARow
from evals.diagnostics import answer_in_context, gold_doc_coverage, paired_bootstrap_ci
from rootweaver_innovations.loop.multihop import MultiHopResult
from rootweaver_innovations.compaction.packing import POLICIES, Budget, default_token_counter, fact_candidates, pack
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.compaction.strategies import strategy_names

from .datasets import build_open_pool, is_yes_no
from .loops import compacted, product_loop
from .layouts import LaidOutPool, lay_out
from .multihop_e2e import SEED_LOOP
from .report import progress

__all__ = ["SYNTH_TOKEN_BUDGETS", "run_synth_eval"]

SYNTH_TOKEN_BUDGETS = (160, "half")


def _scores(rows: Sequence[QARow], laid: LaidOutPool, results: Sequence[MultiHopResult], texts: Sequence[str],
            kept_ids: Sequence[set[str]]) -> dict[str, list[float]]:
    """AiC per non-yes/no row; gold-paragraph coverage and all-gold of the kept facts' paragraphs
    (a paragraph counts when a fact of any of its windows is kept) per row with gold."""
    aic = [float(answer_in_context(r.answer, t)) for r, t in zip(rows, texts) if not is_yes_no(r)]
    cov, allg = [], []
    for gold, kept in zip(laid.gold, kept_ids):
        if gold:
            kept = laid.paragraphs(kept)
            cov.append(gold_doc_coverage(kept, gold))
            allg.append(float(gold <= kept))
    return {"aic": aic, "coverage": cov, "all_gold": allg}


def run_synth_eval(
    rows: Sequence[QARow],
    *,
    strategies: Sequence[str] | None = None,
    token_budgets: Sequence[int | str] = SYNTH_TOKEN_BUDGETS,
    char_budgets: Sequence[int] = (),
    max_passages: int = 10,
    stop_rule: str = "evidence",
    layout: str = "paragraphs",
    n_resamples: int = 10_000,
    seed: int = 0,
    show_progress: bool = True,
) -> dict:
    """Run the product path for ``rows`` (see the module docstring); a JSON-ready report.

    ``strategies`` default to every registered one; ``token_budgets`` are ints or ``"half"``;
    ``max_passages``, ``stop_rule`` and ``layout`` set up the loop as ``run_multihop_eval`` does.
    """
    strategies = list(strategies or strategy_names())
    pool = build_open_pool(rows)
    laid = lay_out(rows, pool, layout)
    retriever = BM25Retriever(laid.passages)
    counter = default_token_counter()
    off_rag = product_loop(retriever, max_passages=max_passages, stop_rule=stop_rule)
    offs = [off_rag.multi_hop_search(r.question) for r in progress(rows, "loop(off)", show_progress)]
    seed_rag = dataclasses.replace(off_rag, **SEED_LOOP)  # run once; compacted below as the product would
    seeds = [seed_rag.multi_hop_search(r.question) for r in progress(rows, "seed loop(off)", show_progress)]
    off_tokens = [counter.count(r.full_context) for r in offs]
    half = max(1, int(statistics.median(off_tokens) // 2))
    budgets: list[Budget] = [Budget(half if b == "half" else int(b), "tokens") for b in token_budgets]
    budgets += [Budget(int(b), "chars") for b in char_budgets]

    cells: dict[str, dict] = {}
    off_scores = _scores(rows, laid, offs, [r.synth_context for r in offs],
                         [{f.passage_id for f in r.facts} for r in offs])
    cells["off"] = {"strategy": "off", "unit": None, "limit": None, "scores": off_scores,
                    "tokens": off_tokens, "chars": [r.context_chars for r in offs]}
    identical = True
    seam_gap = 0.0
    for strategy in strategies:
        for budget in budgets:
            rag = compacted(off_rag, strategy, budget)
            label = f"{strategy}@{budget.limit}{'t' if budget.unit == 'tokens' else 'c'}"
            results = [rag.multi_hop_search(r.question) for r in progress(rows, label, show_progress)]
            identical &= all(a.trajectory() == b.trajectory() for a, b in zip(results, offs))
            kept = [{f.passage_id for f in res.compaction.kept_facts} for res in results]
            scores = _scores(rows, laid, results, [res.synth_context for res in results], kept)
            seed_texts = [rag.compactor(s.compaction_request(budget)).text for s in seeds]
            cell = {"strategy": strategy, "unit": budget.unit, "limit": budget.limit, "scores": scores,
                    "seed_aic": [float(answer_in_context(r.answer, t)) for r, t in zip(rows, seed_texts)
                                 if not is_yes_no(r)],
                    "tokens": [counter.count(res.synth_context) for res in results],
                    "chars": [res.context_chars for res in results]}
            if strategy in POLICIES:  # the harness: the same policy on the same facts
                texts = [pack(strategy, fact_candidates(r.question, res.facts), r.question, budget).text
                         if res.facts else "" for r, res in zip(rows, results)]
                harness = [float(answer_in_context(r.answer, t)) for r, t in zip(rows, texts) if not is_yes_no(r)]
                cell["harness_aic"] = harness
                seam_gap = max(seam_gap, abs(float(np.mean(harness)) - float(np.mean(scores["aic"]))))
            cells[label] = cell

    def ci(a: list[float], b: list[float]) -> dict:
        return asdict(paired_bootstrap_ci(a, b, n_resamples=n_resamples, seed=seed))

    table = []
    for label, cell in cells.items():
        s = cell["scores"]
        row = {"setting": label, "strategy": cell["strategy"], "unit": cell["unit"], "limit": cell["limit"],
               "aic": float(np.mean(s["aic"])), "coverage": float(np.mean(s["coverage"])),
               "all_gold": float(np.mean(s["all_gold"])), "median_tokens": statistics.median(cell["tokens"]),
               "mean_tokens": float(np.mean(cell["tokens"])), "max_tokens": max(cell["tokens"]),
               "median_chars": statistics.median(cell["chars"]), "max_chars": max(cell["chars"])}
        if "harness_aic" in cell:
            row["harness_aic"] = float(np.mean(cell["harness_aic"]))
        if label != "off":
            row["ci_vs_off"] = {m: ci(s[m], off_scores[m]) for m in ("aic", "all_gold")}
            row["seed_loop_aic"] = float(np.mean(cell["seed_aic"]))
            row["aic_ci_vs_seed_loop"] = ci(s["aic"], cell["seed_aic"])
            suffix = f"@{cell['limit']}{'t' if cell['unit'] == 'tokens' else 'c'}"
            row["ci_vs"] = {other: {m: ci(s[m], cells[other + suffix]["scores"][m]) for m in ("aic", "all_gold")}
                            for other in strategies if other != cell["strategy"] and other + suffix in cells}
        table.append(row)
    return {
        "n_questions": len(rows),
        "loop": {"max_passages": max_passages, "stop_rule": stop_rule, "layout": layout},
        "n_answer_in_context": sum(not is_yes_no(r) for r in rows),
        "pool_passages": len(laid.passages),
        "mean_passages_loop": float(np.mean([sum(len(h.retrieved_ids) for h in r.hops) for r in offs])),
        "half_off_median_tokens": half,
        "trajectories_identical_across_settings": identical,
        "max_harness_gap": seam_gap,
        "seed": seed,
        "n_resamples": n_resamples,
        "table": table,
    }
