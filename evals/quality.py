"""Answer quality on the product path, and the compaction on/off gate, through a real reader.

What a user runs: the :class:`~rootweaver_capabilities.MultiHopCapability` (the loop, the
configured retriever and compaction, the reader) over the **open pool** of the question
set (every paragraph of every selected row, :func:`evals.datasets.build_open_pool`), so
retrieval has to find each question's paragraphs among thousands. The reader is an
:class:`~rootweaver_capabilities.readers.synthesizer.LLMSynthesizer` on the embedded model or on an
OpenAI-compatible endpoint: the same prompt, parsing, window check and fallback as
``rootweaver ask`` / ``serve``.

Configurations: the configured compaction (named by its strategy) and, with the gate,
``off``; both share the retriever, so the trajectory is the same (mismatches counted).
Each question is answered ``runs`` times per configuration with seeds ``base_seed + r``.
Scores per answer: EM/F1 (HotpotQA official), answer-in-context of the synth context,
cited-line precision/recall against the gold supporting facts (evidence mode), EBG
Ans/Evid/Joint, the counted prompt tokens and the wall seconds of the request; optionally
an LLM-judge score.

Gate, per metric: ``delta`` = mean over questions of (on - off), with a paired bootstrap
CI. The **noise band** is the run-to-run spread (the largest ``|mean(run r) - mean(run r')|``
of any configuration); ``PASS`` when ``|delta| <= band`` on the primary metric (judge when
configured, else F1); with one run there is no band (``NO BAND``) and the issue's fixed
goal is reported beside it (F1 delta >= -0.01 at less than half the off prompt's
tokens). Rows are never dropped: an answer that fell back to the extractive path (reader
error, with its kind in ``error``) scores what it scores and makes the verdict ``INVALID``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.readers.chat import ChatClient
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_capabilities.readers.prompts import MODE_EVIDENCE, MODES, number_facts
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.defaults import DEFAULT_BUDGET_TOKENS
from evals.qa_rows import QARow
from evals.diagnostics import (
    answer_in_context,
    exact_match,
    f1_score,
    paired_bootstrap_ci,
)
from rootweaver_innovations.records import Fact
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

from .datasets import is_yes_no
from .report import write_json, write_text
from .scoring import gold_line_ids, judge_messages, parse_judge_score, score_ebg

__all__ = [
    "ADR_BAR",
    "CONFIG_OFF",
    "QualityRow",
    "merge_reports",
    "quality_markdown",
    "run_quality",
    "select_questions",
    "summarise_rows",
    "write_quality_report",
]

CONFIG_OFF = "off"
ADR_BAR = 0.07  # quality delta within LLM-judge noise (docs/adr/0001), +/-0.07 at 3-5 runs per config
GOAL_DELTA = -0.01  # compaction on vs off, F1 delta >= -0.01 ...
GOAL_TOKEN_SHARE = 0.5  # ... at less than half the off prompt's tokens


@dataclass(frozen=True, slots=True)
class QualityRow:
    """One answer: question, configuration, run (and its seed), prediction and scores.

    ``judge`` is ``None`` without a judge or when the judge's reply held no score;
    ``ans``/``evid``/``joint`` (EBG scores, ``None`` outside ``mode="evidence"``): Evid is
    strict, so a gold fact missing from the synth context makes it false. ``error`` is
    empty unless the reader failed (its error kind; the answer is then the extractive one).
    ``cited_precision``/``cited_recall`` (evidence mode; precision ``None`` when nothing was
    cited) compare the cited lines with the gold supporting facts; ``prompt_tokens`` is the
    counted prompt, ``seconds`` the wall time of the whole request.
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
    cited_precision: float | None = None
    cited_recall: float | None = None
    prompt_tokens: int | None = None
    seconds: float = 0.0


def select_questions(rows: Sequence[QARow], n: int | None) -> list[QARow]:
    """The first ``n`` rows (all when ``None``) whose answer is not yes/no."""
    answerable = [r for r in rows if not is_yes_no(r)]
    return answerable if n is None else answerable[:n]


def _gold_facts(row: QARow) -> frozenset[tuple[str, str]]:
    by_title = {p.title: p for p in row.passages}
    return frozenset(
        (t, by_title[t].sentences[i]) for t, i in row.gold_sentences
        if t in by_title and 0 <= i < len(by_title[t].sentences)
    )


