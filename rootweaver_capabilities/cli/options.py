"""Options several commands share, and options that stand for a config knob: their default and
help come from the config schema (:func:`~rootweaver_capabilities.config.reference.find_knob`),
so the command line and a YAML config start from the same values."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rootweaver_innovations.defaults import BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS

from rootweaver_capabilities.cli.argtypes import positive_int
from rootweaver_capabilities.config.reference import find_knob

__all__ = ["SHIPPED_CONFIG", "chunking_options", "conventions_option", "knob_option", "service_config_option"]

SHIPPED_CONFIG = Path("configs/retrieval/multi_hop.yaml")


def knob_option(parser: Any, flag: str, key: str, *, help: str | None = None, **kwargs: Any) -> argparse.Action:
    """Add ``flag`` to ``parser`` (a parser or an argument group) standing for the knob ``key``:
    its default is the knob's, its help ``help`` (default: the knob's description) followed by
    the default and the key. ``KeyError`` for an unknown key."""
    knob = find_knob(key)
    doc = knob.doc.rstrip(".")
    text = (help or (doc[:1].lower() if doc[1:2].islower() else doc[:1]) + doc[1:]).replace("%", "%%")
    return parser.add_argument(flag, default=knob.default, help=f"{text} (default %(default)s; config {key})",
                               **kwargs)


def chunking_options(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--overlap-tokens``: how a folder corpus is cut into chunks."""
    knob_option(parser, "--chunk-tokens", "retriever.chunking.chunk_tokens", type=positive_int,
                help="a folder corpus: largest chunk in reader tokens")
    knob_option(parser, "--overlap-tokens", "retriever.chunking.overlap_tokens", type=int,
                help="a folder corpus: tokens a chunk repeats from the previous one")


def service_config_option(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` of the long-running services (``serve``, ``mcp``): the shipped config by default."""
    parser.add_argument("--config", type=Path, default=SHIPPED_CONFIG,
                        help="the capability YAML (default %(default)s)")


def conventions_option(parser: argparse.ArgumentParser) -> None:
    """``--conventions``: the corpus and language rules (``rootweaver_innovations.conventions``);
    ``None`` when not given: an index's own, else the default."""
    knob_option(parser, "--conventions", "conventions", choices=BUILTIN_CONVENTIONS,
                help="corpus and language rules: wikipedia (lead subjects, name forms, comparison questions) or "
                     f"plain (headings and file names only); not given: the index's, else {DEFAULT_CONVENTIONS}")
