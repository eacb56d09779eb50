"""One wall-clock deadline per request.

:func:`request_deadline` opens a deadline that the calls inside share (this thread or
task only; nested, the earlier one wins); :func:`remaining_s` reads it. The HTTP client's
transport (:func:`deadline_transport`) enforces it at the socket: each connect, read and
write waits at most for the time left, so a server that trickles one byte at a time or
hangs mid-body cannot stretch a request (httpx's own timeouts are per read).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["deadline_transport", "remaining_s", "request_deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("rootweaver_llm_deadline", default=None)


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[float]:
    """Open a wall-clock deadline ``seconds`` from now for the calls inside (this thread or
    task only). Nested: the earlier deadline wins. Yields the monotonic deadline."""
    now = time.monotonic()
    outer = _DEADLINE.get()
    deadline = now + seconds if outer is None else min(outer, now + seconds)
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the current deadline (may be <= 0); ``None`` outside one."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def _clamp(timeout: float | None, exc: type[Exception]) -> float | None:
    left = remaining_s()
    if left is None:
        return timeout
    if left <= 0:
        raise exc("request deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read/write waits at most until the request deadline."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _clamp(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend with connects and streams bounded by the request deadline."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _clamp(timeout, httpcore.ConnectTimeout),
                                                       local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _clamp(timeout, httpcore.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport() -> httpx.HTTPTransport:
    """httpx's transport on the deadline backend (httpx has no parameter for the backend,
    so the pool's is replaced; tests/readers/test_llm_faults.py fails if this stops working)."""
    transport = httpx.HTTPTransport()
    transport._pool._network_backend = _DeadlineBackend()  # noqa: SLF001
    return transport

