"""``rootweaver`` command line: ask a multi-hop question, build a corpus index, run the evals.

Exit codes: 0 success, 1 an eval check failed, 2 bad input (one-line message on stderr).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rootweaver_innovations.comparison import date_comparison_answer
from rootweaver_innovations.corpus import CorpusError, load_corpus_jsonl
from rootweaver_innovations.demo import DEMO_CORPUS, load_questions
from rootweaver_innovations.multihop import MultiHopRAG
from rootweaver_innovations.packing import Budget
from rootweaver_innovations.retrieval import BM25Retriever, Retriever
from rootweaver_innovations.strategies import DEFAULT_BUDGET_TOKENS, DEFAULT_STRATEGY, make_compactor, strategy_names

from .argtypes import OneLineParser, positive_int
from .batch import BatchError, add_batch_parser
from .sphinxql_cli import add_export_parser
from .config import LLMConfig, MultiHopConfig
from .multi_hop import MultiHopCapability, RequestContext, build_synthesizer
from .records import result_record

__all__ = ["main"]


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def _demo_question() -> str:
    return next(q.question for q in load_questions() if q.type == "bridge")


def _print_human(d: dict) -> None:
    print(f"Question: {d['question']}")
    print(f"Hops: {d['hop_count']} (stopped: {d['stop_reason']})")
    for i, hop in enumerate(d["hops"], 1):
        print(f"  {i}. {hop['sub_query']}  ->  {', '.join(hop['retrieved_ids'])}")
    b = d["budget"]
    budget = f" ({b['used']} of {b['limit']} {b['unit']})" if b else ""
    print(f"Synth context ({d['strategy']}): {d['context_chars']} chars{budget}; "
          f"full trajectory context {d['full_context_chars']} chars")
    print("-" * 72)
    print(d["synth_context"])
    print("-" * 72)
    if d["dropped"]:
        print(f"Dropped {len(d['dropped'])} line(s):")
        for drop in d["dropped"]:
            print(f"  line {drop['line']:>3} [{drop['reason']}] {drop['text'][:90]}")
    if d["answer"]:
        if d["answer"].get("error"):
            print(f"Reader error ({d['answer']['error_kind']}): {d['answer']['error']}")
        print(f"Answer [{d['answer']['method']}]: {d['answer']['text']}")
        for line in d["answer"]["cited_lines"]:
            print(f"  cites: {line}")


def _retriever(args: argparse.Namespace) -> Retriever:
    """The index ``--index`` memory-mapped (checked against ``--corpus`` if given), else BM25
    in memory over ``--corpus`` or the bundled demo corpus."""
    if args.index is not None:
        from rootweaver_innovations.index import open_index

        return open_index(args.index, corpus=args.corpus).retriever()
    return BM25Retriever(load_corpus_jsonl(args.corpus or DEMO_CORPUS))


def _reader_config(args: argparse.Namespace) -> LLMConfig:
    """The validated ``llm`` section for ``--reader`` (default: local when installed, else
    none with a note on stderr saying how to get the reader)."""
    from .reader_models import INSTALL_HINT, reader_installed

    reader = args.reader
    if reader is None:
        reader = "local" if reader_installed() else "none"
        if reader == "none":
            print(f"(no embedded reader installed: answering extractively; for LLM answers: {INSTALL_HINT})",
                  file=sys.stderr)
    llm = {"provider": reader, "mode": args.mode, "timeout_s": args.timeout}
    if reader == "openai":
        if not args.base_url:
            raise UsageError("--reader openai needs --base-url (e.g. http://127.0.0.1:8765/v1)")
        llm.update(base_url=args.base_url, model=args.model or "reader")
    elif args.base_url:
        raise UsageError(f"--base-url is only used with --reader openai (got --reader {reader})")
    if reader == "local" and args.model_path is not None:
        if not args.model_path.is_file():
            raise UsageError(f"--model-path {args.model_path}: file not found")
        llm["model_path"] = str(args.model_path)
    if args.model and reader == "local":
        llm["model"] = args.model
    return MultiHopConfig.from_mapping({"llm": llm}, source="command line").llm


def _cmd_ask(args: argparse.Namespace) -> int:
    question = _demo_question() if args.question is None else args.question
    if not question.strip():
        raise UsageError("the question is empty")
    if args.config is not None:  # --config: the capability answers, as in `batch` and `serve`
        return _ask_configured(args, question)
    budget = Budget(args.max_chars, "chars") if args.max_chars else Budget(args.max_tokens, "tokens")
    synthesizer = build_synthesizer(_reader_config(args))
    rag = MultiHopRAG(
        _retriever(args),
        synthesizer=synthesizer,
        answer_rule=date_comparison_answer,
        max_hops=args.max_hops,
        max_passages=args.max_passages,
        compaction_enabled=args.compaction != "off",
        compaction_budget=budget,
        compactor=make_compactor(args.compaction if args.compaction != "off" else DEFAULT_STRATEGY),
    )
    d = result_record(rag.multi_hop_search(question), detail=True)
    if args.json:
        print(json.dumps(d, ensure_ascii=False, indent=2))
    else:
        if args.question is None:
            print("(no question given: running the bundled demo question)")
        _print_human(d)
    return 0


def _ask_configured(args: argparse.Namespace, question: str) -> int:
    """``ask --config FILE``: the YAML decides retriever, loop, compaction and reader, so the
    options that would also decide them are refused; the record is ``batch``'s."""
    from .batch import answer_question, load_config

    given = [f"--{k.replace('_', '-')}" for k, v in vars(args).items()
             if k in _CONFIGURED_BY_FILE and v != _ASK_DEFAULTS[k]]
    if given:
        raise UsageError(f"--config FILE sets the retriever, loop and reader; drop {', '.join(given)}")
    d = answer_question(MultiHopCapability(load_config(args.config)), question)
    if args.json:
        print(json.dumps(d, ensure_ascii=False, indent=2))
    else:
        _print_human(d)
    return 0


