"""``rootweaver eval ...`` subcommands: parse, run, write JSON + Markdown + PNG, set exit code."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evals.qa_rows import load_qa_rows
from rootweaver_innovations.documents.corpus import load_corpus_jsonl
from rootweaver_innovations.documents.demo import DEMO_CORPUS, GOLDEN_QUESTIONS, load_questions

from .report import provenance, write_json, write_text

__all__ = ["add_eval_parsers"]

OUT = Path("out")


def _csv_ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"budgets must be positive integers, got {text!r}")
    return values


def _csv(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _finish(name: str, args: argparse.Namespace, rep: dict, md: str, plot=None) -> Path:
    out = Path(args.out or OUT / name)
    write_json(out / "report.json", rep)
    write_text(out / "summary.md", md)
    files = [out / "report.json", out / "summary.md"]
    if plot is not None:
        try:
            files.append(plot(rep, out / "plot.png"))
        except ImportError:
            print("(matplotlib not installed: pip install 'rootweaver[eval]' for plots)", file=sys.stderr)
    print(md)
    print("report: " + ", ".join(map(str, files)))
    return out


def _cmd_trajectory(args: argparse.Namespace) -> int:
    from .render import plot_trajectory, trajectory_markdown
    from .trajectory import GOLDEN_FILE, run_trajectory_eval

    questions = load_questions(args.questions)
    passages = load_corpus_jsonl(args.corpus)
    bundled = args.questions == GOLDEN_QUESTIONS and args.corpus == DEMO_CORPUS
    golden = json.loads(GOLDEN_FILE.read_text()) if bundled and GOLDEN_FILE.is_file() and not args.regenerate else None
    rep = run_trajectory_eval(questions, passages, budgets=args.budgets, golden=golden, show_progress=not args.quiet)
    if args.regenerate:
        write_json(GOLDEN_FILE, rep["expectations"])
        print(f"pinned {len(questions)} trajectories in {GOLDEN_FILE}")
    rep["provenance"] = provenance(["rootweaver", *sys.argv[1:]], [args.questions, args.corpus])
    _finish("trajectory", args, rep, trajectory_markdown(rep, rep["provenance"]), plot_trajectory)
    return 0 if rep["passed"] else 1


def _rows(args: argparse.Namespace):
    from .datasets import DATASETS, DEFAULT_DATA_ROOT

    path = Path(args.data) if args.data else DEFAULT_DATA_ROOT / DATASETS[args.dataset]
    rows = load_qa_rows(path, args.limit)
    return path, {"all": rows, "even": rows[0::2], "odd": rows[1::2]}[getattr(args, "rows", "all")]


def _cmd_packing(args: argparse.Namespace) -> int:
    from .packing import run_packing_eval
    from .render import packing_markdown, plot_packing

    path, rows = _rows(args)
    rep = run_packing_eval(
        rows, retrievers=args.retrievers, policies=args.policies, budgets=args.budgets, open_pool=args.open_pool,
        opaque_titles=args.opaque_titles,
        similarity=args.similarity, reference=args.reference, n_resamples=args.resamples, seed=args.seed,
        show_progress=not args.quiet,
    )
    rep["provenance"] = provenance(["rootweaver", *sys.argv[1:]], [path], {"bootstrap": args.seed})
    _finish(args.name or f"packing-{args.dataset}{'-open' if args.open_pool else ''}", args, rep,
            packing_markdown(rep, rep["provenance"]), plot_packing)
    return 0


def _cmd_e2e(args: argparse.Namespace) -> int:
    from .multihop_e2e import run_multihop_eval
    from .render import e2e_markdown, plot_synth, synth_markdown
    from .synth_eval import run_synth_eval

    path, rows = _rows(args)
    if args.opaque_titles and args.layout not in ("paragraphs", "opaque"):
        print(f"rootweaver eval e2e: --opaque-titles is --layout opaque, not {args.layout}", file=sys.stderr)
        return 2
    layout = "opaque" if args.opaque_titles else args.layout
    loop = {"max_passages": args.max_passages, "stop_rule": args.stop_rule, "layout": layout}
    rep = run_multihop_eval(rows, **loop, n_resamples=args.resamples, seed=args.seed, show_progress=not args.quiet)
    rep["synth"] = run_synth_eval(rows, **loop, strategies=args.strategies, token_budgets=args.token_budgets,
                                  char_budgets=args.char_budgets, n_resamples=args.resamples, seed=args.seed,
                                  show_progress=not args.quiet)
    rep["provenance"] = provenance(["rootweaver", *sys.argv[1:]], [path], {"bootstrap": args.seed})
    md = e2e_markdown(rep, rep["provenance"]) + "\n" + "\n".join(synth_markdown(rep["synth"]))
    name = f"e2e-{args.dataset}-{args.rows}{'' if layout == 'paragraphs' else '-' + layout}"
    _finish(args.name or name, args, rep, md, lambda r, p: plot_synth(r["synth"], p))
    return 0 if rep["synth"]["trajectories_identical_across_settings"] else 1


def _cmd_answer_rules(args: argparse.Namespace) -> int:
    from .answer_rules import answer_rules_markdown, run_answer_rules_eval

    path, rows = _rows(args)
    if args.layout != "paragraphs" and args.opaque_titles:
        print("rootweaver eval answer-rules: --opaque-titles applies to --layout paragraphs only", file=sys.stderr)
        return 2
    rep = run_answer_rules_eval(rows, opaque_titles=args.opaque_titles, layout=args.layout, n_resamples=args.resamples,
                                seed=args.seed, show_progress=not args.quiet)
    rep["provenance"] = provenance(["rootweaver", *sys.argv[1:]], [path], {"bootstrap": args.seed})
    layout = "" if args.layout == "paragraphs" else f"-{args.layout}"
    name = f"answer-rules-{args.dataset}-{args.rows}{'-opaque' if args.opaque_titles else ''}{layout}"
    _finish(args.name or name, args, rep, answer_rules_markdown(rep, name))
    return 0


def _token_budgets(text: str) -> list[int | str]:
    """Comma list of positive ints and/or ``half``."""
    out: list[int | str] = []
    for v in _csv(text):
        if v == "half":
            out.append(v)
        else:
            out.extend(_csv_ints(v))
    if not out:
        raise argparse.ArgumentTypeError(f"expected token budgets like 160,half, got {text!r}")
    return out


def _reader_client(args: argparse.Namespace, max_tokens: int):
    """The reader of ``eval quality``: the embedded model, or the endpoint at ``--base-url``."""
    if args.base_url:
        from rootweaver_capabilities.readers.openai_client import OpenAIChatClient

        return OpenAIChatClient(args.base_url, args.model or "reader", api_key_env=args.api_key_env,
                                context_window=args.context_window, max_tokens=max_tokens, timeout_s=args.timeout)
    from rootweaver_capabilities.readers.models import INSTALL_HINT
    from rootweaver_capabilities.readers.runtimes import installed_runtime

    if not installed_runtime():
        raise ValueError(f"the embedded reader is not installed ({INSTALL_HINT}); or pass --base-url")
    if args.model_path is not None and not args.model_path.is_file():
        raise ValueError(f"--model-path {args.model_path}: file not found")
    from rootweaver_capabilities.readers.embedded import LlamaCppChatClient

    return LlamaCppChatClient(args.model_path, model=args.model or "qwen2.5-coder-1.5b-instruct",
                              context_window=args.context_window, max_tokens=max_tokens, timeout_s=args.timeout)


def _cmd_quality(args: argparse.Namespace) -> int:
    from rootweaver_capabilities.config import MultiHopConfig

    from .quality import run_quality, select_questions, write_quality_report

    path, pool_rows = _rows(args)
    rows = select_questions(pool_rows, args.questions)
    if not rows:
        raise ValueError(f"{path}: no non-yes/no question in the selected rows")
    config = MultiHopConfig.from_yaml(args.config) if args.config else MultiHopConfig()
    if args.compaction or args.budget or args.unit:
        base = config.to_mapping()
        base["compaction"].update({k: v for k, v in (("strategy", args.compaction), ("budget", args.budget),
                                                     ("unit", args.unit)) if v})
        config = MultiHopConfig.from_mapping(base, source=str(args.config or "command line"))
    client = _reader_client(args, args.max_tokens)
    client.load()
    judge = None
    if args.judge_base_url:
        from rootweaver_capabilities.readers.openai_client import OpenAIChatClient

        judge = OpenAIChatClient(args.judge_base_url, args.judge_model or args.model or "reader",
                                 api_key_env=args.api_key_env, context_window=args.context_window, max_tokens=16)
    f1s: list[float] = []

    def show(i: int, n: int, row) -> None:
        f1s.append(row.f1)
        if not args.quiet:
            print(f"[{i}/{n}] {row.config}: F1 {row.f1:.2f} (mean {sum(f1s) / len(f1s):.3f}), {row.seconds:.1f} s, "
                  f"{row.prompt_tokens} prompt tokens{', ' + row.error if row.error else ''}", file=sys.stderr,
                  flush=True)

    rep = run_quality(rows, client, config=config, pool_rows=pool_rows, gate=args.gate, runs=args.runs,
                      temperature=args.temperature, base_seed=args.seed, mode=args.mode, judge_client=judge,
                      max_tokens=args.max_tokens, progress=show)
    rep["provenance"] = provenance(["rootweaver", *sys.argv[1:]], [path], {"base_seed": args.seed})
    out = Path(args.out or OUT / (args.name or f"quality-{args.dataset}"))
    json_path, md_path = write_quality_report(rep, out, rep["provenance"]["command"])
    print(md_path.read_text())
    print(f"report: {json_path}, {md_path}")
    return 0 if all(g["verdict"] in ("PASS", "NO BAND (1 run)") for g in rep["gates"].values()) else 1


def add_eval_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``eval`` and its subcommands on the top-level parser's subparsers (the entry
    point ``eval`` in the group ``rootweaver.commands``, loaded by ``rootweaver eval ...`` only)."""
    from rootweaver_capabilities.cli.argtypes import positive_int as _positive_int

    from rootweaver_innovations.loop.multihop import STOP_RULES
    from rootweaver_innovations.compaction.strategies import strategy_names

    from .datasets import DATASETS
    from .layouts import LAYOUTS
    from .packing import BUDGETS, POLICY_ORDER

    ev = sub.add_parser("eval", help="offline evaluations (reports under ./out/ by default)")
    esub = ev.add_subparsers(dest="eval", required=True, parser_class=type(ev))

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", type=Path, help="report folder (default ./out/<eval>)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    t = esub.add_parser("trajectory", help="golden questions: trajectory identical on vs off, budget, WIN")
    t.add_argument("--questions", type=Path, default=GOLDEN_QUESTIONS)
    t.add_argument("--corpus", type=Path, default=DEMO_CORPUS)
    t.add_argument("--budgets", type=_csv_ints, default=[500, 1000, 2000, 4000])
    t.add_argument("--regenerate", action="store_true", help="re-pin the golden trajectories file")
    common(t)
    t.set_defaults(func=_cmd_trajectory)

    def halves(p: argparse.ArgumentParser) -> None:
        """Layout, row half and bootstrap options of the open-pool evals."""
        p.add_argument("--opaque-titles", action="store_true", help="replace every passage title by an opaque id")
        p.add_argument("--rows", choices=("all", "even", "odd"), default="all",
                       help="even/odd-indexed rows only (after --limit): the tuning / held-out halves")
        p.add_argument("--resamples", type=int, default=10_000, help="paired-bootstrap resamples")
        p.add_argument("--seed", type=int, default=0, help="bootstrap seed")

    def data(p: argparse.ArgumentParser) -> None:
        p.add_argument("--dataset", choices=sorted(DATASETS), default="hotpotqa")
        p.add_argument("--data", type=Path, help="any file in one of the three layouts (overrides --dataset)")
        p.add_argument("--limit", type=_positive_int, help="first N rows only")
        p.add_argument("--name", help="report folder name under ./out")

    pk = esub.add_parser("packing", help="packing factorial: policies x token budgets x retrievers")
    data(pk)
    pk.add_argument("--retrievers", type=_csv, default=["bm25"], help="comma list of bm25,dense,hybrid")
    pk.add_argument("--policies", type=_csv, default=list(POLICY_ORDER))
    pk.add_argument("--budgets", type=_csv_ints, default=list(BUDGETS))
    pk.add_argument("--open-pool", action="store_true", help="retrieve from all paragraphs of the file")
    pk.add_argument("--similarity", choices=("tfidf", "dense"), default="tfidf")
    pk.add_argument("--reference", default="submodular", help="policy compared against each other with CIs")
    halves(pk)
    common(pk)
    pk.set_defaults(func=_cmd_packing)

    e = esub.add_parser("e2e", help="MultiHopRAG on the open pool: all-gold retrieval and synth-context survival")
    data(e)
    e.add_argument("--strategies", type=_csv, default=None, help="compaction strategies (default: all registered)")
    e.add_argument("--token-budgets", type=_token_budgets, default=[160, "half"],
                   help="synth budgets in reader tokens; 'half' = half the off context's median")
    e.add_argument("--char-budgets", type=_csv_ints, default=[], help="synth budgets in chars (optional)")
    e.add_argument("--max-passages", type=_positive_int, default=10, help="the loop's passage budget per question")
    e.add_argument("--stop-rule", choices=STOP_RULES, default="evidence", help="the loop's hop policy")
    e.add_argument("--layout", choices=LAYOUTS, default="paragraphs",
                   help="paragraphs (titled), opaque (titles replaced by ids; = --opaque-titles) or chunks "
                        "(untitled 40-word windows, stride 30; gold: every supporting sentence in a read window)")
    halves(e)
    common(e)
    e.set_defaults(func=_cmd_e2e)

    ar = esub.add_parser("answer-rules", help="each registered answer rule's effect on EM/F1 (product path, reader none)")
    data(ar)
    halves(ar)
    common(ar)
    ar.add_argument("--layout", choices=("paragraphs", "txt"), default="paragraphs",
                    help="paragraphs: the pool's paragraphs; txt: one untitled text file per paragraph, read as a "
                         "folder (128-token chunks)")
    ar.set_defaults(func=_cmd_answer_rules)

    qu = esub.add_parser("quality", help="answer quality on the product path (capability + open pool + reader), "
                         "with the compaction on/off gate")
    data(qu)
    qu.add_argument("--rows", choices=("all", "even", "odd"), default="all",
                    help="even/odd-indexed rows only (after --limit): the tuning / reported halves; they form the pool")
    qu.add_argument("--questions", type=_positive_int, default=100,
                    help="answer the first N non-yes/no questions of the selected rows")
    qu.add_argument("--config", type=Path, help="capability YAML (loop, retriever, compaction); default: the defaults")
    qu.add_argument("--compaction", choices=strategy_names(), help="override compaction.strategy of the config")
    qu.add_argument("--budget", type=_positive_int, help="override compaction.budget of the config")
    qu.add_argument("--unit", choices=("tokens", "chars"), help="override compaction.unit of the config")
    qu.add_argument("--base-url", help="OpenAI-compatible endpoint; omitted: the embedded reader in this process")
    qu.add_argument("--model", help="model name (sent to the endpoint / shown in the report)")
    qu.add_argument("--model-path", type=Path, help="embedded reader: a GGUF file (default: the 1.5B reader)")
    qu.add_argument("--api-key-env", default="ROOTWEAVER_LLM_API_KEY", help="NAME of the env var with the key")
    qu.add_argument("--judge-base-url", help="optional LLM-judge endpoint (same protocol)")
    qu.add_argument("--judge-model")
    qu.add_argument("--gate", action=argparse.BooleanOptionalAction, default=True,
                    help="also answer with compaction off and report the on/off gate (--no-gate: on only)")
    qu.add_argument("--runs", type=_positive_int, default=1, help="runs per configuration (>= 2 for a noise band)")
    qu.add_argument("--temperature", type=float, default=0.0, help="> 0 when --runs >= 2")
    qu.add_argument("--mode", choices=("answer", "evidence"), default="evidence")
    qu.add_argument("--seed", type=int, default=0, help="base seed; run r uses seed + r")
    qu.add_argument("--context-window", type=_positive_int, default=2048)
    qu.add_argument("--max-tokens", type=_positive_int, default=64)
    qu.add_argument("--timeout", type=float, default=120.0, help="reader deadline per answer in seconds")
    common(qu)
    qu.set_defaults(func=_cmd_quality)

    # `rootweaver eval frontload|pace ...` is handed whole (options included) to evals.pace.main.
    from .pace import main as pace_main

    for name, help_text in (("frontload", "PACE: complete-evidence recall@5 with/without frontloading (see --help)"),
                            ("pace", "PACE: queueing simulation of fixed vs adaptive rerank depth (see --help)")):
        esub.add_parser(name, help=help_text, add_help=False).set_defaults(run_raw=pace_main)  # options: its own
