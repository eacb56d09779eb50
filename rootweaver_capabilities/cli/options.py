"""Options several commands share (``ask`` and ``index build``)."""

from __future__ import annotations

import argparse

from rootweaver_innovations.defaults import CHUNK_TOKENS, OVERLAP_TOKENS

from rootweaver_capabilities.cli.argtypes import positive_int

__all__ = ["chunking_options"]


def chunking_options(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--overlap-tokens``: how a folder corpus is cut into chunks."""
    parser.add_argument("--chunk-tokens", type=positive_int, default=CHUNK_TOKENS,
                        help="a folder corpus: largest chunk in reader tokens (default %(default)s)")
    parser.add_argument("--overlap-tokens", type=int, default=OVERLAP_TOKENS,
                        help="a folder corpus: tokens a chunk repeats from the previous one (default %(default)s)")
