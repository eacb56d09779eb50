"""``rootweaver`` command line: ask a multi-hop question, build a corpus index, run the evals.

Exit codes: 0 success, 1 an eval check failed, 2 bad input (one-line message on stderr).
Building the parser imports only light modules (no numpy, yaml, retrieval, packing or
capability) and each command imports what it runs, so ``--help`` takes a few times bare
Python's start (``benchmarks/bench_cli_start.py``). This module assembles the parser from
the commands' modules (``ask``, ``batch``, ``serve``, ``mcp``, ``index``), finds the plug-in
commands and maps errors to exit codes.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from rootweaver_capabilities.batch.base import BatchError
from rootweaver_capabilities.cli.argtypes import OneLineParser, UsageError
from rootweaver_capabilities.cli.ask import add_ask_parser
from rootweaver_capabilities.cli.batch import add_batch_parser
from rootweaver_capabilities.cli.index import add_index_parser
from rootweaver_capabilities.cli.interrupts import Interrupted
from rootweaver_capabilities.cli.mcp import add_mcp_parser
from rootweaver_capabilities.cli.safe_output import terminal_safe
from rootweaver_capabilities.cli.serve import add_serve_parser

COMMANDS_GROUP = "rootweaver.commands"  # entry points adding subcommands (the evals register `eval`)

__all__ = ["main"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; plug-in commands (entry points in :data:`COMMANDS_GROUP`) are listed,
    and the one named ``command`` adds its own parser (so only a command that runs is imported).
    When ``command`` is a built-in one, the plug-ins are not looked up: finding entry points
    costs more than the rest of the start, and only the top-level help and errors name them."""
    p = OneLineParser(prog="rootweaver", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    add_ask_parser(sub)
    add_batch_parser(sub)
    add_serve_parser(sub)
    add_mcp_parser(sub)
    add_index_parser(sub)
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


class _WarningLines(logging.Handler):
    """Warnings of the ``rootweaver.*`` loggers (a file read with a problem, a retriever mode
    that fell back) as one ``rootweaver: <message>`` line each on the current stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"rootweaver: {terminal_safe(record.getMessage(), one_line=True)}", file=sys.stderr)


def _warnings_as_lines() -> None:
    log = logging.getLogger("rootweaver")
    if not any(isinstance(h, _WarningLines) for h in log.handlers):
        log.addHandler(_WarningLines(logging.WARNING))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit code
    (bad input: one line on stderr and 2; interrupted by signal N: 128 + N)."""
    _warnings_as_lines()
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
