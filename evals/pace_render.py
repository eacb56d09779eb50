"""Markdown tables and the PNG plot of the PACE reports (matplotlib, extra ``eval``).

Reads the JSON-ready dicts of :func:`evals.frontload_eval.run_frontload_eval` and
:func:`evals.pace_sim.run_pace_simulation`; computes nothing new.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["frontload_markdown", "pace_markdown", "plot_pace"]


def frontload_markdown(report: dict) -> str:
    """A Markdown table of an :func:`evals.frontload_eval.run_frontload_eval` report."""
    depths = report["depths"]
    opts = ", ".join(f"{k}={v}" for k, v in report["frontload_options"].items())
    lines = [
        f"### {report['dataset']}: {report['metric']}",
        "",
        f"{report['first_stage']} ({report['pool']['paragraphs']} paragraphs from {report['pool']['rows']} rows), "
        f"second stage {report['second_stage']}; {report['questions']} questions "
        f"({report['questions_without_gold_in_pool']} without gold in the pool left out); frontloading {opts}.",
        "",
    ]
    for name, entry in report["subsets"].items():
        lines += [f"**{name}** (n={entry['n']})", "", "| ordering | " + " | ".join(f"D={d}" for d in depths) + " |"]
        lines.append("|---|" + "---|" * len(depths))
        for o, row in entry["recall"].items():
            prefix = entry["all_gold_in_first_D"][o]
            cells = [f"{100 * row[str(d)]:.2f}% ({100 * prefix[str(d)]:.1f}%)" for d in depths]
            lines.append(f"| {o} | " + " | ".join(cells) + " |")
        for key, d in entry["paired"].items():
            lines += ["", f"{key}: {100 * d['diff']:+.2f} points (95% paired bootstrap CI "
                      f"{100 * d['ci95'][0]:+.2f} to {100 * d['ci95'][1]:+.2f})"]
        lines.append("")
    lines.append("Cells: recall after the second stage (share of questions with all gold in the first D, before it).")
    return "\n".join(lines) + "\n"


def pace_markdown(report: dict) -> str:
    """Markdown tables of an :func:`evals.pace_sim.run_pace_simulation` report (times in seconds)."""
    svc = ", ".join(f"D={d}: {s:.3f}s" for d, s in report["rerank_service_s"].items())
    llm = report["llm"]
    meas = report["rerank_service_measured"]
    timed = ""
    if meas:
        raw = "; ".join(f"D={d}: " + "/".join(f"{t:.2f}" for t in ts) for d, ts in meas["all_s"].items())
        load = f"; load average {meas['load_average_after']}" if meas.get("load_average_after") else ""
        timed = (
            f" Timed on this machine (BiEncoderScorer, no precomputed vectors, s per request: {raw}; "
            f"{meas.get('source', 'timed')}{load}), fitted {meas['fit']['intercept_s']}s + {meas['fit']['per_passage_s']}s x D."
        )
    lines = [
        "### Serving simulation: reranker then LLM, open-loop Poisson arrivals",
        "",
        f"Rerank service per request ({svc}).{timed} LLM mean {llm['mean_service_s']}s on {llm['servers']} slot(s), "
        f"cv {llm['cv']} ({llm['source']}); {report['n_requests']} requests per rate, first {report['warmup']} "
        f"dropped, seed {report['seed']}. Rerank load = rate x mean service (>= 1: the queue grows without "
        "bound and its percentiles grow with the run length).",
        "",
        "| QPS | policy | mean D | rerank load | recall@5 | rerank queue p50/p95 | LLM queue p50/p95 | mean time in rerank/LLM stage | e2e p50/p95 | heavier stage |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        neck = "reranker" if r["rerank_stage_mean"] > r["llm_stage_mean"] else "LLM"
        recall = "-" if r["mean_recall"] is None else f"{100 * r['mean_recall']:.2f}%"
        lines.append(
            f"| {r['rate']} | {r['policy']} | {r['mean_depth']} | {r['rerank_load']} | {recall} | {r['rerank_queue_p50']}/{r['rerank_queue_p95']} | "
            f"{r['llm_queue_p50']}/{r['llm_queue_p95']} | {r['rerank_stage_mean']}/{r['llm_stage_mean']} | "
            f"{r['e2e_p50']}/{r['e2e_p95']} | {neck} |"
        )
    lines += [
        "",
        "| QPS | adaptive mean D | adaptive e2e p95 | best fixed e2e p95 | adaptive <= best fixed | "
        "smallest fixed D >= adaptive mean D: e2e p95 | adaptive <= it |",
        "|---|---|---|---|---|---|---|",
    ]
    for rate in report["rates"]:
        rows = {r["policy"]: r for r in report["results"] if r["rate"] == rate}
        fixed = {int(k.split("=")[1]): v for k, v in rows.items() if k.startswith("fixed")}
        best = min(fixed, key=lambda d: fixed[d]["e2e_p95"])
        ad = rows["adaptive"]
        same = min((d for d in fixed if d >= ad["mean_depth"]), default=max(fixed))
        a = ad["e2e_p95"]
        lines.append(
            f"| {rate} | {ad['mean_depth']} | {a} | {fixed[best]['e2e_p95']} (D={best}) | "
            f"{'yes' if a <= fixed[best]['e2e_p95'] else 'no'} | {fixed[same]['e2e_p95']} (D={same}) | "
            f"{'yes' if a <= fixed[same]['e2e_p95'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def plot_pace(report: dict, path: Path) -> Path:
    """PNG: p95 end-to-end latency and p95 queue time per stage versus arrival rate."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("the plot needs the 'eval' extra: pip install 'rootweaver[eval]'") from exc
    policies = list(dict.fromkeys(r["policy"] for r in report["results"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for n, name in enumerate(policies):
        rows = [r for r in report["results"] if r["policy"] == name]
        x = [r["rate"] for r in rows]
        style = dict(color=f"C{n}", marker="o", lw=2.5 if name == "adaptive" else 1.2, ls="-" if name == "adaptive" else "--")
        axes[0].plot(x, [r["e2e_p95"] for r in rows], label=name, **style)
        axes[1].plot(x, [r["rerank_queue_p95"] for r in rows], label=f"{name}: reranker", **style)
        axes[1].plot(x, [r["llm_queue_p95"] for r in rows], color=f"C{n}", ls=":", marker="x", lw=1, label=f"{name}: LLM")
        axes[2].plot(x, [r["mean_depth"] for r in rows], label=name, **style)
    for ax, title, ylab in zip(
        axes,
        ("p95 end-to-end latency", "p95 queue time per stage", "mean rerank depth D"),
        ("seconds (log)", "seconds (symlog)", "D"),
        strict=True,
    ):
        ax.set_title(title)
        ax.set_xlabel("arrival rate (requests/s)")
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[1].set_yscale("symlog", linthresh=0.1)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