def _ebg(row: QARow, context: SynthContext, prediction: str, cited: Sequence[Fact]) -> dict[str, float]:
    gold = _gold_facts(row)
    numbered = number_facts(context)  # the facts as the reader saw them numbered
    gold_ids = gold_line_ids(numbered, gold)
    cited_set = set(cited)
    cited_ids = {i for i, f in enumerate(numbered.facts, start=1) if f in cited_set}
    complete = bool(gold) and len(gold_ids) >= len(gold)  # every gold fact has a line to cite
    s = score_ebg(prediction, [row.answer], cited_ids, gold_ids if complete else ())
    return {"ans": float(s.ans), "evid": float(s.evid), "joint": float(s.joint)}


def _cited_pr(row: QARow, cited: Sequence[Fact]) -> tuple[float | None, float | None]:
    """(precision, recall) of the cited facts against every gold supporting fact; recall
    ``None`` for a row without gold facts, precision ``None`` when nothing was cited."""
    gold = _gold_facts(row)
    facts = {(f.title, f.sentence) for f in cited}
    hits = sum(fact in gold for fact in facts)
    precision = hits / len(facts) if facts else None
    recall = hits / len(gold) if gold else None
    return precision, recall


def _judge(client: ChatClient, question: str, gold: str, prediction: str) -> float | None:
    reply = client.chat(judge_messages(question, gold, prediction), temperature=0.0, max_tokens=16, seed=0)
    return parse_judge_score(reply.text)


