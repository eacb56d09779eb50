"""Options several commands share (``ask`` and ``index build``)."""

from __future__ import annotations

import argparse

from rootweaver_innovations.defaults import BUILTIN_CONVENTIONS, CHUNK_TOKENS, DEFAULT_CONVENTIONS, OVERLAP_TOKENS

from rootweaver_capabilities.cli.argtypes import positive_int

__all__ = ["chunking_options", "conventions_option"]


def chunking_options(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--overlap-tokens``: how a folder corpus is cut into chunks."""
    parser.add_argument("--chunk-tokens", type=positive_int, default=CHUNK_TOKENS,
                        help="a folder corpus: largest chunk in reader tokens (default %(default)s)")
    parser.add_argument("--overlap-tokens", type=int, default=OVERLAP_TOKENS,
                        help="a folder corpus: tokens a chunk repeats from the previous one (default %(default)s)")


def conventions_option(parser: argparse.ArgumentParser) -> None:
    """``--conventions``: the corpus and language rules (``rootweaver_innovations.conventions``).
    ``None`` when not given: an index's own, else the default."""
    parser.add_argument("--conventions", choices=BUILTIN_CONVENTIONS,
                        help=f"corpus and language rules: wikipedia (lead subjects, name forms, comparison "
                             f"questions) or plain (headings and file names only); default: the index's, "
                             f"else {DEFAULT_CONVENTIONS}")
