"""``rootweaver ask``: answer one question over a corpus (the bundled demo corpus by default),
from the command line's options or, with ``--config``, as the capability configured by a YAML file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rootweaver_innovations.defaults import (BUILTIN_STRATEGIES, DEFAULT_BUDGET_TOKENS, RETRIEVER_CHOICES,
                                             TAGGED_BUDGET_TOKENS)

from rootweaver_capabilities.cli.argtypes import UsageError, positive_int
from rootweaver_capabilities.cli.options import chunking_options, conventions_option, knob_option
from rootweaver_capabilities.config.reference import find_knob
from rootweaver_capabilities.cli.safe_output import json_text, safe_record
from rootweaver_capabilities.cli.skips import SkipReport

if TYPE_CHECKING:
    from rootweaver_capabilities.config import LLMConfig, MultiHopConfig

__all__ = ["add_ask_parser"]


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

    from rootweaver_capabilities.readers.models import INSTALL_HINT
    from rootweaver_capabilities.readers.runtimes import installed_runtime

    reader = args.reader
    if reader is None:
        reader = "local" if installed_runtime(llm.runtime) else "none"
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
        strategy=args.compaction if args.compaction != "off" else base.compaction.strategy,
        unit="chars" if args.max_chars else "tokens", budget=args.max_chars or args.max_tokens,
    )
    chunking = dataclasses.replace(base.retriever.chunking, chunk_tokens=args.chunk_tokens,
                                   overlap_tokens=args.overlap_tokens)
    retriever = dataclasses.replace(base.retriever, index=None if args.index is None else str(args.index),
                                    corpus=None if args.corpus is None else str(args.corpus),
                                    max_record_bytes=args.max_record_bytes, chunking=chunking,
                                    mode=args.retriever)
    return dataclasses.replace(base, max_hops=args.max_hops, max_passages=args.max_passages, compaction=compaction,
                               retriever=retriever, llm=_reader_config(args, base.llm), conventions=args.conventions)


def _cmd_ask(args: argparse.Namespace) -> int:
    question = _demo_question() if args.question is None else args.question
    if not question.strip():
        raise UsageError("the question is empty")
    if args.config is not None:  # --config: the capability answers, as in `batch` and `serve`
        return _ask_configured(args, question)
    from rootweaver_capabilities.assembly import build_rag, build_retriever, build_synthesizer, retriever_conventions
    from rootweaver_capabilities.readers.clock import TimedSynthesizer, deadline_note, load_reader
    from rootweaver_capabilities.result_json import result_record

    config = _ask_config(args)
    skips = SkipReport()
    # a bad corpus or index (or one built under other conventions) is refused before the reader is loaded
    retriever = build_retriever(config.retriever, skips, conventions=config.conventions)
    if skips.skipped:
        skips.summary(f"--corpus {args.corpus}: {len(retriever.passages):,} chunks")
    synthesizer = TimedSynthesizer(build_synthesizer(config, conventions=retriever_conventions(retriever, config)))
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


def _ask_configured(args: argparse.Namespace, question: str) -> int:
    """``ask --config FILE``: the YAML decides retriever, loop, compaction and reader, so the
    options that would also decide them are refused; the record is ``batch``'s."""
    from rootweaver_capabilities.batch.run import answer_question
    from rootweaver_capabilities.capability import MultiHopCapability
    from rootweaver_capabilities.config import MultiHopConfig

    given = [f"--{k.replace('_', '-')}" for k, v in vars(args).items()
             if k in _CONFIGURED_BY_FILE and v != _ASK_DEFAULTS[k]]
    if given:
        raise UsageError(f"--config FILE sets the retriever, loop and reader; drop {', '.join(given)}")
    d = answer_question(MultiHopCapability(MultiHopConfig.load(args.config)), question)
    if args.json:
        print(json_text(d, indent=2))
    else:
        _print_human(safe_record(d))
    return 0


_CONFIGURED_BY_FILE = ("corpus", "index", "compaction", "max_tokens", "max_chars", "max_hops", "max_passages",
                       "reader", "base_url", "model", "model_path", "mode", "timeout", "chunk_tokens", "overlap_tokens",
                       "conventions", "retriever")
_ASK_DEFAULTS: dict[str, object] = {}  # filled by add_ask_parser


def add_ask_parser(sub: Any) -> None:
    """``ask`` on the top-level subparsers ``sub``."""
    ask = sub.add_parser("ask", help="answer a question over a corpus (bundled demo corpus by default)")
    ask.add_argument("question", nargs="?", help="the question; omitted: a bundled demo bridge question")
    ask.add_argument("--corpus", type=Path, help="JSONL corpus ({id, title, text} per line) or a folder of documents "
                     "(.txt, .md, .html, .pdf; default: the bundled demo corpus); with --index: the JSONL file "
                     "the index must have been built from")
    ask.add_argument("--index", type=Path, help="index directory from `rootweaver index build`, memory-mapped")
    knob_option(ask, "--retriever", "retriever.mode", choices=RETRIEVER_CHOICES,
                help="what every hop searches with; auto: hybrid over an index built with --dense, else bm25 "
                "(dense and hybrid need the dense extra)")
    conventions_option(ask)
    knob_option(ask, "--compaction", "compaction.strategy", choices=("off", *BUILTIN_STRATEGIES),
                help="synth-context compaction; off = the full context")
    size = ask.add_mutually_exclusive_group()
    knob_option(size, "--max-tokens", "compaction.budget", type=positive_int,
                help=f"synth-context budget in reader (Qwen2.5) tokens; not given: {DEFAULT_BUDGET_TOKENS}, or "
                     f"{TAGGED_BUDGET_TOKENS} when a document read carries a source or a date")
    size.add_argument("--max-chars", type=positive_int, help="synth-context budget in chars instead of tokens")
    knob_option(ask, "--max-hops", "max_hops", type=positive_int)
    knob_option(ask, "--max-passages", "max_passages", type=positive_int, help="most passages in the trajectory")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--reader", choices=find_knob("llm.provider").rule.allowed(),
                     help="who answers: none (extractive), local (embedded model; the default when installed), "
                          "openai (endpoint at --base-url)")
    ask.add_argument("--base-url", help="OpenAI-compatible endpoint for --reader openai")
    ask.add_argument("--model", help="model name (sent to the endpoint / shown in the answer)")
    ask.add_argument("--model-path", type=Path, help="--reader local: a GGUF file (default: the 1.5B reader)")
    knob_option(ask, "--mode", "llm.mode", choices=find_knob("llm.mode").rule.allowed(),
                help="evidence: answer + cited lines; answer: answer only")
    knob_option(ask, "--timeout", "llm.timeout_s", type=float,
                help="reader deadline in seconds for one answer (the model is loaded before it starts)")
    knob_option(ask, "--max-record-bytes", "retriever.max_record_bytes", type=positive_int,
                help="refuse a --corpus line longer than this")
    chunking_options(ask)
    ask.add_argument("--config", type=Path, help="the capability YAML (as `serve --config`): it sets retriever, "
                     "loop, compaction and reader instead of the options above")
    ask.set_defaults(func=_cmd_ask)
    _ASK_DEFAULTS.update({k: ask.get_default(k) for k in _CONFIGURED_BY_FILE})
