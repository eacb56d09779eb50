"""SIGINT and SIGTERM turned into one exception at safe points, so long commands unwind
through their ``finally``.

Contract: inside :func:`signals_as_exceptions`, a SIGINT or SIGTERM is latched
by the handler and raised as :class:`Interrupted` by the next :meth:`SignalLatch.check`
(a point where the command holds no lock: raising from the handler itself could land
inside a thread pool's internal lock and deadlock its shutdown); a second signal raises
at once. The command's clean-up (temporary directories, worker processes) runs on the way
out, and the CLI prints one line (``rootweaver: interrupted by SIGTERM; partial work
removed``) and exits ``128 + signal number``, never with a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Interrupted", "SignalLatch", "signals_as_exceptions"]


class Interrupted(BaseException):
    """A SIGINT or SIGTERM received inside :func:`signals_as_exceptions` (a ``BaseException``,
    so no ``except Exception`` in between swallows it)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}; partial work removed")
        self.signum = signum


class SignalLatch:
    """The first signal received (``signum``, ``None`` before any); :meth:`check` raises it."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def handle(self, signum: int, _frame: object) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)
        self.signum = signum

    def check(self) -> None:
        """Raise :class:`Interrupted` when a signal was received."""
        if self.signum is not None:
            raise Interrupted(self.signum)


@contextlib.contextmanager
def signals_as_exceptions() -> Iterator[SignalLatch]:
    """Inside the block (main thread only; elsewhere signals keep their handlers), SIGINT
    and SIGTERM are latched (see the module docstring); the latch is checked once more on
    leaving the block, and the previous handlers are restored."""
    latch = SignalLatch()
    if threading.current_thread() is not threading.main_thread():
        yield latch
        return
    previous = {s: signal.signal(s, latch.handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield latch
        latch.check()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
