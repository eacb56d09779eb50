"""Argument types, the usage error and the one-line-error parser shared by the product CLI and the eval CLI."""

from __future__ import annotations

import argparse

__all__ = ["OneLineParser", "UsageError", "host_port", "positive_int"]


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def positive_int(text: str) -> int:
    """An int > 0 (``argparse.ArgumentTypeError`` otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def host_port(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> ``(host, port)``; the host defaults to 127.0.0.1, the port is 0-65535."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT with PORT in 0-65535, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr with exit code 2."""

    def error(self, message: str) -> None:
        self.exit(2, f"rootweaver: error: {message}\n")
