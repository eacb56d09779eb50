"""Argument types and the one-line-error parser shared by the product CLI and the eval CLI."""

from __future__ import annotations

import argparse

__all__ = ["OneLineParser", "positive_int"]


def positive_int(text: str) -> int:
    """An int > 0 (``argparse.ArgumentTypeError`` otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr with exit code 2."""

    def error(self, message: str) -> None:
        self.exit(2, f"rootweaver: error: {message}\n")
