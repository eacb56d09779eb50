"""``rootweaver`` command line: ask a multi-hop question, build a corpus index, run the evals.

Exit codes: 0 success, 1 an eval check failed, 2 bad input (one-line message on stderr).
Building the parser imports only light modules (no numpy, yaml, retrieval, packing or
capability) and each command imports what it runs, so ``--help`` takes a few times bare
Python's start (``benchmarks/bench_cli_start.py``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rootweaver_innovations.defaults import (
    BUILTIN_STRATEGIES,
    CHUNK_TOKENS,
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_STRATEGY,
    MAX_RECORD_BYTES,
    OVERLAP_TOKENS,
)

from rootweaver_capabilities.cli.argtypes import OneLineParser, host_port, positive_int
from rootweaver_capabilities.batch.base import CHUNK, BatchError
from rootweaver_capabilities.cli.interrupts import Interrupted, signals_as_exceptions
from rootweaver_capabilities.cli.safe_output import json_text, safe_record, terminal_safe
from rootweaver_capabilities.cluster.export import add_export_parser

if TYPE_CHECKING:
    from rootweaver_innovations.documents.folders import SkippedFile

    from rootweaver_capabilities.config import LLMConfig, MultiHopConfig

COMMANDS_GROUP = "rootweaver.commands"  # entry points adding subcommands (the evals register `eval`)

__all__ = ["main"]


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def _demo_question() -> str:
    from rootweaver_innovations.documents.demo import load_questions

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
        for line, cite in zip(d["answer"]["cited_lines"], d["answer"]["citations"]):
            where = cite.get("source")
            print(f"  cites: {line}")
            if where:
                print(f"         ({' > '.join([where['path'], *where['headings']])})")


def _reader_config(args: argparse.Namespace, llm: LLMConfig) -> LLMConfig:
    """``llm`` with ``--reader`` and its options applied (default reader: local when installed,
    else none with a note on stderr saying how to get the reader)."""
    import dataclasses

    from rootweaver_capabilities.readers.models import INSTALL_HINT, reader_installed

    reader = args.reader
    if reader is None:
        reader = "local" if reader_installed() else "none"
        if reader == "none":
            print(f"(no embedded reader installed: answering extractively; for LLM answers: {INSTALL_HINT})",
                  file=sys.stderr)
    changes: dict = {"provider": reader, "mode": args.mode, "timeout_s": args.timeout, "base_url": None}
    if reader == "openai":
        if not args.base_url:
            raise UsageError("--reader openai needs --base-url (e.g. http://127.0.0.1:8765/v1)")
        changes.update(base_url=args.base_url, model=args.model or "reader")
    elif args.base_url:
        raise UsageError(f"--base-url is only used with --reader openai (got --reader {reader})")
    if reader == "local" and args.model_path is not None:
        if not args.model_path.is_file():
            raise UsageError(f"--model-path {args.model_path}: file not found")
        changes["model_path"] = str(args.model_path)
    if args.model and reader == "local":
        changes["model"] = args.model
    return dataclasses.replace(llm, **changes)


def _ask_config(args: argparse.Namespace) -> MultiHopConfig:
    """The default config with the command line's options applied (validated again)."""
    import dataclasses

    from rootweaver_capabilities.config import MultiHopConfig

    if args.corpus is not None and not args.corpus.exists():
        raise UsageError(f"--corpus {args.corpus}: file or folder not found")
    base = MultiHopConfig(source="command line")
    compaction = dataclasses.replace(
        base.compaction, enabled=args.compaction != "off",
        strategy=args.compaction if args.compaction != "off" else DEFAULT_STRATEGY,
        unit="chars" if args.max_chars else "tokens", budget=args.max_chars or args.max_tokens,
    )
    chunking = dataclasses.replace(base.retriever.chunking, chunk_tokens=args.chunk_tokens,
                                   overlap_tokens=args.overlap_tokens)
    retriever = dataclasses.replace(base.retriever, index=None if args.index is None else str(args.index),
                                    corpus=None if args.corpus is None else str(args.corpus),
                                    max_record_bytes=args.max_record_bytes, chunking=chunking)
    return dataclasses.replace(base, max_hops=args.max_hops, max_passages=args.max_passages, compaction=compaction,
                               retriever=retriever, llm=_reader_config(args, base.llm))


