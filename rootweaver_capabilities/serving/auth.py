"""A key on the door of ``serve --http`` and ``mcp --http``: API keys, where they come from, and
the ASGI middleware that checks them.

Keys come from ``$ROOTWEAVER_API_KEY``, an ``--api-key-file`` (one key a line; blank lines and
``#`` comments ignored) and ``--api-key``; every one of them is accepted. They are distinct
from the reader's key (``llm.api_key_env``). A key is at least :data:`MIN_KEY_CHARS` visible
ASCII characters; anything else (an unreadable or empty file, a short key) is a
:class:`ApiKeyError`, one line naming the file and line or the variable, never the key.

:class:`ApiKeyGate` wants ``Authorization: Bearer <key>``, compared in constant time with every
configured key (:func:`hmac.compare_digest`); a missing or wrong key gets 401
``{"error": "missing or invalid API key"}`` with ``WWW-Authenticate: Bearer`` and nothing else.
Only ``GET``/``HEAD`` of ``/healthz``, ``/`` and files under ``/static/`` are public (and
``/metrics`` with ``service.metrics_public``). Keys are never echoed: every response body and
header is scrubbed of them (in every encoding of
:func:`~rootweaver_capabilities.readers.redaction.secret_forms`; a body is scrubbed chunk by
chunk, and the services send each JSON answer and each stream event as one chunk), and
:func:`redact_logs` scrubs them from every log record of the process.

A service on a non-loopback address without a key is refused at start (:func:`require_key`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rootweaver_capabilities.readers.redaction import REDACTED, redact, secret_forms

__all__ = ["API_KEY_ENV", "MIN_KEY_CHARS", "ApiKeyGate", "ApiKeyError", "is_loopback", "load_api_keys",
           "redact_logs", "require_key"]

API_KEY_ENV = "ROOTWEAVER_API_KEY"
MIN_KEY_CHARS = 16
UNAUTHORIZED = b'{"error":"missing or invalid API key"}'
_PUBLIC = ("/healthz", "/")
_PUBLIC_PREFIX = "/static/"


class ApiKeyError(ValueError):
    """The API keys cannot be read; the one-line message names where, never the key."""


def _checked(key: str, where: str) -> str:
    if len(key) < MIN_KEY_CHARS or not all("!" <= c <= "~" for c in key):
        raise ApiKeyError(f"{where}: an API key must be at least {MIN_KEY_CHARS} visible ASCII characters "
                           "(no spaces); the value is not shown")
    return key


def load_api_keys(key_file: Path | None = None, key: str | None = None,
                  environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The configured keys, in order: ``$ROOTWEAVER_API_KEY`` (unset or blank: none), the lines
    of ``key_file``, ``key``; duplicates dropped. :class:`ApiKeyError` for an unreadable file,
    a file holding no key, or a malformed key."""
    keys: list[str] = []
    if environ.get(API_KEY_ENV, "").strip():
        keys.append(_checked(environ[API_KEY_ENV].strip(), f"${API_KEY_ENV}"))
    if key_file is not None:
        try:
            lines = key_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ApiKeyError(f"--api-key-file {key_file}: cannot read it ({reason})") from None
        found = [(n, line.strip()) for n, line in enumerate(lines, 1)
                 if line.strip() and not line.lstrip().startswith("#")]
        if not found:
            raise ApiKeyError(f"--api-key-file {key_file}: no key in it (one key a line; blank lines and "
                               "# comments are ignored)")
        keys += [_checked(k, f"--api-key-file {key_file}:{n}") for n, k in found]
    if key is not None:
        keys.append(_checked(key.strip(), "--api-key"))
    return tuple(dict.fromkeys(keys))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only: ``localhost``, 127.0.0.0/8 or ``::1``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def require_key(host: str, keys: Sequence[str], insecure_no_key: bool) -> None:
    """``ValueError`` (one line) when a service would listen on a non-loopback ``host`` with no
    key and ``insecure_no_key`` does not say that is meant."""
    if not keys and not insecure_no_key and not is_loopback(host):
        raise ValueError(f"{host} is reachable from other machines and no API key is set: set ${API_KEY_ENV} or "
                         "--api-key-file FILE (or pass --insecure-no-key to serve anyone who reaches the port)")


