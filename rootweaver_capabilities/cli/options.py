"""Options several commands share, and options that stand for a config knob: their default and
help come from the config schema (:func:`~rootweaver_capabilities.config.reference.find_knob`),
so the command line and a YAML config start from the same values."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rootweaver_innovations.defaults import BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS

from rootweaver_capabilities.cli.argtypes import UsageError, positive_int
from rootweaver_capabilities.config.reference import find_knob

__all__ = ["api_key_options", "chunking_options", "conventions_option", "knob_option",
           "service_config_option", "service_keys"]

_KEY_OPTIONS = ("api_key_file", "api_key", "insecure_no_key")


def knob_option(parser: Any, flag: str, key: str, *, help: str | None = None, **kwargs: Any) -> argparse.Action:
    """Add ``flag`` to ``parser`` (a parser or an argument group) standing for the knob ``key``:
    its default is the knob's, its help ``help`` (default: the knob's description) followed by
    the default (unless ``None``: ``help`` says what then) and the key. ``KeyError`` for an unknown key."""
    knob = find_knob(key)
    doc = knob.doc.rstrip(".")
    text = (help or (doc[:1].lower() if doc[1:2].islower() else doc[:1]) + doc[1:]).replace("%", "%%")
    default = "" if knob.default is None else "default %(default)s; "
    return parser.add_argument(flag, default=knob.default, help=f"{text} ({default}config {key})", **kwargs)


def chunking_options(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--overlap-tokens``: how a folder corpus is cut into chunks."""
    knob_option(parser, "--chunk-tokens", "retriever.chunking.chunk_tokens", type=positive_int,
                help="a folder corpus: largest chunk in reader tokens")
    knob_option(parser, "--overlap-tokens", "retriever.chunking.overlap_tokens", type=int,
                help="a folder corpus: tokens a chunk repeats from the previous one")


def service_config_option(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` of the long-running services (``serve``, ``mcp``); not given: every default."""
    parser.add_argument("--config", type=Path, help="the capability YAML (default: every default, as "
                        "configs/retrieval/multi_hop.yaml sets them)")


def conventions_option(parser: argparse.ArgumentParser) -> None:
    """``--conventions``: the corpus and language rules (``rootweaver_innovations.conventions``);
    ``None`` when not given: an index's own, else the default."""
    knob_option(parser, "--conventions", "conventions", choices=BUILTIN_CONVENTIONS,
                help="corpus and language rules: wikipedia (lead subjects, name forms, comparison questions) or "
                     f"plain (headings and file names only); not given: the index's, else {DEFAULT_CONVENTIONS}")


def api_key_options(parser: argparse.ArgumentParser) -> None:
    """``--api-key-file``, ``--api-key`` and ``--insecure-no-key`` of a service's ``--http`` mode."""
    parser.add_argument("--api-key-file", type=Path, metavar="FILE",
                        help="--http: accept the API keys in FILE (one a line; blank lines and # comments "
                             "ignored) as 'Authorization: Bearer KEY', as well as $ROOTWEAVER_API_KEY")
    parser.add_argument("--api-key", metavar="KEY",
                        help="--http: accept KEY too (it shows in `ps` and the shell history: prefer "
                             "$ROOTWEAVER_API_KEY or --api-key-file)")
    parser.add_argument("--insecure-no-key", action="store_true",
                        help="--http: serve anyone who reaches the port even on a non-loopback address")


def service_keys(args: argparse.Namespace) -> tuple[str, ...]:
    """The API keys of a service started with ``args`` (:func:`api_key_options`);
    :class:`UsageError` when they are given without ``--http``, cannot be read, or are missing
    for a non-loopback host without ``--insecure-no-key``."""
    from rootweaver_capabilities.serving.auth import load_api_keys, require_key

    if args.http is None:
        given = [f"--{k.replace('_', '-')}" for k in _KEY_OPTIONS if getattr(args, k) not in (None, False)]
        if given:
            raise UsageError(f"{', '.join(given)}: for --http only (stdio and stdin take no API key)")
        return ()
    try:
        keys = load_api_keys(args.api_key_file, args.api_key)
        require_key(args.http[0], keys, args.insecure_no_key)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return keys