def _cmd_ask(args: argparse.Namespace) -> int:
    question = _demo_question() if args.question is None else args.question
    if not question.strip():
        raise UsageError("the question is empty")
    if args.config is not None:  # --config: the capability answers, as in `batch` and `serve`
        return _ask_configured(args, question)
    from rootweaver_capabilities.assembly import build_rag, build_retriever, build_synthesizer
    from rootweaver_capabilities.readers.clock import TimedSynthesizer, deadline_note, load_reader
    from rootweaver_capabilities.result_json import result_record

    config = _ask_config(args)
    skips = _SkipReport()
    retriever = build_retriever(config.retriever, skips)  # a bad corpus or index is refused before the reader is loaded
    if skips.skipped:
        skips.summary(f"--corpus {args.corpus}: {len(retriever.passages):,} chunks")
    synthesizer = TimedSynthesizer(build_synthesizer(config))
    load_s = load_reader(synthesizer.inner)  # model and tokenizer loaded before the answer's deadline
    rag = build_rag(config, retriever=retriever, synthesizer=synthesizer)
    d = result_record(rag.multi_hop_search(question), detail=True)
    if args.json:
        print(json_text(d, indent=2))
    else:
        if args.question is None:
            print("(no question given: running the bundled demo question)")
        _print_human(safe_record(d))
    note = deadline_note(d["answer"], load_s, synthesizer.seconds, args.timeout)
    if note:
        print(note, file=sys.stderr)
    return 0


class _SkipReport:
    """Prints each file a folder corpus skips (one stderr line naming it and the reason),
    then a summary counting them by reason."""

    def __init__(self) -> None:
        self.skipped: list[SkippedFile] = []

    def __call__(self, skipped: SkippedFile) -> None:
        self.skipped.append(skipped)
        print(f"rootweaver: skipped {terminal_safe(skipped.path, one_line=True)}: "
              f"{terminal_safe(skipped.reason, one_line=True)}", file=sys.stderr)

    def summary(self, what: str) -> None:
        from rootweaver_innovations.documents.folders import count_by_reason

        counts = ", ".join(f"{n} {terminal_safe(reason, one_line=True)}"
                           for reason, n in count_by_reason(self.skipped).items())
        print(f"rootweaver: {terminal_safe(what, one_line=True)}; skipped {len(self.skipped)} file(s): {counts}",
              file=sys.stderr)


def _chunking_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-tokens", type=positive_int, default=CHUNK_TOKENS,
                        help="a folder corpus: largest chunk in reader tokens (default %(default)s)")
    parser.add_argument("--overlap-tokens", type=int, default=OVERLAP_TOKENS,
                        help="a folder corpus: tokens a chunk repeats from the previous one (default %(default)s)")


def _ask_configured(args: argparse.Namespace, question: str) -> int:
    """``ask --config FILE``: the YAML decides retriever, loop, compaction and reader, so the
    options that would also decide them are refused; the record is ``batch``'s."""
    from rootweaver_capabilities.batch.run import answer_question, load_config
    from rootweaver_capabilities.capability import MultiHopCapability

    given = [f"--{k.replace('_', '-')}" for k, v in vars(args).items()
             if k in _CONFIGURED_BY_FILE and v != _ASK_DEFAULTS[k]]
    if given:
        raise UsageError(f"--config FILE sets the retriever, loop and reader; drop {', '.join(given)}")
    d = answer_question(MultiHopCapability(load_config(args.config)), question)
    if args.json:
        print(json_text(d, indent=2))
    else:
        _print_human(safe_record(d))
    return 0


_CONFIGURED_BY_FILE = ("corpus", "index", "compaction", "max_tokens", "max_chars", "max_hops", "max_passages",
                       "reader", "base_url", "model", "model_path", "mode", "timeout", "chunk_tokens", "overlap_tokens")
_ASK_DEFAULTS: dict[str, object] = {}  # filled by build_parser


def _cmd_serve(args: argparse.Namespace) -> int:
    """With ``--http``: the HTTP service (``rootweaver_capabilities.serving.http``) until stopped.
    Otherwise (``--stdin``, the default) answer questions from stdin through the capability,
    one JSON line per question: ``question``, ``answer``, ``method``, ``cited_lines`` and the capability's metadata
    (``multi_hop``). A failing request never ends the loop: a reader failure is already an
    extractive answer with ``multi_hop.answer.error_kind``; any other error is reported
    in ``error`` and the next line is read. Optional /metrics on 127.0.0.1."""
    if args.http is not None:
        from rootweaver_capabilities.serving.http import run

        if args.metrics_port is not None or args.user_id is not None:
            raise UsageError("--metrics-port and --user-id are stdin-mode options (with --http: GET /metrics, "
                             "user_id in the request)")
        run(args.config, *args.http, workers=args.workers)
        return 0
    if args.workers != 1:
        raise UsageError("--workers needs --http")
    from rootweaver_capabilities.assembly import build_synthesizer
    from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
    from rootweaver_capabilities.config import MultiHopConfig
    from rootweaver_capabilities.metrics import Metrics

    config = MultiHopConfig.from_yaml(args.config)
    synthesizer = build_synthesizer(config)  # a missing reader fails here, once, exit 2
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
        print(json_text({"question": question, "answer": answer.get("text"), "method": answer.get("method"),
                         "cited_lines": answer.get("cited_lines", []), **ctx.metadata}, default=str), flush=True)
    return 0


