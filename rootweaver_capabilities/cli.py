"""``rootweaver`` command line: ask a multi-hop question, run the evals.

Exit codes: 0 success, 1 an eval check failed, 2 bad input (one-line message on stderr).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from rootweaver_innovations.corpus import CorpusError, load_corpus_jsonl
from rootweaver_innovations.demo import DEMO_CORPUS, load_questions
from rootweaver_innovations.multihop import MultiHopRAG, MultiHopResult
from rootweaver_innovations.retrieval import BM25Retriever
from rootweaver_innovations.strategies import STRATEGIES, make_compactor

from .config import LLMConfig, MultiHopConfig
from .multi_hop import MultiHopCapability, RequestContext, answer_record, build_synthesizer

__all__ = ["main"]


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's own code)
        self.exit(2, f"rootweaver: error: {message}\n")


def _demo_question() -> str:
    return next(q.question for q in load_questions() if q.type == "bridge")


def _result_dict(res: MultiHopResult, strategy: str) -> dict:
    comp = res.compaction
    return {
        "question": res.question,
        "hops": [{"sub_query": h.sub_query, "retrieved_ids": list(h.retrieved_ids)} for h in res.hops],
        "hop_count": res.hop_count,
        "stop_reason": res.stop_reason,
        "strategy": strategy if comp else "off",
        "full_context_chars": res.full_context_chars,
        "context_chars": res.context_chars,
        "max_chars": comp.max_chars if comp else None,
        "synth_context": res.synth_context,
        "dropped": [{"line": d.position, "reason": d.reason, "text": d.text} for d in comp.dropped] if comp else [],
        "answer": answer_record(res.answer),
    }


def _print_human(d: dict) -> None:
    print(f"Question: {d['question']}")
    print(f"Hops: {d['hop_count']} (stopped: {d['stop_reason']})")
    for i, hop in enumerate(d["hops"], 1):
        print(f"  {i}. {hop['sub_query']}  ->  {', '.join(hop['retrieved_ids'])}")
    budget = f" / budget {d['max_chars']}" if d["max_chars"] else ""
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
    passages = load_corpus_jsonl(args.corpus)
    synthesizer = build_synthesizer(_reader_config(args))
    rag = MultiHopRAG(
        BM25Retriever(passages),
        synthesizer=synthesizer,
        max_hops=args.max_hops,
        compaction_enabled=args.compaction != "off",
        compaction_max_chars=args.max_chars,
        compactor=make_compactor(args.compaction if args.compaction != "off" else "line"),
    )
    d = _result_dict(rag.multi_hop_search(question), args.compaction)
    if args.json:
        print(json.dumps(d, ensure_ascii=False, indent=2))
    else:
        if args.question is None:
            print("(no question given: running the bundled demo question)")
        _print_human(d)
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rootweaver", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ask = sub.add_parser("ask", help="answer a question over a corpus (bundled demo corpus by default)")
    ask.add_argument("question", nargs="?", help="the question; omitted: a bundled demo bridge question")
    ask.add_argument("--corpus", type=Path, default=DEMO_CORPUS, help="JSONL corpus: {id, title, text} per line")
    ask.add_argument("--compaction", choices=("off", *STRATEGIES), default="line")
    ask.add_argument("--max-chars", type=_positive_int, default=2000, help="synth-context budget in chars")
    ask.add_argument("--max-hops", type=_positive_int, default=5)
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
    ask.set_defaults(func=_cmd_ask)
    serve = sub.add_parser("serve", help="answer questions from stdin via MultiHopCapability; optional /metrics")
    serve.add_argument("--config", type=Path, default=Path("configs/retrieval/multi_hop.yaml"))
    serve.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on 127.0.0.1:PORT")
    serve.add_argument("--user-id", help="user id passed to the flag provider (percentage rollouts)")
    serve.set_defaults(func=_cmd_serve)
    from evals.commands import add_eval_parsers

    add_eval_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and argv is None:  # `rootweaver ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["eval"] and raw[1:2] in (["frontload"], ["pace"]):  # PACE evals own their options
        from evals.pace import main as pace_main

        return pace_main(raw[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, CorpusError, ValueError) as exc:
        print(f"rootweaver: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
