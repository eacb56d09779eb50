"""``rootweaver index``: build, update, inspect, verify and export a persisted, memory-mapped corpus index."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rootweaver_innovations.defaults import INDEX_CHUNK_PASSAGES

from rootweaver_capabilities.cli.argtypes import OneLineParser, UsageError, positive_int
from rootweaver_capabilities.cli.interrupts import signals_as_exceptions
from rootweaver_capabilities.cli.options import chunking_options, conventions_option, knob_option
from rootweaver_capabilities.cli.safe_output import json_text, terminal_safe
from rootweaver_capabilities.cli.skips import SkipReport
from rootweaver_capabilities.cluster.export import add_export_parser

__all__ = ["add_index_parser"]


def _cmd_index_build(args: argparse.Namespace) -> int:
    """Build an index; progress on stderr (one rewritten line on a terminal), summary on stdout."""
    import shutil

    from rootweaver_innovations.conventions.registry import default_conventions, get_conventions
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

    start, skips = time.perf_counter(), SkipReport()
    embedder = _embedder(args.dense)
    with signals_as_exceptions() as latch:  # SIGTERM / SIGINT unwind the build: temp dir and workers removed
        try:
            m = build_index(args.corpus, args.out, workers=args.workers, chunk_size=args.chunk_size,
                            progress=progress, max_record_bytes=args.max_record_bytes,
                            chunking=ChunkingSettings(args.chunk_tokens, args.overlap_tokens), on_skip=skips,
                            conventions=get_conventions(args.conventions) if args.conventions else default_conventions(),
                            embedder=embedder)
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
    dense = f", embedded by {m.components['dense']['model']}" if "dense" in m.components else ""
    print(f"built {args.out}: {m.corpus.passages:,} passages{docs}, {bm['vocab_size']:,} terms, {bm['nnz']:,} "
          f"postings{dense} in {time.perf_counter() - start:.1f} s (conventions {m.conventions['name']})")
    return 0


def _embedder(dense: bool):
    """The embedding model when ``--dense`` is given (a usage error without the ``dense`` extra)."""
    if not dense:
        return None
    from rootweaver_innovations.retrieval.embeddings import load_embedder

    try:
        return load_embedder()
    except ImportError:
        raise UsageError("--dense needs the dense extra: pip install 'rootweaver[dense]'") from None


def _cmd_index_update(args: argparse.Namespace) -> int:
    """Update an index in place from its corpus; skips on stderr, one summary line on stdout."""
    from rootweaver_innovations.retrieval.index_update import update_index

    start, skips = time.perf_counter(), SkipReport()
    with signals_as_exceptions() as latch:  # SIGTERM / SIGINT before the swap leave the old index whole
        r = update_index(args.index, args.source, on_skip=skips, max_record_bytes=args.max_record_bytes,
                         checkpoint=latch.check)
    n = r.manifest.corpus.passages
    if skips.skipped:
        skips.summary(f"{r.manifest.corpus.path}: {n:,} chunks")
    if r.up_to_date:
        print(f"{args.index} is up to date with {r.manifest.corpus.path} ({n:,} passages)")
        return 0
    print(f"updated {args.index}: {r.changed:,} changed, {r.added:,} added, {r.removed:,} removed {r.unit}; "
          f"{r.reindexed:,} of {n:,} passages indexed again in {time.perf_counter() - start:.1f} s")
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
    from rootweaver_innovations.retrieval.modes import auto_mode

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
    print(f"conventions: {m.conventions['name']}  fingerprint {m.conventions['fingerprint']}")
    for name, comp in m.components.items():
        if name == "metadata":
            continue
        params = ", ".join(f"{k}={v}" for k, v in comp.items() if k != "files")
        size = sum(sizes[f] or 0 for f in comp.get("files", ()))
        print(f"component {name}: {params}; {size / 2**20:,.1f} MiB on disk")
    if "metadata" in m.components:
        for line in _metadata_lines(m.components["metadata"]):
            print(terminal_safe(line, one_line=True))
    searched = {"hybrid": "hybrid (BM25 and the embeddings fused)",
                "bm25": "BM25 alone (no embeddings; `index build --dense` adds them)"}
    print(f"retriever: auto (the default) searches it with {searched[auto_mode('dense' in m.components)]}")
    missing = [f for f, n in sizes.items() if n is None]
    if missing:
        raise UsageError(f"{args.dir}: missing index files: {', '.join(missing)}; rebuild it")
    return 0


def _metadata_lines(md: dict[str, Any]) -> list[str]:
    """What the documents carry, in at most three lines: how many carry metadata and each
    field, the sources most named (and how many there are), the span of published days."""
    if not md["with_meta"]:
        return [f"metadata: none of {md['documents']:,} documents carries any"]
    fields = ", ".join(f"{k} {n:,}" for k, n in md["fields"].items())
    lines = [f"metadata: {md['with_meta']:,} of {md['documents']:,} documents carry some ({fields})"]
    if md["sources"]:
        more = md["source_count"] - len(md["sources"])
        named = ", ".join(f"{name} ({n:,})" for name, n in md["sources"].items())
        lines.append(f"  sources: {named}" + (f" and {more:,} more" if more > 0 else ""))
    if md["published"]:
        lines.append(f"  published: {md['published']['first']} to {md['published']['last']}")
    return lines


def add_index_parser(sub: Any) -> None:
    """``index`` and its subcommands on the top-level subparsers ``sub``."""
    index = sub.add_parser("index", help="build or inspect a persisted, memory-mapped corpus index")
    isub = index.add_subparsers(dest="index_command", required=True, parser_class=OneLineParser)
    build = isub.add_parser("build", help="stream a JSONL corpus or a folder of documents into an index directory")
    build.add_argument("corpus", type=Path, help="JSONL corpus ({id, title, text|sentences} per line; .gz ok), or a "
                       "folder of .txt, .md, .html, .pdf files (chunked; the manifest records how)")
    build.add_argument("--out", type=Path, required=True, help="index directory to create (must not exist)")
    build.add_argument("--workers", type=positive_int, default=1, help="parsing/tokenising processes")
    build.add_argument("--chunk-size", type=positive_int, default=INDEX_CHUNK_PASSAGES,
                       help="passages per chunk (default %(default)s)")
    knob_option(build, "--max-record-bytes", "retriever.max_record_bytes", type=positive_int,
                help="refuse a corpus line longer than this")
    build.add_argument("--dense", action="store_true",
                       help="also embed every passage, for retriever modes dense and hybrid (all-MiniLM-L6-v2 from "
                       "the dense extra; 768 bytes a passage)")
    chunking_options(build)
    conventions_option(build)
    build.set_defaults(func=_cmd_index_build)
    update = isub.add_parser(
        "update", help="bring an index in line with the folder or JSONL file it was built from",
        description="Re-read only what changed since the index was built or last updated: files of a folder "
        "whose size and mtime (else SHA-256) changed, new and deleted files; records of a JSONL file whose "
        "line changed, new and deleted ids. Kept passages keep their ids; BM25 statistics and the title "
        "index are recomputed, so the result equals a fresh build. The new index is written beside the old "
        "one and swapped in atomically; a failure or Ctrl-C before the swap leaves the old index whole. "
        "A running `serve` or `mcp` keeps the index it opened until restarted. An index of another format "
        "version or fingerprint is refused (exit 2): rebuild it with `rootweaver index build`.")
    update.add_argument("index", type=Path, help="index directory built by `rootweaver index build`")
    update.add_argument("--from", dest="source", type=Path, metavar="PATH",
                        help="the corpus folder or JSONL file (default: the absolute path the manifest records; "
                        "give this when it moved)")
    knob_option(update, "--max-record-bytes", "retriever.max_record_bytes", type=positive_int,
                help="refuse a corpus line longer than this")
    update.set_defaults(func=_cmd_index_update)
    info = isub.add_parser("info", help="show an index's manifest (format, corpus, tokenizer, components) and "
                                        "what metadata its documents carry")
    info.add_argument("dir", type=Path)
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=_cmd_index_info)
    verify = isub.add_parser("verify", help="check an index fully: structure, every file's SHA-256, every record")
    verify.add_argument("dir", type=Path)
    verify.set_defaults(func=_cmd_index_verify)
    add_export_parser(isub)
