"""Trajectory equivalence on golden questions: compaction on vs off, per strategy and budget.

Checks, each pass/fail:
- NO-BEHAVIOUR-CHANGE: sub-queries, retrieved ids, hop count and stop reason with
  compaction on equal the run with it off, for every question, strategy and budget;
- BUDGET: every synth context is within its budget;
- GOLDEN: the off trajectories equal the pinned expectations file (bundled data only);
- WIN: the median synth-context size cut against off, per strategy and budget (reported;
  it fails only if compaction ever made a context larger).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.documents.demo import GoldenQuestion
from rootweaver_innovations.loop.multihop import MultiHopResult
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.strategies import strategy_names

from .loops import compacted, product_loop
from .report import progress

__all__ = ["DEFAULT_BUDGETS", "GOLDEN_FILE", "expectations", "run_trajectory_eval"]

DEFAULT_BUDGETS = (500, 1000, 2000, 4000)
GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "trajectories.json"
GOLDEN_HEADER = (
    "Pinned off-trajectories of the bundled golden questions over the bundled demo corpus "
    "(BM25 bm25s backend, MultiHopRAG defaults: evidence hop policy, max 10 passages, max 10 hops). "
    "Regenerate after an intended behaviour change with: rootweaver eval trajectory --regenerate. "
    "The seed's coverage rule is pinned separately in trajectories_coverage.json (tests/loop/test_multihop.py)."
)


def _traj(res: MultiHopResult) -> dict:
    return {
        "sub_queries": [h.sub_query for h in res.hops],
        "retrieved_ids": [list(h.retrieved_ids) for h in res.hops],
        "reasons": [h.reason for h in res.hops],
        "hop_count": res.hop_count,
        "stop_reason": res.stop_reason,
    }


def expectations(questions: Sequence[GoldenQuestion], off: Sequence[MultiHopResult]) -> dict:
    """The golden-file payload for ``off`` runs (header + one trajectory per question id)."""
    return {"_header": GOLDEN_HEADER, "questions": {q.id: _traj(r) for q, r in zip(questions, off)}}


def run_trajectory_eval(
    questions: Sequence[GoldenQuestion],
    passages: Sequence[Passage],
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    strategies: Sequence[str] | None = None,
    golden: dict | None = None,
    show_progress: bool = True,
) -> dict:
    """Run every question off, then on for each strategy x budget; return the report.

    ``golden`` (a payload from :func:`expectations`) adds the GOLDEN check. The report's
    ``passed`` is the conjunction of all checks. ``budgets`` are in chars; ``strategies``
    default to every registered one.
    """
    strategies = list(strategies or strategy_names())
    retriever = BM25Retriever(passages)
    off_rag = product_loop(retriever)
    off = [off_rag.multi_hop_search(q.question) for q in progress(questions, "off", show_progress)]
    off_sizes = [r.context_chars for r in off]
    rows = []
    failures: list[str] = []
    for strategy in strategies:
        for budget in budgets:
            rag = compacted(off_rag, strategy, Budget.chars(budget))
            same = within = 0
            sizes = []
            for q, ref in zip(questions, progress(off, f"{strategy}@{budget}", show_progress)):
                on = rag.multi_hop_search(q.question)
                ok_traj = _traj(on) == _traj(ref) and on.sub_queries == ref.sub_queries
                ok_budget = on.context_chars <= budget
                same += ok_traj
                within += ok_budget
                sizes.append(on.context_chars)
                if not ok_traj:
                    failures.append(f"NO-BEHAVIOUR-CHANGE {strategy}@{budget}: {q.id}")
                if not ok_budget:
                    failures.append(f"BUDGET {strategy}@{budget}: {q.id} has {on.context_chars} chars")
            med_on, med_off = statistics.median(sizes), statistics.median(off_sizes)
            cut = 100.0 * (1 - med_on / med_off) if med_off else 0.0
            if any(s > o for s, o in zip(sizes, off_sizes)):
                failures.append(f"WIN {strategy}@{budget}: a synth context grew")
            rows.append({
                "strategy": strategy, "budget": budget, "n": len(questions),
                "no_behaviour_change": same, "within_budget": within,
                "median_chars_off": med_off, "median_chars_on": med_on, "median_cut_pct": round(cut, 1),
                "sizes_on": sizes,
            })
    golden_ok = None
    if golden is not None:
        pinned = golden.get("questions", {})
        mismatched = [q.id for q, r in zip(questions, off) if pinned.get(q.id) != _traj(r)]
        golden_ok = not mismatched
        failures += [f"GOLDEN: {qid} differs from the pinned trajectory" for qid in mismatched]
    hops = [r.hop_count for r in off]
    return {
        "n_questions": len(questions),
        "budgets": list(budgets),
        "strategies": list(strategies),
        "hop_count_distribution": {str(h): hops.count(h) for h in sorted(set(hops))},
        "median_full_context_chars": statistics.median(off_sizes),
        "sizes_off": off_sizes,
        "rows": rows,
        "golden_checked": golden is not None,
        "golden_ok": golden_ok,
        "failures": failures,
        "passed": not failures,
        "expectations": expectations(questions, off),
    }