_CONFIGURED_BY_FILE = ("corpus", "index", "compaction", "max_tokens", "max_chars", "max_hops", "max_passages",
                       "reader", "base_url", "model", "model_path", "mode", "timeout")
_ASK_DEFAULTS: dict[str, object] = {}  # filled by build_parser


def _cmd_serve(args: argparse.Namespace) -> int:
    """Answer questions from stdin through the capability, one JSON line per question:
    ``question``, ``answer``, ``method``, ``cited_lines`` and the capability's metadata
    (``multi_hop``). A failing request never ends the loop: a reader failure is already an
    extractive answer with ``multi_hop.answer.error_kind``; any other error is reported
    in ``error`` and the next line is read. Optional /metrics on 127.0.0.1."""
    from .metrics import Metrics

    config = MultiHopConfig.from_yaml(args.config)
    synthesizer = build_synthesizer(config.llm)  # a missing reader fails here, once, exit 2
    if hasattr(synthesizer, "load"):  # tokenizer / model loaded before the first request's deadline
        synthesizer.load()
    metrics = Metrics()
    if args.metrics_port is not None:
        server = metrics.serve(args.metrics_port)
        print(f"metrics: http://{server.addr}:{server.port}/metrics", file=sys.stderr, flush=True)
    capability = MultiHopCapability(config, metrics=metrics, synthesizer=synthesizer)
    for line in sys.stdin:
        question = line.strip()
        if not question:
            continue
        ctx = RequestContext(query=question, user_id=args.user_id)
        try:
            capability.execute(ctx)
        except Exception as exc:  # noqa: BLE001 - one bad request must not end serving
            ctx.metadata["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        answer = (ctx.metadata.get("multi_hop") or {}).get("answer") or {}
        print(json.dumps({"question": question, "answer": answer.get("text"), "method": answer.get("method"),
                          "cited_lines": answer.get("cited_lines", []), **ctx.metadata},
                         ensure_ascii=False, default=str), flush=True)
    return 0


def _cmd_index_build(args: argparse.Namespace) -> int:
    """Build an index; progress on stderr (one rewritten line on a terminal), summary on stdout."""
    from rootweaver_innovations.index import build_index

    tty, last = sys.stderr.isatty(), [0.0]

    def progress(p) -> None:
        if tty:
            print(f"\r{p.line()}", end="", file=sys.stderr, flush=True)
        elif p.seconds - last[0] >= 10:
            last[0] = p.seconds
            print(p.line(), file=sys.stderr, flush=True)

    start = time.perf_counter()
    m = build_index(args.corpus, args.out, workers=args.workers, chunk_size=args.chunk_size, progress=progress)
    if tty:
        print(file=sys.stderr)
    bm = m.components["bm25"]
    print(f"built {args.out}: {m.corpus.passages:,} passages, {bm['vocab_size']:,} terms, {bm['nnz']:,} postings "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def _cmd_index_info(args: argparse.Namespace) -> int:
    """Print a usable index's manifest and file sizes (a refused one exits 2 with the reason)."""
    from rootweaver_innovations.index import read_manifest

    m = read_manifest(args.dir)
    sizes = {f: (args.dir / f).stat().st_size if (args.dir / f).is_file() else None
             for c in m.components.values() for f in c.get("files", ())}
    info = {**m.to_json(), "file_bytes": sizes}
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
        return 0
    print(f"index {args.dir} (format version {m.format_version})")
    print(f"corpus: {m.corpus.path}  {m.corpus.passages:,} passages  {m.corpus.bytes:,} bytes  "
          f"sha256 {m.corpus.sha256}")
    for name, comp in m.components.items():
        params = ", ".join(f"{k}={v}" for k, v in comp.items() if k != "files")
        size = sum(sizes[f] or 0 for f in comp.get("files", ()))
        print(f"component {name}: {params}; {size / 2**20:,.1f} MiB on disk")
    missing = [f for f, n in sizes.items() if n is None]
    if missing:
        raise UsageError(f"{args.dir}: missing index files: {', '.join(missing)}; rebuild it")
    return 0


def build_parser(with_evals: bool = False) -> argparse.ArgumentParser:
    p = OneLineParser(prog="rootweaver", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    ask = sub.add_parser("ask", help="answer a question over a corpus (bundled demo corpus by default)")
    ask.add_argument("question", nargs="?", help="the question; omitted: a bundled demo bridge question")
    ask.add_argument("--corpus", type=Path, help="JSONL corpus: {id, title, text} per line (default: the bundled "
                     "demo corpus); with --index: the file the index must have been built from")
    ask.add_argument("--index", type=Path, help="index directory from `rootweaver index build`, memory-mapped")
    ask.add_argument("--compaction", choices=("off", *strategy_names()), default=DEFAULT_STRATEGY,
                     help=f"synth-context compaction (default {DEFAULT_STRATEGY}); off = the full context")
    size = ask.add_mutually_exclusive_group()
    size.add_argument("--max-tokens", type=positive_int, default=DEFAULT_BUDGET_TOKENS,
                      help=f"synth-context budget in reader (Qwen2.5) tokens (default {DEFAULT_BUDGET_TOKENS})")
    size.add_argument("--max-chars", type=positive_int, help="synth-context budget in chars instead of tokens")
    ask.add_argument("--max-hops", type=positive_int, default=10)
    ask.add_argument("--max-passages", type=positive_int, default=10, help="most passages in the trajectory")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--reader", choices=("none", "local", "openai"),
                     help="who answers: none (extractive), local (embedded model; the default when installed), "
                          "openai (endpoint at --base-url)")
    ask.add_argument("--base-url", help="OpenAI-compatible endpoint for --reader openai")
    ask.add_argument("--model", help="model name (sent to the endpoint / shown in the answer)")
    ask.add_argument("--model-path", type=Path, help="--reader local: a GGUF file (default: the 1.5B reader)")
    ask.add_argument("--mode", choices=("evidence", "answer"), default="evidence",
                     help="evidence: answer + cited lines; answer: answer only")
    ask.add_argument("--timeout", type=float, default=60.0, help="reader deadline in seconds")
    ask.add_argument("--config", type=Path, help="the capability YAML (as `serve --config`): it sets retriever, "
                     "loop, compaction and reader instead of the options above")
    ask.set_defaults(func=_cmd_ask)
    _ASK_DEFAULTS.update({k: ask.get_default(k) for k in _CONFIGURED_BY_FILE})
    add_batch_parser(sub, positive_int)
    serve = sub.add_parser("serve", help="answer questions from stdin via MultiHopCapability; optional /metrics")
    serve.add_argument("--config", type=Path, default=Path("configs/retrieval/multi_hop.yaml"))
    serve.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on 127.0.0.1:PORT")
    serve.add_argument("--user-id", help="user id passed to the flag provider (percentage rollouts)")
    serve.set_defaults(func=_cmd_serve)
    index = sub.add_parser("index", help="build or inspect a persisted, memory-mapped corpus index")
    isub = index.add_subparsers(dest="index_command", required=True, parser_class=OneLineParser)
    build = isub.add_parser("build", help="stream a JSONL corpus into an index directory")
    build.add_argument("corpus", type=Path, help="JSONL corpus ({id, title, text|sentences} per line; .gz ok)")
    build.add_argument("--out", type=Path, required=True, help="index directory to create (must not exist)")
    build.add_argument("--workers", type=positive_int, default=1, help="parsing/tokenising processes")
    build.add_argument("--chunk-size", type=positive_int, default=20_000, help="passages per chunk")
    build.set_defaults(func=_cmd_index_build)
    info = isub.add_parser("info", help="show an index's manifest (format, corpus, tokenizer, components)")
    info.add_argument("dir", type=Path)
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=_cmd_index_info)
    add_export_parser(isub)
    if with_evals:  # the evals live in their own package, imported only for `rootweaver eval`
        from evals.commands import add_eval_parsers

        add_eval_parsers(sub)
    else:
        sub.add_parser("eval", help="offline evaluations (`rootweaver eval --help`)", add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and argv is None:  # `rootweaver ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["eval"] and raw[1:2] in (["frontload"], ["pace"]):  # PACE evals own their options
        from evals.pace import main as pace_main

        return pace_main(raw[1:])
    args = build_parser(with_evals=raw[:1] == ["eval"]).parse_args(raw)
    try:
        return args.func(args)
    except (UsageError, CorpusError, ValueError, OSError, BatchError) as exc:
        print(f"rootweaver: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
