"""What each answer rule does to the answers: the product path with the rule and without it.

For every row, the loop the product runs (:func:`~rootweaver_capabilities.assembly.build_rag` of
the default config over the set's open pool, titles kept or opaque) answers once with no answer
rules and once per registered rule alone; the reader is the configured one (``none`` by
default: the extractive answer). Reported per rule: how often it fires (settles a question),
EM and F1 with and without it over all rows, the paired difference with a bootstrap CI, and the
same on the rows where it fired. Gold labels are used only to score.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rootweaver_capabilities.assembly import build_rag
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_innovations.answer_rules.registry import answer_rule_names, make_answer_rules
from evals.qa_rows import QARow
from evals.diagnostics import exact_match, f1_score, paired_bootstrap_ci
from rootweaver_innovations.documents.folders import load_documents
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

from .datasets import build_open_pool
from .documents_folder import write_layout
from .layouts import opaque
from .report import progress

__all__ = ["answer_rules_markdown", "run_answer_rules_eval"]


def run_answer_rules_eval(
    rows: Sequence[QARow], *, config: MultiHopConfig | None = None, opaque_titles: bool = False,
    layout: str = "paragraphs", n_resamples: int = 10_000, seed: int = 0, show_progress: bool = True,
) -> dict:
    """A JSON-ready report of every registered rule's effect on ``rows`` (see the module docstring).

    ``layout`` ``"paragraphs"`` searches the pool's paragraphs (titles kept, or opaque with
    ``opaque_titles``); ``"txt"`` writes each paragraph as an untitled text file and reads
    the folder as the product does (:func:`~rootweaver_innovations.documents.folders.load_documents`,
    128-token chunks, the reading budget in chunks).
    """
    pool = build_open_pool(rows)
    if layout == "txt":
        with tempfile.TemporaryDirectory() as tmp:
            folder, _ = write_layout("txt", pool.passages, Path(tmp))
            passages = load_documents(folder).passages
    elif layout == "paragraphs":
        passages = opaque(pool.passages) if opaque_titles else pool.passages
    else:
        raise ValueError(f"unknown layout {layout!r}; choose paragraphs or txt")
    retriever = BM25Retriever(passages)
    base = config or MultiHopConfig(source="eval")
    none = build_rag(dataclasses.replace(base, answer_rules=()), retriever=retriever)
    without = [none.multi_hop_search(r.question).answer for r in progress(rows, "no rules", show_progress)]
    report: dict = {"n_questions": len(rows), "opaque_titles": opaque_titles, "layout": layout,
                    "reader": base.llm.provider, "rules": {}}
    for name in answer_rule_names():
        rag = dataclasses.replace(none, answer_rules=make_answer_rules((name,)))
        with_rule = [rag.multi_hop_search(r.question).answer for r in progress(rows, name, show_progress)]
        fired = [i for i, a in enumerate(with_rule) if a.method != without[i].method or a.text != without[i].text]
        cell: dict = {"fired": len(fired)}
        for metric, score in (("em", exact_match), ("f1", f1_score)):
            on = [score(a.text, r.answer) for a, r in zip(with_rule, rows)]
            off = [score(a.text, r.answer) for a, r in zip(without, rows)]
            ci = paired_bootstrap_ci(on, off, n_resamples=n_resamples, seed=seed)
            cell[metric] = {"with": sum(on) / len(on), "without": sum(off) / len(off), "diff": ci.mean_diff,
                            "ci": [ci.low, ci.high]}
            if fired:
                cell[metric]["fired_with"] = sum(on[i] for i in fired) / len(fired)
                cell[metric]["fired_without"] = sum(off[i] for i in fired) / len(fired)
        report["rules"][name] = cell
    return report


def answer_rules_markdown(rep: dict, title: str) -> str:
    """The report as a Markdown table, one row per rule."""
    lines = [f"# Answer rules: {title}", "",
             (f"{rep['n_questions']} questions, reader `{rep['reader']}`, layout `{rep.get('layout', 'paragraphs')}`, "
              f"opaque titles: {rep['opaque_titles']}."), "",
             "| rule | fired | EM with / without | F1 with / without | F1 diff [95% CI] | F1 where fired, with / without |",
             "|---|---|---|---|---|---|"]
    for name, c in rep["rules"].items():
        em, f1 = c["em"], c["f1"]
        where = f"{f1['fired_with']:.3f} / {f1['fired_without']:.3f}" if c["fired"] else "-"
        lines.append(f"| `{name}` | {c['fired']} | {em['with']:.3f} / {em['without']:.3f} | {f1['with']:.3f} / "
                     f"{f1['without']:.3f} | {f1['diff']:+.3f} [{f1['ci'][0]:+.3f}, {f1['ci'][1]:+.3f}] | {where} |")
    return "\n".join(lines) + "\n"
