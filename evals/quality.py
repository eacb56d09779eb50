"""The quality gate: answer quality with compaction off vs on, through a real reader.

For each question (a :class:`~rootweaver_innovations.corpus.QARow`, retrieval over the row's
own paragraphs with BM25) the multi-hop loop runs once per configuration: ``off`` and each
strategy at one character budget. The trajectory must be identical across configurations
(counted in ``trajectory_mismatches``). Each synth context is answered ``runs`` times at
``temperature > 0`` with seeds ``base_seed + r`` (the same seed for every configuration of
run ``r``, so runs are paired); runs of one prompt are consecutive so the server's prompt
cache is reused. Scores: EM/F1 (HotpotQA official), optionally an LLM-judge score through
a second client, and the answer-in-context of each synth context.

Gate, per strategy and metric: ``delta`` = mean over questions of (on - off), each
question's score averaged over its runs, with a paired bootstrap CI. The **noise band** is
the run-to-run spread measured here: the largest ``|mean(run r) - mean(run r')|`` of any
configuration, i.e. how far a score moves when nothing but the sampling seed changes.
``PASS`` when ``|delta| <= band`` on the primary metric (judge when a judge is configured,
else F1); the ADR's fixed bar (0.07) is reported beside it. Rows are never dropped: a
prompt that does not fit the reader scores 0 and is counted; an answer that fell back to
the extractive path (server unavailable) makes the verdict ``INVALID``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from rootweaver_capabilities.llm import ChatClient, LLMSynthesizer, PromptTooLongError
from rootweaver_capabilities.prompts import (
    MODE_EVIDENCE,
    MODES,
    gold_line_ids,
    judge_messages,
    number_context,
    parse_judge_score,
    score_ebg,
)
from rootweaver_innovations.corpus import QARow
from rootweaver_innovations.diagnostics import (
    answer_in_context,
    exact_match,
    f1_score,
    paired_bootstrap_ci,
)
from rootweaver_innovations.multihop import MultiHopRAG
from rootweaver_innovations.retrieval import BM25Retriever
from rootweaver_innovations.packing import Budget
from rootweaver_innovations.strategies import make_compactor, strategy_names

from .report import write_json, write_text

__all__ = [
    "ADR_BAR",
    "CONFIG_OFF",
    "QualityRow",
    "merge_reports",
    "quality_markdown",
    "run_quality",
    "summarise_rows",
    "synth_contexts",
    "write_quality_report",
]

CONFIG_OFF = "off"
ADR_BAR = 0.07  # ADR-077: quality delta within LLM-judge noise, +/-0.07 at 3-5 runs per config


@dataclass(frozen=True, slots=True)
class QualityRow:
    """One answer: question, configuration, run (and its seed), prediction and scores.

    ``judge`` is ``None`` without a judge or when the judge's reply held no score;
    ``ans``/``evid``/``joint`` (EBG scores, ``None`` outside ``mode="evidence"``): Evid is
    strict, so a gold fact missing from the synth context makes it false. ``error`` is
    empty unless the prompt was refused (the row then scores 0).
    """

    question_id: str
    config: str
    run: int
    seed: int
    prediction: str
    method: str
    em: float
    f1: float
    judge: float | None
    context_chars: int
    answer_in_context: bool
    error: str
    ans: float | None = None
    evid: float | None = None
    joint: float | None = None


def synth_contexts(
    row: QARow, strategies: Sequence[str], budget_chars: int, *, max_hops: int, passages_per_hop: int
) -> tuple[dict[str, str], bool]:
    """``({config: synth_context}, trajectories_identical)`` for ``off`` and each strategy."""
    retriever = BM25Retriever(row.passages, backend="rank_bm25")
    contexts, trajectories = {}, set()
    for name in (CONFIG_OFF, *strategies):
        on = name != CONFIG_OFF
        rag = MultiHopRAG(
            retriever, max_hops=max_hops, passages_per_hop=passages_per_hop, compaction_enabled=on,
            compaction_budget=Budget.chars(budget_chars), **({"compactor": make_compactor(name)} if on else {}),
        )
        result = rag.multi_hop_search(row.question)
        contexts[name] = result.synth_context
        trajectories.add(result.trajectory())
    return contexts, len(trajectories) == 1


def _gold_facts(row: QARow) -> frozenset[tuple[str, str]]:
    by_title = {p.title: p for p in row.passages}
    return frozenset(
        (t, by_title[t].sentences[i]) for t, i in row.gold_sentences
        if t in by_title and 0 <= i < len(by_title[t].sentences)
    )


def _ebg(row: QARow, context: str, prediction: str, cited: Sequence[str]) -> dict[str, float]:
    gold = _gold_facts(row)
    numbered = number_context(context)
    gold_ids = gold_line_ids(numbered, gold)
    cited_set = set(cited)
    cited_ids = {i for i, line in enumerate(numbered.lines, start=1) if line in cited_set}
    complete = bool(gold) and len(gold_ids) >= len(gold)  # every gold fact has a line to cite
    s = score_ebg(prediction, [row.answer], cited_ids, gold_ids if complete else ())
    return {"ans": float(s.ans), "evid": float(s.evid), "joint": float(s.joint)}


def _judge(client: ChatClient, question: str, gold: str, prediction: str) -> float | None:
    reply = client.chat(judge_messages(question, gold, prediction), temperature=0.0, max_tokens=16, seed=0)
    return parse_judge_score(reply.text)


def run_quality(
    rows: Sequence[QARow],
    client: ChatClient,
    *,
    strategies: Sequence[str] = ("line", "submodular", "evidence"),
    budget_chars: int = 2000,
    runs: int = 3,
    temperature: float = 0.7,
    base_seed: int = 0,
    mode: str = "answer",
    judge_client: ChatClient | None = None,
    max_hops: int = 5,
    passages_per_hop: int = 2,
    max_tokens: int = 32,
    n_resamples: int = 10_000,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the gate and return the report (see the module docstring; JSON-serialisable).

    Raises ``ValueError`` for no rows, an unknown strategy or mode, ``runs < 2`` (no noise
    band without repeats), ``temperature <= 0`` or ``budget_chars < 1``.
    """
    if not rows:
        raise ValueError("rows must not be empty")
    unknown = [s for s in strategies if s not in strategy_names()]
    if unknown or not strategies:
        raise ValueError(f"strategies must be a non-empty subset of {sorted(strategy_names())}, got {list(strategies)}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    if runs < 2:
        raise ValueError(f"runs must be >= 2 to measure run-to-run noise, got {runs}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 so that runs differ, got {temperature}")
    if budget_chars < 1:
        raise ValueError(f"budget_chars must be >= 1, got {budget_chars}")
    configs = [CONFIG_OFF, *strategies]
    seeds = [base_seed + r for r in range(runs)]
    out_rows: list[QualityRow] = []
    mismatches = 0
    started = time.monotonic()
    for qi, row in enumerate(rows):
        contexts, same = synth_contexts(row, strategies, budget_chars, max_hops=max_hops,
                                        passages_per_hop=passages_per_hop)
        mismatches += not same
        for config in configs:
            context = contexts[config]
            aic = answer_in_context(row.answer, context)
            for r, seed in enumerate(seeds):
                synth = LLMSynthesizer(client, mode=mode, temperature=temperature, seed=seed, max_tokens=max_tokens)
                cited: tuple[str, ...] = ()
                try:
                    answer = synth(row.question, context)
                    pred, method, error, cited = answer.text, answer.method, "", answer.cited_lines
                except PromptTooLongError as exc:
                    pred, method, error = "", "", f"prompt_too_long ({exc.prompt_tokens} tokens)"
                ebg = _ebg(row, context, pred, cited) if mode == MODE_EVIDENCE else {}
                judge = _judge(judge_client, row.question, row.answer, pred) if judge_client and not error else None
                out_rows.append(QualityRow(
                    question_id=row.id, config=config, run=r, seed=seed, prediction=pred, method=method,
                    em=exact_match(pred, row.answer), f1=f1_score(pred, row.answer), judge=judge,
                    context_chars=len(context), answer_in_context=aic, error=error, **ebg,
                ))
        if progress is not None:
            progress(qi + 1, len(rows))
    report = summarise_rows(out_rows, configs, list(strategies), len(rows), runs, judge_client is not None,
                            n_resamples, evidence=mode == MODE_EVIDENCE)
    report["settings"] = {
        "n_questions": len(rows), "runs": runs, "seeds": seeds, "temperature": temperature, "mode": mode,
        "budget_chars": budget_chars, "strategies": list(strategies), "max_hops": max_hops,
        "passages_per_hop": passages_per_hop, "max_tokens": max_tokens, "model": client.model,
        "judge_model": judge_client.model if judge_client else None, "n_resamples": n_resamples,
        "wall_s": round(time.monotonic() - started, 1),
    }
    report["trajectory_mismatches"] = mismatches
    report["rows"] = [asdict(r) for r in out_rows]
    return report


def _matrix(rows: Sequence[QualityRow], config: str, metric: str, qids: list[str], runs: int) -> np.ndarray:
    """``(n_questions, runs)`` scores; an unscored judge reply counts 0."""
    index = {q: i for i, q in enumerate(qids)}
    m = np.zeros((len(qids), runs))
    for row in rows:
        if row.config == config:
            value = getattr(row, metric)
            m[index[row.question_id], row.run] = 0.0 if value is None else value
    return m


def summarise_rows(rows: Sequence[QualityRow], configs: list[str], strategies: list[str], n: int, runs: int,
                   judged: bool, n_resamples: int = 10_000, evidence: bool = False) -> dict[str, Any]:
    """Per-config means (overall and per run), the noise band, and the gate per strategy."""
    qids = list(dict.fromkeys(r.question_id for r in rows))
    metrics = ["em", "f1", *(["judge"] if judged else []), *(["ans", "evid", "joint"] if evidence else [])]
    primary = "judge" if judged else "f1"
    per_config: dict[str, Any] = {}
    noise: dict[str, float] = {m: 0.0 for m in metrics}
    for config in configs:
        mine = [r for r in rows if r.config == config]
        entry: dict[str, Any] = {}
        for metric in metrics:
            mat = _matrix(rows, config, metric, qids, runs)
            run_means = mat.mean(axis=0)
            entry[metric] = float(mat.mean())
            entry[f"{metric}_runs"] = [float(x) for x in run_means]
            spread = max((abs(a - b) for a, b in combinations(run_means, 2)), default=0.0)
            noise[metric] = max(noise[metric], float(spread))
        first_run = [r for r in mine if r.run == 0]
        entry["answer_in_context"] = float(np.mean([r.answer_in_context for r in first_run]))
        entry["mean_context_chars"] = float(np.mean([r.context_chars for r in first_run]))
        entry["prompt_too_long"] = sum(bool(r.error) for r in mine)
        entry["degraded"] = sum(r.method.startswith("extractive") for r in mine)
        entry["malformed"] = sum(r.method.endswith("(malformed reply)") for r in mine)
        entry["judge_unscored"] = sum(r.judge is None for r in mine if not r.error) if judged else None
        per_config[config] = entry
    gates: dict[str, Any] = {}
    invalid = any(per_config[c]["degraded"] for c in configs)
    for strategy in strategies:
        gate: dict[str, Any] = {}
        for metric in metrics:
            on = _matrix(rows, strategy, metric, qids, runs).mean(axis=1)
            off = _matrix(rows, CONFIG_OFF, metric, qids, runs).mean(axis=1)
            ci = paired_bootstrap_ci(on, off, n_resamples=n_resamples, seed=0)
            gate[metric] = {
                "delta": ci.mean_diff, "ci_low": ci.low, "ci_high": ci.high, "p_value": ci.p_value,
                "noise_band": noise[metric], "within_band": abs(ci.mean_diff) <= noise[metric],
                "ci_within_band": max(abs(ci.low), abs(ci.high)) <= noise[metric],
                "within_adr_bar": abs(ci.mean_diff) <= ADR_BAR,
            }
        verdict = "INVALID" if invalid else ("PASS" if gate[primary]["within_band"] else "FAIL")
        gates[strategy] = {"primary_metric": primary, "verdict": verdict, **gate}
    return {"configs": per_config, "noise_band": noise, "gates": gates, "primary_metric": primary, "n": n}


_PER_RUN_SETTINGS = ("n_questions", "wall_s")


def merge_reports(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report from several runs over disjoint question sets with the same settings
    (a run split into chunks): rows are concatenated and everything is re-summarised.
    ``wall_s`` becomes the sum. Raises ``ValueError`` on no reports, differing settings
    or a question present twice."""
    if not reports:
        raise ValueError("no reports to merge")
    base = {k: v for k, v in reports[0]["settings"].items() if k not in _PER_RUN_SETTINGS}
    for rep in reports[1:]:
        other = {k: v for k, v in rep["settings"].items() if k not in _PER_RUN_SETTINGS}
        if other != base:
            raise ValueError(f"settings differ: {base} vs {other}")
    rows = [QualityRow(**r) for rep in reports for r in rep["rows"]]
    qids = [r.question_id for r in rows if r.config == CONFIG_OFF and r.run == 0]
    if len(qids) != len(set(qids)):
        raise ValueError("a question appears in more than one report")
    configs = [CONFIG_OFF, *base["strategies"]]
    merged = summarise_rows(rows, configs, list(base["strategies"]), len(qids), base["runs"],
                            base["judge_model"] is not None, base["n_resamples"], evidence=base["mode"] == MODE_EVIDENCE)
    merged["settings"] = {**base, "n_questions": len(qids), "wall_s": round(sum(r["settings"]["wall_s"] for r in reports), 1)}
    merged["trajectory_mismatches"] = sum(r["trajectory_mismatches"] for r in reports)
    merged["rows"] = [asdict(r) for r in rows]
    return merged


def quality_markdown(report: dict[str, Any], command: str = "") -> str:
    """A markdown section of the report: settings, per-config scores, the gate per strategy."""
    s = report["settings"]
    lines = [
        "## Quality gate: compaction off vs on",
        "",
        *([f"Command: `{command}`", ""] if command else []),
        f"Reader `{s['model']}`; {s['n_questions']} questions x {s['runs']} runs per config "
        f"(temperature {s['temperature']}, seeds {s['seeds']}), mode `{s['mode']}`, budget "
        f"{s['budget_chars']} chars, max_hops {s['max_hops']}, passages_per_hop {s['passages_per_hop']}; "
        f"judge: {s['judge_model'] or 'none'}; wall time {s['wall_s']} s; trajectory mismatches "
        f"{report['trajectory_mismatches']}.",
        "",
    ]
    metrics = [m for m in ("em", "f1", "judge", "ans", "evid", "joint") if m in report["noise_band"]]
    header = "| config | " + " | ".join(f"{m.upper()} (per run)" for m in metrics)
    lines += [header + " | answer-in-context | mean chars | prompt too long | degraded | malformed |",
              "|---" * (len(metrics) + 6) + "|"]
    for config, e in report["configs"].items():
        cells = [f"{e[m]:.3f} ({', '.join(f'{x:.3f}' for x in e[m + '_runs'])})" for m in metrics]
        lines.append(f"| {config} | " + " | ".join(cells) + f" | {e['answer_in_context']:.2f} | "
                     f"{e['mean_context_chars']:.0f} | {e['prompt_too_long']} | {e['degraded']} | {e['malformed']} |")
    lines += ["", "| strategy | metric | delta (on - off) | 95% CI | p | noise band | within band | "
              "CI within band | within ADR 0.07 |", "|---" * 9 + "|"]
    for strategy, g in report["gates"].items():
        for m in metrics:
            d = g[m]
            lines.append(f"| {strategy} | {m} | {d['delta']:+.3f} | [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] | "
                         f"{d['p_value']:.3f} | {d['noise_band']:.3f} | {d['within_band']} | "
                         f"{d['ci_within_band']} | {d['within_adr_bar']} |")
    lines += ["", "Verdicts (primary metric " + report["primary_metric"] + "): "
              + ", ".join(f"{k}: **{g['verdict']}**" for k, g in report["gates"].items()), ""]
    return "\n".join(lines)


def write_quality_report(report: dict[str, Any], out_dir: str | Path, command: str = "") -> tuple[Path, Path]:
    """Write ``quality.json`` (with every row) and ``quality.md`` into ``out_dir``."""
    out = Path(out_dir)
    return write_json(out / "quality.json", report), write_text(out / "quality.md", quality_markdown(report, command))