class _Scrubber:
    """Replaces every form of the keys in bytes and in text with ``[redacted]``."""

    def __init__(self, keys: Iterable[str]):
        self.keys = tuple(keys)
        forms = {f.encode("utf-8") for k in self.keys for f in secret_forms(k)}
        self._forms = sorted(forms, key=len, reverse=True)

    def data(self, data: bytes) -> bytes:
        for form in self._forms:
            if form in data:
                data = data.replace(form, REDACTED.encode())
        return data

    def text(self, text: str) -> str:
        return redact(text, self.keys)


class ApiKeyGate:
    """ASGI middleware: ``Authorization: Bearer <key>`` on every route but the public ones,
    responses scrubbed of the keys (see the module docstring). ``keys`` must not be empty."""

    def __init__(self, app: Any, keys: Sequence[str], *, metrics_public: bool = False):
        if not keys:
            raise ValueError("ApiKeyGate needs at least one key")
        self.app = app
        self._keys = tuple(k.encode("ascii") for k in keys)
        self._scrub = _Scrubber(keys)
        self._public = _PUBLIC + (("/metrics",) if metrics_public else ())

    def _is_public(self, scope: dict) -> bool:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return False
        path: str = scope["path"]
        return path in self._public or (path.startswith(_PUBLIC_PREFIX) and ".." not in path.split("/"))

    def _authorized(self, scope: dict) -> bool:
        value = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = value.partition(b" ")
        token = token.strip()
        matched = False
        for key in self._keys:  # every key, so the time taken does not tell which one nearly matched
            matched |= hmac.compare_digest(token, key)
        return matched and scheme.lower() == b"bearer"

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self._is_public(scope) and not self._authorized(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(UNAUTHORIZED)).encode()),
                (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": UNAUTHORIZED})
            return
        await self.app(scope, receive, self._scrubbing(send) if scope["type"] == "http" else send)

    def _scrubbing(self, send: Callable) -> Callable:
        """``send`` with the keys scrubbed from the response's headers and body; the start is
        held until the first body chunk, so that a whole body gets its new Content-Length and
        a streamed one is sent without one."""
        held: list[dict] = []

        async def scrubbed(message: dict) -> None:
            if message["type"] == "http.response.start":
                held.append(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            body = self._scrub.data(message.get("body", b""))
            if held:
                start = held.pop()
                headers = [(k, self._scrub.data(v)) for k, v in start.get("headers", ())
                           if k.lower() != b"content-length"]
                if not message.get("more_body", False):
                    headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
            await send({**message, "body": body})

        return scrubbed


class _RedactingRecords:
    """A log record factory that scrubs the keys from a record's message and traceback."""

    def __init__(self, inner: Callable[..., logging.LogRecord], keys: Iterable[str]):
        self.inner = inner
        self.scrubber = _Scrubber(keys)

    def add(self, keys: Iterable[str]) -> None:
        self.scrubber = _Scrubber({*self.scrubber.keys, *keys})

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed call is logging's to report, with its own record
            return record
        clean = self.scrubber.text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            if self.scrubber.text(text) != text:
                record.exc_text = self.scrubber.text(text)
        if record.stack_info:
            record.stack_info = self.scrubber.text(record.stack_info)
        return record


def redact_logs(keys: Iterable[str]) -> None:
    """Scrub ``keys`` from every log record this process makes from now on (message, traceback
    and stack), whichever logger and handler it goes to; calling again adds keys."""
    current = logging.getLogRecordFactory()
    if isinstance(current, _RedactingRecords):
        current.add(keys)
    else:
        logging.setLogRecordFactory(_RedactingRecords(current, keys))