def _cmd_batch(args: argparse.Namespace) -> int:
    """Run the batch; exit 0 when every question is answered, 1 when some failed (rerun to retry)."""
    from rootweaver_capabilities.batch.run import BatchInputError, load_config, run_batch

    if args.ray is not None and args.ray != "auto" and ":" not in args.ray:
        raise BatchInputError(f"--ray must be 'auto' or HOST:PORT of a Ray cluster, got {args.ray!r}")
    config = load_config(args.config)
    s = run_batch(args.questions, args.out, config, workers=args.workers, ray_address=args.ray, chunk=args.chunk,
                  show_progress=not args.quiet)
    lost = f", {s.lost_workers} worker(s) lost, {s.resubmitted} chunk(s) resubmitted" if s.lost_workers else ""
    nodes = f"; per Ray node: {json.dumps(s.per_node)}" if s.per_node else ""
    first = f" (first answer after {s.first_answer_s:.1f} s)" if s.first_answer_s is not None else ""
    print(f"rootweaver batch: {s.answered} answered, {s.skipped} already in {args.out}, {len(s.failed)} failed "
          f"in {s.seconds:.1f} s{first}{lost}{nodes}", file=sys.stderr)
    return 1 if s.failed else 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP tool over stdio (the default) or streamable HTTP until stopped."""
    from rootweaver_capabilities.serving.mcp import run

    run(args.config, args.http)
    return 0


def _cmd_index_build(args: argparse.Namespace) -> int:
    """Build an index; progress on stderr (one rewritten line on a terminal), summary on stdout."""
    import shutil

    from rootweaver_innovations.documents.folders import ChunkingSettings
    from rootweaver_innovations.retrieval.index import build_index

    tty, last = sys.stderr.isatty(), [0.0]

    def progress(p) -> None:
        latch.check()  # after every chunk: a SIGTERM / SIGINT unwinds the build from here
        if tty:
            print(f"\r{p.line()}", end="", file=sys.stderr, flush=True)
        elif p.seconds - last[0] >= 10:
            last[0] = p.seconds
            print(p.line(), file=sys.stderr, flush=True)

    start, skips = time.perf_counter(), _SkipReport()
    with signals_as_exceptions() as latch:  # SIGTERM / SIGINT unwind the build: temp dir and workers removed
        try:
            m = build_index(args.corpus, args.out, workers=args.workers, chunk_size=args.chunk_size,
                            progress=progress, max_record_bytes=args.max_record_bytes,
                            chunking=ChunkingSettings(args.chunk_tokens, args.overlap_tokens), on_skip=skips)
        except BaseException:
            latch.check()  # a signal during a chunk surfaces as the failure it caused
            raise
        if latch.signum is not None:  # signalled after the last chunk: an interrupted build leaves nothing
            shutil.rmtree(args.out, ignore_errors=True)
    if tty:
        print(file=sys.stderr)
    bm = m.components["bm25"]
    docs = f" from {m.components['chunking']['documents']:,} documents" if "chunking" in m.components else ""
    if skips.skipped:
        skips.summary(f"{args.corpus}: {m.corpus.passages:,} chunks{docs}")
    print(f"built {args.out}: {m.corpus.passages:,} passages{docs}, {bm['vocab_size']:,} terms, {bm['nnz']:,} "
          f"postings in {time.perf_counter() - start:.1f} s")
    return 0


def _cmd_index_verify(args: argparse.Namespace) -> int:
    """Check an index fully (structure, ranges, every file's SHA-256, every record); one line,
    exit 0 when sound, exit 2 naming the first damaged file otherwise."""
    from rootweaver_innovations.retrieval.index import verify_index

    m = verify_index(args.dir)
    size = sum(f["bytes"] for f in m.files.values())
    print(f"ok {args.dir}: {len(m.files)} files, {size:,} bytes, {m.corpus.passages:,} passages verified")
    return 0


def _cmd_index_info(args: argparse.Namespace) -> int:
    """Print a usable index's manifest and file sizes (a refused one exits 2 with the reason)."""
    from rootweaver_innovations.retrieval.index import read_manifest

    m = read_manifest(args.dir)
    sizes = {f: (args.dir / f).stat().st_size if (args.dir / f).is_file() else None
             for c in m.components.values() for f in c.get("files", ())}
    info = {**m.to_json(), "file_bytes": sizes}
    if args.json:
        print(json_text(info, indent=2))
        return 0
    print(f"index {args.dir} (format version {m.format_version})")
    print(f"corpus: {terminal_safe(m.corpus.path, one_line=True)}  {m.corpus.passages:,} passages  {m.corpus.bytes:,} bytes  "
          f"sha256 {m.corpus.sha256}")
    for name, comp in m.components.items():
        params = ", ".join(f"{k}={v}" for k, v in comp.items() if k != "files")
        size = sum(sizes[f] or 0 for f in comp.get("files", ()))
        print(f"component {name}: {params}; {size / 2**20:,.1f} MiB on disk")
    missing = [f for f, n in sizes.items() if n is None]
    if missing:
        raise UsageError(f"{args.dir}: missing index files: {', '.join(missing)}; rebuild it")
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; plug-in commands (entry points in :data:`COMMANDS_GROUP`) are listed,
    and the one named ``command`` adds its own parser (so only a command that runs is imported).
    When ``command`` is a built-in one, the plug-ins are not looked up: finding entry points
    costs more than the rest of the start, and only the top-level help and errors name them."""
    p = OneLineParser(prog="rootweaver", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    ask = sub.add_parser("ask", help="answer a question over a corpus (bundled demo corpus by default)")
    ask.add_argument("question", nargs="?", help="the question; omitted: a bundled demo bridge question")
    ask.add_argument("--corpus", type=Path, help="JSONL corpus ({id, title, text} per line) or a folder of documents "
                     "(.txt, .md, .html, .pdf; default: the bundled demo corpus); with --index: the JSONL file "
                     "the index must have been built from")
    ask.add_argument("--index", type=Path, help="index directory from `rootweaver index build`, memory-mapped")
    ask.add_argument("--compaction", choices=("off", *BUILTIN_STRATEGIES), default=DEFAULT_STRATEGY,
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
    ask.add_argument("--timeout", type=float, default=60.0,
                     help="reader deadline in seconds for one answer (the model is loaded before it starts)")
    ask.add_argument("--max-record-bytes", type=positive_int, default=MAX_RECORD_BYTES,
                     help=f"refuse a --corpus line longer than this (default {MAX_RECORD_BYTES:,})")
    _chunking_options(ask)
    ask.add_argument("--config", type=Path, help="the capability YAML (as `serve --config`): it sets retriever, "
                     "loop, compaction and reader instead of the options above")
    ask.set_defaults(func=_cmd_ask)
    _ASK_DEFAULTS.update({k: ask.get_default(k) for k in _CONFIGURED_BY_FILE})
    b = sub.add_parser("batch", help="answer a JSONL file of {id, question} into a JSONL file (resumable; "
                       "local processes or a Ray cluster)")
    b.add_argument("questions", type=Path, help="JSONL: one {\"id\": ..., \"question\": ...} per line")
    b.add_argument("--out", type=Path, required=True, help="JSONL of answers, appended; ids already there are skipped")
    b.add_argument("--config", type=Path, help="the capability YAML (as `serve --config`); default: every default")
    b.add_argument("--workers", type=positive_int, default=1,
                   help="local worker processes (default 1: this process); with --ray: actors (default: one per CPU)")
    b.add_argument("--ray", metavar="auto|ADDRESS", help="run on a Ray cluster: auto (the running one) or HOST:PORT")
    b.add_argument("--chunk", type=positive_int, default=CHUNK,
                   help=f"questions per task sent to a worker (default {CHUNK}; larger amortises Ray's per-task cost, "
                        "smaller loses less work with a node)")
    b.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    b.set_defaults(func=_cmd_batch)
    serve = sub.add_parser("serve", help="answer questions over HTTP (--http) or from stdin (the default)")
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--http", type=host_port, metavar="[HOST:]PORT",
                      help="HTTP service (POST /v1/ask, /v1/ask/stream, /healthz, /metrics); host 127.0.0.1 by default")
    mode.add_argument("--stdin", action="store_true", help="one question per stdin line, one JSON line out (default)")
    serve.add_argument("--workers", type=positive_int, default=1, help="--http: worker processes sharing the index")
    serve.add_argument("--config", type=Path, default=Path("configs/retrieval/multi_hop.yaml"))
    serve.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on 127.0.0.1:PORT")
    serve.add_argument("--user-id", help="user id passed to the flag provider (percentage rollouts)")
    serve.set_defaults(func=_cmd_serve)
    mcp = sub.add_parser("mcp", help="MCP server with the tool multi_hop_answer, over stdio or streamable HTTP")
    mcp.add_argument("--http", type=host_port, metavar="[HOST:]PORT",
                     help="streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 by default); default: stdio")
    mcp.add_argument("--config", type=Path, default=Path("configs/retrieval/multi_hop.yaml"))
    mcp.set_defaults(func=_cmd_mcp)
    index = sub.add_parser("index", help="build or inspect a persisted, memory-mapped corpus index")
    isub = index.add_subparsers(dest="index_command", required=True, parser_class=OneLineParser)
    build = isub.add_parser("build", help="stream a JSONL corpus or a folder of documents into an index directory")
    build.add_argument("corpus", type=Path, help="JSONL corpus ({id, title, text|sentences} per line; .gz ok), or a "
                       "folder of .txt, .md, .html, .pdf files (chunked; the manifest records how)")
    build.add_argument("--out", type=Path, required=True, help="index directory to create (must not exist)")
    build.add_argument("--workers", type=positive_int, default=1, help="parsing/tokenising processes")
    build.add_argument("--chunk-size", type=positive_int, default=20_000, help="passages per chunk")
    build.add_argument("--max-record-bytes", type=positive_int, default=MAX_RECORD_BYTES,
                       help=f"refuse a corpus line longer than this (default {MAX_RECORD_BYTES:,})")
    _chunking_options(build)
    build.set_defaults(func=_cmd_index_build)
    info = isub.add_parser("info", help="show an index's manifest (format, corpus, tokenizer, components)")
    info.add_argument("dir", type=Path)
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=_cmd_index_info)
    verify = isub.add_parser("verify", help="check an index fully: structure, every file's SHA-256, every record")
    verify.add_argument("dir", type=Path)
    verify.set_defaults(func=_cmd_index_verify)
    add_export_parser(isub)
    if command in sub.choices:
        return p
    if command is None or command.startswith("-"):  # top-level help or no command: plug-in names only
        for name in _plugin_names():
            sub.add_parser(name, help=f"(`rootweaver {name} --help`)", add_help=False)
        return p
    from importlib.metadata import entry_points

    for ep in entry_points(group=COMMANDS_GROUP):  # loaded only when that command runs
        if ep.name == command:
            ep.load()(sub)
        else:
            sub.add_parser(ep.name, help=f"(`rootweaver {ep.name} --help`)", add_help=False)
    return p


def _plugin_names() -> list[str]:
    """The names of the :data:`COMMANDS_GROUP` entry points of the distributions on ``sys.path``,
    read from their ``entry_points.txt`` (first copy of a name wins). The top-level help needs
    only these names, and importing ``importlib.metadata`` alone costs more than a bare Python
    start; running a plug-in still finds and loads it through ``importlib.metadata``."""
    import os

    names: dict[str, None] = {}
    for entry in sys.path:
        try:
            found = sorted(e.path for e in os.scandir(entry or ".") if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:  # not a directory (a zip, a missing path)
            continue
        for meta in found:
            try:
                lines = Path(meta, "entry_points.txt").read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            section = ""
            for line in map(str.strip, lines):
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == COMMANDS_GROUP and "=" in line and not line.startswith(("#", ";")):
                    names.setdefault(line.split("=", 1)[0].strip())
    return list(names)


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and argv is None:  # `rootweaver ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command=raw[0] if raw else None)
    args, unknown = parser.parse_known_args(raw)
    if getattr(args, "run_raw", None) is not None:  # a plug-in command that parses its own options
        return args.run_raw(raw[1:])
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.func(args)
    except Interrupted as exc:
        print(f"rootweaver: {exc}", file=sys.stderr)
        return 128 + exc.signum
    except (UsageError, ValueError, OSError, BatchError) as exc:  # a CorpusError is a ValueError
        print(f"rootweaver: error: {terminal_safe(str(exc), one_line=True)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
