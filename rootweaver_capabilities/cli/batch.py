"""``rootweaver batch``: answer a JSONL file of questions into a JSONL file (resumable; local
processes or a Ray cluster)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rootweaver_capabilities.batch.base import CHUNK
from rootweaver_capabilities.cli.argtypes import positive_int

__all__ = ["add_batch_parser"]


def _cmd_batch(args: argparse.Namespace) -> int:
    """Run the batch; exit 0 when every question is answered, 1 when some failed (rerun to retry)."""
    from rootweaver_capabilities.batch.run import BatchInputError, run_batch
    from rootweaver_capabilities.config import MultiHopConfig

    if args.ray is not None and args.ray != "auto" and ":" not in args.ray:
        raise BatchInputError(f"--ray must be 'auto' or HOST:PORT of a Ray cluster, got {args.ray!r}")
    config = MultiHopConfig.load(args.config)
    s = run_batch(args.questions, args.out, config, workers=args.workers, ray_address=args.ray, chunk=args.chunk,
                  show_progress=not args.quiet)
    lost = f", {s.lost_workers} worker(s) lost, {s.resubmitted} chunk(s) resubmitted" if s.lost_workers else ""
    nodes = f"; per Ray node: {json.dumps(s.per_node)}" if s.per_node else ""
    first = f" (first answer after {s.first_answer_s:.1f} s)" if s.first_answer_s is not None else ""
    print(f"rootweaver batch: {s.answered} answered, {s.skipped} already in {args.out}, {len(s.failed)} failed "
          f"in {s.seconds:.1f} s{first}{lost}{nodes}", file=sys.stderr)
    return 1 if s.failed else 0


def add_batch_parser(sub: Any) -> None:
    """``batch`` on the top-level subparsers ``sub``."""
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