def run_quality(
    rows: Sequence[QARow],
    client: ChatClient,
    *,
    config: MultiHopConfig | None = None,
    pool_rows: Sequence[QARow] | None = None,
    gate: bool = True,
    runs: int = 1,
    temperature: float = 0.0,
    base_seed: int = 0,
    mode: str = MODE_EVIDENCE,
    judge_client: ChatClient | None = None,
    max_tokens: int = 32,
    n_resamples: int = 10_000,
    progress: Callable[[int, int, QualityRow], None] | None = None,
) -> dict[str, Any]:
    """Answer ``rows`` on the product path and return the report (JSON-serialisable).

    ``config`` (default: the capability defaults) supplies the loop settings, the
    retriever backend and the compaction (strategy and budget; compaction is turned on for
    the ``on`` configuration whatever ``compaction.enabled`` says). The open pool is built
    from ``pool_rows`` (default ``rows``). Raises ``ValueError`` for no rows, an unknown
    mode, ``runs < 1``, or ``runs >= 2`` at ``temperature <= 0`` (identical runs, no band).
    """
    from rootweaver_capabilities.capability import MultiHopCapability, RequestContext

    from .datasets import build_open_pool

    if not rows:
        raise ValueError("rows must not be empty")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if runs >= 2 and temperature <= 0:
        raise ValueError(f"runs >= 2 need temperature > 0 so that runs differ, got {temperature}")
    cfg = config or MultiHopConfig()
    strategy = cfg.compaction.strategy
    base = cfg.to_mapping()
    as_set = {name: MultiHopConfig.from_mapping({**base, "compaction": {**base["compaction"], "enabled": on}})
              for name, on in ((strategy, True), (CONFIG_OFF, False))}
    pool = build_open_pool(pool_rows if pool_rows is not None else rows)
    retriever = BM25Retriever(pool.passages, backend=cfg.retriever.backend)
    configs = [strategy, *([CONFIG_OFF] if gate else [])]
    seeds = [base_seed + r for r in range(runs)]
    caps = {
        (name, r): MultiHopCapability(
            as_set[name], retriever=retriever,
            synthesizer=LLMSynthesizer(client, mode=mode, temperature=temperature, seed=seed, max_tokens=max_tokens),
        )
        for name in configs for r, seed in enumerate(seeds)
    }
    out_rows: list[QualityRow] = []
    mismatches = 0
    started = time.monotonic()
    for qi, row in enumerate(rows):
        trajectories = set()
        for name in configs:
            for r, seed in enumerate(seeds):
                ctx = RequestContext(query=row.question)
                t0 = time.perf_counter()
                result = caps[(name, r)].execute(ctx)
                seconds = time.perf_counter() - t0
                if result is None or result.answer is None or (result.compaction is None) != (name == CONFIG_OFF):
                    raise RuntimeError(f"capability did not run configuration {name!r} (flags?)")
                trajectories.add(result.trajectory())
                answer = ctx.metadata["multi_hop"]["answer"]
                pred, cited = answer["text"], result.answer.citations
                context = result.synth_context
                ebg = _ebg(row, result.synth, pred, cited) if mode == MODE_EVIDENCE else {}
                precision, recall = _cited_pr(row, cited) if mode == MODE_EVIDENCE else (None, None)
                judge = _judge(judge_client, row.question, row.answer, pred) if judge_client else None
                q = QualityRow(
                    question_id=row.id, config=name, run=r, seed=seed, prediction=pred, method=answer["method"],
                    em=exact_match(pred, row.answer), f1=f1_score(pred, row.answer), judge=judge,
                    context_chars=len(context), answer_in_context=answer_in_context(row.answer, context),
                    error=answer["error_kind"] or "", cited_precision=precision, cited_recall=recall,
                    prompt_tokens=answer["prompt_tokens"], seconds=round(seconds, 3), **ebg,
                )
                out_rows.append(q)
                if progress is not None:
                    progress(qi + 1, len(rows), q)
        mismatches += len(trajectories) > 1
    report = summarise_rows(out_rows, configs if gate else [strategy], [strategy] if gate else [], len(rows), runs,
                            judge_client is not None, n_resamples, evidence=mode == MODE_EVIDENCE)
    report["settings"] = {
        "n_questions": len(rows), "pool_passages": len(pool.passages), "runs": runs, "seeds": seeds,
        "temperature": temperature, "mode": mode, "strategy": strategy,
        # QA rows carry no source or date: a null budget is the default one for every question
        "budget": {"limit": DEFAULT_BUDGET_TOKENS if cfg.compaction.budget is None else cfg.compaction.budget,
                   "unit": cfg.compaction.unit},
        "gate": gate, "max_hops": cfg.max_hops, "passages_per_hop": cfg.passages_per_hop, "max_tokens": max_tokens,
        "model": client.model, "reader": client.transport,
        "context_window": client.context_window,
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
    """Per-config means (overall and per run), F1 split by answer-in-context, cited-line
    precision/recall, prompt tokens and seconds, reader errors by kind, the noise band, and
    the gate per strategy (with the issue's fixed goal beside it)."""
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
        aic = [r.f1 for r in mine if r.answer_in_context]
        not_aic = [r.f1 for r in mine if not r.answer_in_context]
        entry["f1_given_aic"] = float(np.mean(aic)) if aic else None
        entry["f1_given_not_aic"] = float(np.mean(not_aic)) if not_aic else None
        for name in ("cited_precision", "cited_recall"):
            values = [getattr(r, name) for r in mine if getattr(r, name) is not None]
            entry[name] = float(np.mean(values)) if values else None
        tokens = [r.prompt_tokens for r in mine if r.prompt_tokens is not None]
        entry["mean_prompt_tokens"] = float(np.mean(tokens)) if tokens else None
        entry["mean_seconds"] = float(np.mean([r.seconds for r in mine]))
        entry["errors"] = {k: sum(r.error == k for r in mine) for k in sorted({r.error for r in mine if r.error})}
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
        verdict = ("INVALID" if invalid else "NO BAND (1 run)" if runs < 2
                   else "PASS" if gate[primary]["within_band"] else "FAIL")
        on_tok, off_tok = per_config[strategy]["mean_prompt_tokens"], per_config[CONFIG_OFF]["mean_prompt_tokens"]
        share = on_tok / off_tok if on_tok is not None and off_tok else None
        goal = {"f1_delta": gate["f1"]["delta"], "token_share": share,
                "met": gate["f1"]["delta"] >= GOAL_DELTA and share is not None and share < GOAL_TOKEN_SHARE}
        gates[strategy] = {"primary_metric": primary, "verdict": verdict, "goal": goal, **gate}
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
    strategy = base["strategy"]
    qids = [r.question_id for r in rows if r.config == strategy and r.run == 0]
    if len(qids) != len(set(qids)):
        raise ValueError("a question appears in more than one report")
    configs = [strategy, *([CONFIG_OFF] if base["gate"] else [])]
    merged = summarise_rows(rows, configs, [strategy] if base["gate"] else [], len(qids), base["runs"],
                            base["judge_model"] is not None, base["n_resamples"], evidence=base["mode"] == MODE_EVIDENCE)
    merged["settings"] = {**base, "n_questions": len(qids), "wall_s": round(sum(r["settings"]["wall_s"] for r in reports), 1)}
    merged["trajectory_mismatches"] = sum(r["trajectory_mismatches"] for r in reports)
    merged["rows"] = [asdict(r) for r in rows]
    return merged


def _f(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def quality_markdown(report: dict[str, Any], command: str = "") -> str:
    """A markdown section of the report: settings, per-config scores, the gate per strategy."""
    s = report["settings"]
    lines = [
        "## Answer quality on the product path" + (": compaction on vs off" if s.get("gate") else ""),
        "",
        *([f"Command: `{command}`", ""] if command else []),
        f"Reader `{s['model']}` ({s.get('reader', 'openai')}, window {s.get('context_window', '-')}); "
        f"{s['n_questions']} questions x {s['runs']} run(s) per config (temperature {s['temperature']}, seeds "
        f"{s['seeds']}), mode `{s['mode']}`, compaction `{s.get('strategy', '-')}` at {s['budget']['limit']} {s['budget']['unit']}, "
        f"open pool of {s.get('pool_passages', '-')} paragraphs, max_hops {s['max_hops']}, passages_per_hop "
        f"{s['passages_per_hop']}; judge: {s['judge_model'] or 'none'}; wall time {s['wall_s']} s; trajectory "
        f"mismatches {report['trajectory_mismatches']}.",
        "",
    ]
    metrics = [m for m in ("em", "f1", "judge", "ans", "evid", "joint") if m in report["noise_band"]]
    multi = s["runs"] > 1
    header = "| config | " + " | ".join(f"{m.upper()}{' (per run)' if multi else ''}" for m in metrics)
    lines += [header + " | answer-in-context | F1 if AiC | F1 if not | cited P | cited R | prompt tokens | "
              "s/question | mean chars | reader errors | malformed |", "|---" * (len(metrics) + 11) + "|"]
    for config, e in report["configs"].items():
        cells = [f"{e[m]:.3f}" + (f" ({', '.join(f'{x:.3f}' for x in e[m + '_runs'])})" if multi else "")
                 for m in metrics]
        errors = ", ".join(f"{k} {v}" for k, v in e["errors"].items()) or "0"
        lines.append(f"| {config} | " + " | ".join(cells) + f" | {e['answer_in_context']:.2f} | "
                     f"{_f(e['f1_given_aic'])} | {_f(e['f1_given_not_aic'])} | {_f(e['cited_precision'], '.2f')} | "
                     f"{_f(e['cited_recall'], '.2f')} | {_f(e['mean_prompt_tokens'], '.0f')} | "
                     f"{e['mean_seconds']:.2f} | {e['mean_context_chars']:.0f} | {errors} | {e['malformed']} |")
    if report["gates"]:
        lines += ["", "| strategy | metric | delta (on - off) | 95% CI | p | noise band | within band | "
                  "CI within band | within ADR 0.07 |", "|---" * 9 + "|"]
        for strategy, g in report["gates"].items():
            for m in metrics:
                d = g[m]
                lines.append(f"| {strategy} | {m} | {d['delta']:+.3f} | [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] | "
                             f"{d['p_value']:.3f} | {d['noise_band']:.3f} | {d['within_band']} | "
                             f"{d['ci_within_band']} | {d['within_adr_bar']} |")
        lines += ["", "Verdicts (primary metric " + report["primary_metric"] + "): "
                  + ", ".join(f"{k}: **{g['verdict']}**" for k, g in report["gates"].items()),
                  "", "Goal (F1 delta >= -0.01 at < half the off prompt tokens): "
                  + ", ".join(f"{k}: delta {g['goal']['f1_delta']:+.3f}, token share {_f(g['goal']['token_share'], '.2f')}"
                              f" -> **{'met' if g['goal']['met'] else 'not met'}**" for k, g in report["gates"].items())]
    lines.append("")
    return "\n".join(lines)


def write_quality_report(report: dict[str, Any], out_dir: str | Path, command: str = "") -> tuple[Path, Path]:
    """Write ``quality.json`` (with every row) and ``quality.md`` into ``out_dir``."""
    out = Path(out_dir)
    return write_json(out / "quality.json", report), write_text(out / "quality.md", quality_markdown(report, command))
