"""SIGINT and SIGTERM as one exception, so long commands unwind through their ``finally``.

Contract (issue 27): a command run under :func:`signals_as_exceptions` that receives
SIGINT or SIGTERM raises :class:`Interrupted` at the point it was running; its clean-up
(temporary directories, worker processes) runs on the way out, and the CLI prints one
line (``rootweaver: interrupted by SIGTERM; partial work removed``) and exits
``128 + signal number``, never with a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Interrupted", "signals_as_exceptions"]


class Interrupted(BaseException):
    """A SIGINT or SIGTERM received inside :func:`signals_as_exceptions` (a ``BaseException``,
    so no ``except Exception`` in between swallows it)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}; partial work removed")
        self.signum = signum


def _raise(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Inside the block (main thread only; elsewhere a no-op), SIGINT and SIGTERM raise
    :class:`Interrupted`; the previous handlers are restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
