"""Markdown summaries and PNG plots of eval reports (matplotlib, extra ``eval``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["e2e_markdown", "packing_markdown", "plot_packing", "plot_trajectory", "trajectory_markdown"]


def _head(title: str, prov: dict) -> list[str]:
    return [
        f"# {title}", "",
        f"- command: `{prov['command']}`",
        f"- data: {', '.join(prov['data']) or 'bundled'}",
        f"- seeds: {prov['seeds'] or 'none (deterministic)'}",
        f"- date: {prov['date']} ({prov['machine']}, Python {prov['python']})", "",
    ]


def trajectory_markdown(rep: dict, prov: dict) -> str:
    out = _head("Trajectory equivalence: compaction on vs off", prov)
    out += [f"{rep['n_questions']} questions; hop counts {rep['hop_count_distribution']}; "
            f"median full context {rep['median_full_context_chars']:.0f} chars.", "",
            "| strategy | budget | NO-BEHAVIOUR-CHANGE | BUDGET | median chars off -> on | WIN (median cut) |",
            "|---|---|---|---|---|---|"]
    for r in rep["rows"]:
        out.append(f"| {r['strategy']} | {r['budget']} | {r['no_behaviour_change']}/{r['n']} | "
                   f"{r['within_budget']}/{r['n']} | {r['median_chars_off']:.0f} -> {r['median_chars_on']:.0f} | "
                   f"{r['median_cut_pct']:.1f}% |")
    golden = "not checked" if not rep["golden_checked"] else ("PASS" if rep["golden_ok"] else "FAIL")
    out += ["", f"GOLDEN (pinned off-trajectories): {golden}", f"Overall: {'PASS' if rep['passed'] else 'FAIL'}"]
    out += [f"- {f}" for f in rep["failures"][:50]]
    return "\n".join(out) + "\n"


def packing_markdown(rep: dict, prov: dict) -> str:
    setting = "open pool" if rep["open_pool"] else "distractor (own paragraphs)"
    out = _head(f"Packing factorial ({setting}, similarity {rep['similarity']})", prov)
    ref = rep["reference"]
    for rname, r in rep["retrievers"].items():
        out += [f"## Retriever: {rname}", "",
                f"recall@5 {r['recall@5']:.3f}, all-gold@5 {r['all_gold@5']:.3f}; answer-in-context ceiling "
                f"(all top-5 sentences, no budget) {r['aic_ceiling']:.3f} over {r['n_aic']} non-yes/no questions; "
                f"{r.get('n_without_gold', 0)} rows without a gold paragraph (scored on answer-in-context only).", "",
                "| policy | budget | answer-in-context | gold-doc coverage | all-gold-in-reader | gold-token density | tokens |",
                "|---|---|---|---|---|---|---|"]
        for b in rep["budgets"]:
            for p in rep["policies"]:
                c = r["table"][p][str(b)]
                out.append(f"| {p} | {b} | {c['aic']:.3f} | {c['coverage']:.3f} | {c['all_gold']:.3f} | "
                           f"{c['density']:.3f} | {c['tokens']:.1f} |")
        out += ["", f"Paired bootstrap 95% CI, {ref} minus each policy ({rep['n_resamples']} resamples, "
                f"seed {rep['seed']}):", "", "| vs | budget | d answer-in-context [CI] | d all-gold [CI] |",
                "|---|---|---|---|"]
        for p, per_b in r["ci_vs_reference"].items():
            for b, m in per_b.items():
                a, g = m["aic"], m["all_gold"]
                out.append(f"| {p} | {b} | {a['mean_diff']:+.3f} [{a['low']:+.3f}, {a['high']:+.3f}] | "
                           f"{g['mean_diff']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] |")
        out.append("")
    return "\n".join(out) + "\n"


def e2e_markdown(rep: dict, prov: dict) -> str:
    out = _head("MultiHopRAG end to end on the open pool", prov)
    ag, ci = rep["all_gold"], rep["ci_loop_minus"]
    n, loop = f"{rep['mean_passages_loop']:.2f} (mean)", rep["loop"]

    def vs(name: str) -> str:
        c = ci[name]
        return f"{c['mean_diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"

    pool = {"paragraphs": "paragraphs", "opaque": "paragraphs with opaque titles",
            "chunks": "untitled 40-word windows (gold: every supporting sentence in a read window)"}[rep["layout"]]
    out += [f"{rep['n_questions']} questions ({rep['n_scored']} with gold) over a pool of {rep['pool_passages']} "
            f"{pool}; loop stop_rule "
            f"{loop['stop_rule']}, max_passages {loop['max_passages']}; hop counts {rep['hop_count_distribution']}; "
            f"stop reasons {rep['stop_reasons']}.", "",
            "| retrieval | passages | all gold retrieved | loop minus it, 95% paired-bootstrap CI |",
            "|---|---|---|---|",
            f"| MultiHopRAG loop | {n} | {ag['loop']:.3f} | |",
            f"| seed coverage-rule loop | {rep['mean_passages_coverage_loop']:.2f} (mean) | {ag['coverage_loop']:.3f} "
            f"| {vs('coverage_loop')} |",
            f"| single-shot BM25, same number as the loop | {n} | {ag['single_same_n']:.3f} | {vs('single_same_n')} |",
            f"| single-shot BM25 top-5 | 5 | {ag['single_5']:.3f} | {vs('single_5')} |",
            f"| single-shot BM25 top-10 | 10 | {ag['single_10']:.3f} | {vs('single_10')} |",
            f"| naive two-hop 5 + 5 | 10 | {ag['two_hop_5_5']:.3f} | {vs('two_hop_5_5')} |", ""]
    return "\n".join(out) + "\n"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_packing(rep: dict, path: Path) -> Path:
    """Answer-in-context vs budget, one line per policy, one panel per retriever."""
    plt = _plt()
    names = list(rep["retrievers"])
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, rname in zip(axes[0], names):
        table = rep["retrievers"][rname]["table"]
        for p in rep["policies"]:
            ax.plot(rep["budgets"], [table[p][str(b)]["aic"] for b in rep["budgets"]], marker="o", label=p)
        ax.axhline(rep["retrievers"][rname]["aic_ceiling"], color="grey", ls=":", label="no-budget ceiling")
        ax.set(title=f"{rname}", xlabel="budget (Qwen2.5 tokens)", ylabel="answer-in-context")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_trajectory(rep: dict, path: Path) -> Path:
    """Synth-context size distributions: off vs each strategy at each budget."""
    plt = _plt()
    data = [rep["sizes_off"]] + [r["sizes_on"] for r in rep["rows"]]
    labels = ["off"] + [f"{r['strategy']}\n{r['budget']}" for r in rep["rows"]]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels)), 4))
    ax.boxplot(data, tick_labels=labels)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.set(ylabel="synth context chars", title="Synth-context size: compaction off vs on")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ci(c: dict | None) -> str:
    return f"{c['mean_diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]" if c else "-"


def synth_markdown(rep: dict) -> list[str]:
    """The product path's synth-context table (see :func:`evals.synth_eval.run_synth_eval`)."""
    out = [f"## Synth context on the product path ({rep['n_questions']} questions, "
           f"{rep['n_answer_in_context']} non-yes/no; pool {rep['pool_passages']} passages, {rep['loop']['layout']}; "
           f"loop mean {rep['mean_passages_loop']:.2f} passages)", "",
           f"`half` = half the off context's median, {rep['half_off_median_tokens']} Qwen2.5 tokens. "
           f"Trajectories identical across settings: {rep['trajectories_identical_across_settings']}. "
           f"Largest |product - harness| AiC gap: {rep['max_harness_gap']:.4f}. "
           f"CIs: paired bootstrap, {rep['n_resamples']} resamples, seed {rep['seed']}.", "",
           "| setting | AiC | harness AiC | all-gold in synth | gold coverage | median tokens | max tokens "
           "| AiC vs off | AiC vs each other strategy | all-gold vs each other strategy | seed-loop AiC "
           "| AiC vs seed loop |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rep["table"]:
        vs_off, vs = r.get("ci_vs_off", {}), r.get("ci_vs", {})
        harness = f"{r['harness_aic']:.3f}" if "harness_aic" in r else "-"
        seed = f"{r['seed_loop_aic']:.3f}" if "seed_loop_aic" in r else "-"
        aic_vs = "; ".join(f"{k} {_ci(v['aic'])}" for k, v in vs.items()) or "-"
        gold_vs = "; ".join(f"{k} {_ci(v['all_gold'])}" for k, v in vs.items()) or "-"
        out.append(f"| {r['setting']} | {r['aic']:.3f} | {harness} | {r['all_gold']:.3f} | {r['coverage']:.3f} | "
                   f"{r['median_tokens']:.0f} | {r['max_tokens']} | {_ci(vs_off.get('aic'))} | {aic_vs} | "
                   f"{gold_vs} | {seed} | {_ci(r.get('aic_ci_vs_seed_loop'))} |")
    return out + [""]


def plot_synth(rep: dict, path: Path) -> Path:
    """Answer-in-context per strategy at each token budget, with the off context as a line."""
    plt = _plt()
    rows = [r for r in rep["table"] if r["unit"] == "tokens"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        mine = sorted((r["limit"], r["aic"]) for r in rows if r["strategy"] == strategy)
        ax.plot([b for b, _ in mine], [a for _, a in mine], marker="o", label=strategy)
    off = next(r for r in rep["table"] if r["setting"] == "off")
    ax.axhline(off["aic"], color="grey", ls=":", label="off (full context)")
    ax.set(xlabel="synth budget (Qwen2.5 tokens)", ylabel="answer-in-context", title="product path")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
