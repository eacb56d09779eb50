"""OpenAI-compatible chat client (vLLM, llama.cpp's server) and the LLM synthesizer.

The client speaks ``POST {base_url}/chat/completions``. Before anything is sent the
prompt is counted with the reader's tokenizer (or the server's tokenize endpoint) and
refused when it does not fit the context window with the output tokens reserved: there
is no silent truncation (:class:`LLMSynthesizer` shrinks the synth context to fit first).
Timeouts, connection errors, HTTP 5xx and 429 are retried a bounded number of times with
exponential backoff; then a typed error carries the packet that was to be sent, so
nothing is lost.

**One wall-clock deadline per request.** ``timeout_s`` bounds a whole ``chat()`` call:
token counting, every attempt, every backoff sleep. It is enforced at the socket: each
connect, read and write of the client's own transport waits at most for the time left,
so a server that trickles one byte at a time or hangs mid-body cannot stretch a request
(httpx's own timeouts are per read). :func:`request_deadline` opens a deadline that
several calls share (the synthesizer's whole answer: counting, the evidence retry).

**No secrets in error text.** Text taken from a response (bodies, transport messages)
is scrubbed of the API key (raw, JSON-escaped, percent-encoded and base64, at any
alignment) and of any ``Authorization`` / ``Bearer`` value before it reaches an exception
or an answer, so a server that echoes request headers cannot leak the key into a
message, an answer or a log.

**Bounded replies.** A reply body is read as a stream and refused
(:class:`LLMReplyTooLargeError`) as soon as its decompressed size passes
``max_reply_bytes``: a gzip bomb costs at most that much memory.

Exception tree (``kind`` is the short name the capability records)::

    LLMError                      base; every instance carries ``packet`` (ChatPacket)
     +-- PromptTooLongError       prompt_too_long: prompt + reserved output > window (not sent)
     +-- LLMUnavailableError      unavailable: retries exhausted (timeouts, connection errors, 5xx, 429)
     |    +-- LLMDeadlineError    deadline: the request's wall-clock deadline passed
     +-- LLMRequestError          refused: the server refused the request (4xx other than 429)
     +-- LLMResponseError         bad_response: HTTP 200 but not an OpenAI chat completion
          +-- LLMNullContentError  null_content: a chat completion whose message content is null
          +-- LLMReplyTooLargeError reply_too_large: the (decompressed) reply passed ``max_reply_bytes``

Install with ``pip install 'rootweaver[llm]'`` (httpx; ``tokenizers`` is a core dependency).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import httpcore
import httpx

from rootweaver_innovations.compaction.budget import Budget, QwenTokenCounter, TokenCounter
from rootweaver_innovations.compaction.line import CompactionRequest
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.answer_rules.extractive import extractive_answer, load_extractive
from rootweaver_innovations.compaction.strategies import DEFAULT_STRATEGY, Compactor, make_compactor

from rootweaver_capabilities.readers.prompts import (
    MODE_EVIDENCE,
    MODES,
    NumberedContext,
    ReaderAnswer,
    answer_only_messages,
    ask_with_evidence,
    evidence_messages,
    number_facts,
    parse_answer_only,
)

__all__ = [
    "TOKENIZER_ENV",
    "ChatClient",
    "ChatCompletion",
    "ChatPacket",
    "LLMDeadlineError",
    "LLMError",
    "LLMNullContentError",
    "LLMReplyTooLargeError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMSynthesizer",
    "LLMUnavailableError",
    "LlamaCppServerCounter",
    "OpenAIChatClient",
    "PromptTooLongError",
    "ReaderAnswer",
    "chat_body",
    "redact",
    "remaining_s",
    "render_chatml",
    "request_deadline",
    "resolve_token_counter",
    "scrub",
    "secret_forms",
]

TOKENIZER_ENV = "ROOTWEAVER_TOKENIZER_JSON"


@dataclass(frozen=True, slots=True, eq=True)
class ChatPacket:
    """Exactly what is (or was to be) POSTed: the URL, the JSON body, the counted prompt size.

    Counting goes through the same retry policy as the POST (a server-side tokenizer can
    be down too); an error raised while counting carries ``prompt_tokens=None``.

    ``body`` holds ``model``, ``messages`` and the sampling parameters; the API key is a
    header and never part of the packet.
    """

    url: str
    body: Mapping[str, Any]
    prompt_tokens: int | None  # None only when the error arose while counting

    @property
    def messages(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.body["messages"]]


@dataclass(frozen=True, slots=True)
class ChatCompletion:
    """The reply text and what the server reported about it."""

    text: str
    finish_reason: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int
    latency_s: float


class LLMError(RuntimeError):
    """Base of the client's errors; ``packet`` is the request that was (to be) sent."""

    kind = "error"

    def __init__(self, message: str, packet: ChatPacket):
        super().__init__(message)
        self.packet = packet


class PromptTooLongError(LLMError):
    """The prompt does not fit; raised before any network call."""

    kind = "prompt_too_long"

    def __init__(self, packet: ChatPacket, context_window: int, reserved_output: int):
        super().__init__(
            f"prompt has {packet.prompt_tokens} tokens; with {reserved_output} output tokens reserved "
            f"the context window of {context_window} allows at most {context_window - reserved_output}",
            packet,
        )
        self.prompt_tokens = packet.prompt_tokens
        self.context_window = context_window
        self.reserved_output = reserved_output


class LLMUnavailableError(LLMError):
    """Every attempt failed with a retryable error; ``errors`` lists one line per attempt."""

    kind = "unavailable"

    def __init__(self, packet: ChatPacket, attempts: int, errors: Sequence[str]):
        super().__init__(f"LLM unavailable after {attempts} attempt(s): {errors[-1] if errors else 'no attempt'}",
                         packet)
        self.attempts = attempts
        self.errors = tuple(errors)


class LLMDeadlineError(LLMUnavailableError):
    """The request's wall-clock deadline passed (``attempts`` made so far, possibly 0)."""

    kind = "deadline"

    def __init__(self, packet: ChatPacket, attempts: int, errors: Sequence[str], deadline_s: float):
        super().__init__(packet, attempts, [*errors, f"deadline of {deadline_s:g} s passed"])
        self.deadline_s = deadline_s


class LLMRequestError(LLMError):
    """The server answered 4xx (not 429): retrying the same packet cannot help."""

    kind = "refused"

    def __init__(self, packet: ChatPacket, status: int, detail: str):
        super().__init__(f"server refused the request with HTTP {status}: {detail}", packet)
        self.status = status
        self.detail = detail


class LLMResponseError(LLMError):
    """HTTP 200 whose body is not a chat completion."""

    kind = "bad_response"


class LLMNullContentError(LLMResponseError):
    """A chat completion whose ``message.content`` is ``null`` (no answer at all, which an
    empty string would hide)."""

    kind = "null_content"


class LLMReplyTooLargeError(LLMResponseError):
    """The reply body, decompressed, passed the client's ``max_reply_bytes``; reading stopped
    there (a gzip bomb is refused at the cap, not inflated)."""

    kind = "reply_too_large"


DEFAULT_MAX_REPLY_BYTES = 8 << 20
_AUTH_VALUE = re.compile(r"""(?i)(authorization\W{0,4}?\s*[:=]\s*["']?)[^"'\r\n,;}]+""")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{4,}")
REDACTED = "[redacted]"


def secret_forms(secret: str) -> tuple[str, ...]:
    """The strings under which ``secret`` can be echoed back: itself, JSON-escaped (with and
    without ``\\/``), percent-encoded (``quote``, ``quote_plus``, upper and lower hex), and
    the base64 and URL-safe base64 of every byte alignment (the 4-character groups that
    depend on the secret's bytes alone, so the secret inside any longer base64 text is
    found). Longest first; empty for an empty secret."""
    if not secret:
        return ()
    import base64
    import json
    from urllib.parse import quote, quote_plus

    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/"),
             json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe=""), quote_plus(secret, safe="")}
    forms |= {f.lower() for f in forms if "%" in f}
    raw = secret.encode("utf-8")
    for shift in range(3):
        first, end = -(-shift // 3), (shift + len(raw)) // 3  # whole 3-byte groups inside the secret
        if end - first < 2:
            continue
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(encode(b"\0" * shift + raw).decode("ascii")[4 * first:4 * end])
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every secret in ``secrets``, in every form of :func:`secret_forms`,
    replaced by ``[redacted]`` (for a reader's answer: nothing else is touched)."""
    for secret in secrets:
        for form in secret_forms(secret):
            text = text.replace(form, REDACTED)
    return text


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """:func:`redact` of ``text`` and every ``Authorization`` / ``Bearer`` value replaced by
    ``[redacted]`` too (for text that came from a server or a transport)."""
    text = redact(text, secrets)
    text = _AUTH_VALUE.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


# ---------------------------------------------------------------- the request deadline

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


def _deadline_transport() -> httpx.HTTPTransport:
    """httpx's transport on the deadline backend (httpx has no parameter for the backend,
    so the pool's is replaced; tests/readers/test_llm_faults.py fails if this stops working)."""
    transport = httpx.HTTPTransport()
    transport._pool._network_backend = _DeadlineBackend()  # noqa: SLF001
    return transport


def render_chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """The ChatML prompt the server builds (``--chat_format chatml``; Qwen's template when a
    system message is present), including the assistant generation prefix."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class LlamaCppServerCounter:
    """Counts with the model actually loaded: llama-cpp-python's ``/extras/tokenize/count``.

    A :class:`~rootweaver_innovations.compaction.packing.TokenCounter`; HTTP errors propagate (the
    client retries them under its policy).
    """

    name = "llama.cpp-server"

    def __init__(self, base_url: str, *, timeout_s: float = 10.0, http: httpx.Client | None = None):
        self.url = f"{_server_root(base_url)}/extras/tokenize/count"
        self._http = http or httpx.Client(timeout=timeout_s)

    def count(self, text: str) -> int:
        resp = self._http.post(self.url, json={"input": text})
        resp.raise_for_status()
        return int(resp.json()["count"])


def _server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def resolve_token_counter(base_url: str, *, http: httpx.Client | None = None) -> TokenCounter:
    """The server's tokenizer when it exposes one (llama.cpp), else the Qwen2.5 tokenizer:
    ``$ROOTWEAVER_TOKENIZER_JSON`` when set, otherwise the copy shipped with the package."""
    counter = LlamaCppServerCounter(base_url, http=http)
    try:
        counter.count("probe")
        return counter
    except (httpx.HTTPError, KeyError, ValueError):
        return QwenTokenCounter(os.environ.get(TOKENIZER_ENV) or None)


class ChatClient(Protocol):
    """What the synthesizer and the evals need from a reader, over HTTP or in-process.

    ``context_window`` (prompt + answer tokens), ``max_tokens`` (reserved for the answer
    unless a call passes its own) and ``timeout_s`` (the wall-clock deadline of one
    request) describe the reader; ``count_prompt_tokens`` counts rendered messages with the
    reader's own tokenizer; ``load`` does the one-off set-up (tokenizer, model) so the
    first request does not pay for it; ``chat`` raises :class:`LLMError` subclasses only.
    """

    transport: str  # "openai" | "local": shown in answers as "<transport>:<model>"
    model: str
    context_window: int
    max_tokens: int
    timeout_s: float

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int: ...

    def load(self) -> None: ...

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> ChatCompletion: ...


def chat_body(model: str, messages: Sequence[Mapping[str, str]], *, temperature: float, out_tokens: int,
              seed: int | None, context_window: int) -> dict[str, Any]:
    """The chat-completions request body both transports send (or, in process, report);
    ``ValueError`` for empty or malformed messages, a negative temperature or an output
    reservation outside ``(0, context_window)``."""
    if not messages:
        raise ValueError("messages must not be empty")
    for m in messages:
        if set(m) != {"role", "content"} or m["role"] not in {"system", "user", "assistant"}:
            raise ValueError(f"each message needs exactly role (system|user|assistant) and content, got {m!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0 < out_tokens < context_window:
        raise ValueError(f"max_tokens must be in (0, {context_window}), got {out_tokens}")
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "temperature": temperature,
        "max_tokens": out_tokens,
    }
    if seed is not None:
        body["seed"] = seed
    return body


class OpenAIChatClient:
    """Chat completions against an OpenAI-compatible server.

    ``base_url`` includes the API prefix (``http://127.0.0.1:8765/v1``). The API key is read
    from ``os.environ[api_key_env]`` at construction (no header when unset or
    ``api_key_env`` is ``None``). ``timeout_s`` is the wall-clock deadline of one ``chat()``
    call, every attempt included (see the module docstring); a call inside an outer
    :func:`request_deadline` keeps the earlier deadline. ``max_retries`` retries follow the
    first attempt, waiting ``backoff_s * 2**i`` before retry ``i`` (0-based), cut short by
    the deadline. ``context_window`` is the server's
    (``--n_ctx`` / ``--max-model-len``); ``max_tokens`` is reserved for the output of every
    call unless a call passes its own. ``token_counter`` defaults to
    :func:`resolve_token_counter`, resolved on first use. ``max_reply_bytes`` caps a reply
    body after decompression (:class:`LLMReplyTooLargeError` past it, not retried).
    ``transport`` and ``sleep`` are for tests. Raises ``ValueError`` on non-positive sizes
    or negative retry settings.
    """

    transport = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        context_window: int = 2048,
        max_tokens: int = 256,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        token_counter: TokenCounter | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_reply_bytes < 1:
            raise ValueError(f"max_reply_bytes must be >= 1, got {max_reply_bytes}")
        if max_retries < 0 or backoff_s < 0:
            raise ValueError(f"max_retries and backoff_s must be >= 0, got {max_retries}, {backoff_s}")
        if context_window < 1 or not 0 < max_tokens < context_window:
            raise ValueError(
                f"need context_window >= 1 and 0 < max_tokens < context_window, got {context_window}, {max_tokens}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.context_window = context_window
        self.max_tokens = max_tokens
        self.max_reply_bytes = max_reply_bytes
        self._counter = token_counter
        self._sleep = sleep
        key = os.environ.get(api_key_env) if api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._secrets = (key,) if key else ()
        self._http = httpx.Client(timeout=timeout_s, transport=transport or _deadline_transport())

    def __enter__(self) -> OpenAIChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = resolve_token_counter(self.base_url, http=self._http)
        return self._counter

    def load(self) -> None:
        """Resolve the token counter now (the probe runs under its own ``timeout_s``
        deadline), so that the first request does not pay for it."""
        with request_deadline(self.timeout_s):
            self.token_counter  # noqa: B018 - resolves and caches

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        """Tokens of the rendered prompt, under the retry policy and one deadline (a
        server-side tokenizer can fail like the chat endpoint)."""
        draft = ChatPacket(f"{self.base_url}/chat/completions", {"model": self.model, "messages": list(messages)},
                           None)
        with request_deadline(self.timeout_s):
            tokens, _ = self._retrying(draft, "token count",
                                       lambda: self.token_counter.count(render_chatml(messages)))
        return tokens

    def build_packet(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> ChatPacket:
        """The request body, counted; ``PromptTooLongError`` when it does not fit."""
        out_tokens = self.max_tokens if max_tokens is None else max_tokens
        body = chat_body(self.model, messages, temperature=temperature, out_tokens=out_tokens, seed=seed,
                         context_window=self.context_window)
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        try:
            tokens = self.count_prompt_tokens(messages)
        except LLMError as exc:  # the error raised while counting carries the full body
            exc.packet = ChatPacket(f"{self.base_url}/chat/completions", body, None)
            raise
        packet = ChatPacket(f"{self.base_url}/chat/completions", body, tokens)
        if tokens + out_tokens > self.context_window:
            raise PromptTooLongError(packet, self.context_window, out_tokens)
        return packet

    def _retrying(self, packet: ChatPacket, step: str, call: Callable[[], Any]) -> tuple[Any, int]:
        """``(call(), attempts)`` under the retry policy and the current deadline.

        Retried: timeouts, transport errors, ``HTTPStatusError`` with 5xx/429. Other status
        errors raise ``LLMRequestError``; exhaustion raises ``LLMUnavailableError``, a
        passed deadline ``LLMDeadlineError``. Response text is scrubbed first.
        """
        errors: list[str] = []
        for attempt in range(1, self.max_retries + 2):
            if attempt > 1:
                left = remaining_s()
                self._sleep(self.backoff_s * 2 ** (attempt - 2) if left is None
                            else max(0.0, min(self.backoff_s * 2 ** (attempt - 2), left)))
            left = remaining_s()
            if left is not None and left <= 0:
                raise LLMDeadlineError(packet, attempt - 1, errors, self.timeout_s)
            try:
                return call(), attempt
            except httpx.TimeoutException as exc:
                errors.append(f"{step} attempt {attempt}: timeout ({type(exc).__name__})")
            except httpx.TransportError as exc:
                errors.append(f"{step} attempt {attempt}: {type(exc).__name__}: {self._scrub(str(exc))}")
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                if status < 500 and status != 429:
                    raise LLMRequestError(packet, status, self._scrub(exc.response.text[:500])) from None
                errors.append(f"{step} attempt {attempt}: HTTP {status}: {self._scrub(exc.response.text[:200])}")
            left = remaining_s()
            if left is not None and left <= 0:
                raise LLMDeadlineError(packet, attempt, errors, self.timeout_s)
        raise LLMUnavailableError(packet, self.max_retries + 1, errors)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def send(self, packet: ChatPacket) -> ChatCompletion:
        """POST ``packet`` with bounded retries; see the module docstring for the errors."""
        started = time.monotonic()

        def post() -> httpx.Response:
            headers = {**self._headers, "Accept-Encoding": "gzip, deflate"}
            with self._http.stream("POST", packet.url, json=dict(packet.body), headers=headers) as streamed:
                body = _read_capped(streamed, self.max_reply_bytes, packet)
            resp = httpx.Response(streamed.status_code, content=body, request=streamed.request)
            resp.raise_for_status()
            return resp

        with request_deadline(self.timeout_s):
            resp, attempts = self._retrying(packet, "chat", post)
        return self._parse(resp, packet, attempts, time.monotonic() - started)

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> ChatCompletion:
        """``send(build_packet(...))`` under one deadline of ``timeout_s``."""
        with request_deadline(self.timeout_s):
            return self.send(self.build_packet(messages, temperature=temperature, max_tokens=max_tokens, seed=seed,
                                               json_mode=json_mode))

    def _parse(self, resp: httpx.Response, packet: ChatPacket, attempts: int, latency: float) -> ChatCompletion:
        try:
            data = resp.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            content = choice["message"]["content"]
            if content is None:
                raise LLMNullContentError(f"the reply's message content is null: {self._scrub(resp.text[:300])}",
                                          packet)
            return ChatCompletion(
                text=redact(str(content), self._secrets),
                finish_reason=str(choice.get("finish_reason") or ""),
                model=str(data.get("model", packet.body["model"])),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                attempts=attempts,
                latency_s=latency,
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMResponseError(self._scrub(f"not a chat completion ({exc!r}): {resp.text[:300]}"), packet) from None


def _read_capped(streamed: httpx.Response, cap: int, packet: ChatPacket) -> bytes:
    """The body of ``streamed``, decompressed here (gzip, deflate or none) at most ``cap + 1``
    bytes at a time, so a compressed bomb is refused at the cap without being inflated:
    :class:`LLMReplyTooLargeError` past ``cap``, :class:`LLMResponseError` for another or a
    corrupt encoding."""
    encoding = streamed.headers.get("content-encoding", "identity").strip().lower() or "identity"
    if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
        raise LLMResponseError(f"reply has an unsupported Content-Encoding {encoding!r}", packet)
    inflate = None if encoding == "identity" else zlib.decompressobj(47 if "gzip" in encoding else 15)
    body = bytearray()

    def add(data: bytes) -> None:
        body.extend(data)
        if len(body) > cap:
            raise LLMReplyTooLargeError(f"reply passed {cap:,} bytes (decompressed, Content-Encoding: {encoding}); "
                                        "refused", packet)

    if streamed.is_stream_consumed:  # a transport that hands over a read response (httpx.MockTransport)
        add(streamed.content)
        return bytes(body)
    try:
        for raw in streamed.iter_raw(1 << 16):
            if inflate is None:
                add(raw)
                continue
            add(inflate.decompress(raw, cap + 1 - len(body)))
            while inflate.unconsumed_tail:
                add(inflate.decompress(inflate.unconsumed_tail, cap + 1 - len(body)))
    except zlib.error as exc:
        raise LLMResponseError(f"reply is not valid {encoding} ({exc})", packet) from None
    return bytes(body)


_SHRINK_ROUNDS = 6


@dataclass(frozen=True)
class LLMSynthesizer:
    """MultiHopRAG ``Synthesizer`` through a chat client (HTTP or embedded: same prompt,
    same parsing, same window check). Stateless, so one instance serves every thread.

    ``mode="answer"``: answer-only prompt over the synth context's text, no citations.
    ``mode="evidence"``: the synth context's facts numbered
    (:func:`~rootweaver_capabilities.readers.prompts.number_facts`), a JSON ``{"answer", "evidence"}``
    reply (retried once when malformed, then returned with ``method`` ending in
    ``(malformed reply)`` and the raw reply as text); ``citations`` are the cited facts.

    Fitting: the prompt is counted with the reader's tokenizer; when it does not fit
    ``context_window - max_tokens`` the synth context is compacted again by ``compactor`` (the
    configured strategy; the default strategy when none is given) under a token budget scaled
    by the overflow, until it fits. A prompt that cannot fit even with an empty context is not sent.

    Every call runs under one deadline of ``client.timeout_s`` (counting, the evidence
    retry and every attempt included). Any :class:`LLMError` degrades the call to
    :func:`extractive_answer`, labelled ``extractive (reader failed: <kind>)``, with the
    error kind and scrubbed message in the returned :class:`ReaderAnswer`; other
    exceptions (bugs) propagate.
    """

    client: ChatClient
    mode: str = MODE_EVIDENCE
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    json_mode: bool = False
    compactor: Compactor | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {self.mode!r}")
        if self.compactor is None:
            object.__setattr__(self, "compactor", make_compactor(DEFAULT_STRATEGY))

    def load(self) -> None:
        """Load the reader now (tokenizer, embedded model) and its extractive fallback,
        instead of in the first request."""
        self.client.load()
        load_extractive()

    @property
    def reader(self) -> str:
        return f"{self.client.transport}:{self.client.model}"

    def _messages(self, question: str, context: SynthContext) -> tuple[list[dict[str, str]], NumberedContext | None]:
        if self.mode == MODE_EVIDENCE:
            numbered = number_facts(context)
            return evidence_messages(question, numbered), numbered
        return answer_only_messages(question, context), None

    def fit(self, question: str, context: SynthContext) -> tuple[SynthContext, int]:
        """``(context, prompt_tokens)``: the synth context compacted again until the prompt fits
        the reader's window with the output reserved; raises :class:`PromptTooLongError`
        (built from the smallest prompt tried) when even an empty context does not fit."""
        out = self.client.max_tokens if self.max_tokens is None else self.max_tokens
        allowed = self.client.context_window - out
        empty = context.with_facts((), context.layout)
        overhead: int | None = None
        for _ in range(_SHRINK_ROUNDS):
            tokens = self.client.count_prompt_tokens(self._messages(question, context)[0])
            if tokens <= allowed:
                return context, tokens
            if overhead is None:
                overhead = self.client.count_prompt_tokens(self._messages(question, empty)[0])
            room = allowed - overhead
            if room <= 0 or not context.facts:
                break
            context_tokens = Budget(1, "tokens").measure(context.text)  # the unit's tokenizer, as compaction counts
            target = int(context_tokens * room / max(tokens - overhead, 1) * 0.9)
            if target < 1:
                context = empty
                continue
            request = CompactionRequest.of_context(question, context, Budget(target, "tokens"))
            context = self.compactor(request).context
        shown = empty if overhead is not None and overhead > allowed else context
        messages, _ = self._messages(question, shown)
        packet = ChatPacket("", {"model": self.client.model, "messages": messages},
                            self.client.count_prompt_tokens(messages))
        raise PromptTooLongError(packet, self.client.context_window, out)

    def _complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        try:
            return self.client.chat(
                messages, temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
                json_mode=self.json_mode,
            ).text
        except PromptTooLongError:
            if len(messages) > 2:  # the evidence correction turn does not fit: the first reply stays malformed
                return ""
            raise

    def __call__(self, question: str, context: SynthContext) -> ReaderAnswer:
        tag = f"{self.reader}:{self.mode}"
        tokens: int | None = None
        given = context
        try:
            with request_deadline(self.client.timeout_s):
                context, tokens = self.fit(question, context)
                common = dict(reader=self.reader, prompt_tokens=tokens, context_chars=len(context.text))
                messages, numbered = self._messages(question, context)
                if numbered is not None:
                    outcome = ask_with_evidence(self._complete, question, numbered)
                    if outcome.malformed:
                        last = next((r.strip() for r in reversed(outcome.replies) if r.strip()), "")
                        return ReaderAnswer(text=last, method=f"{tag} (malformed reply)", **common)
                    return ReaderAnswer(text=outcome.answer, citations=numbered.cited(outcome.evidence),
                                        method=tag, **common)
                return ReaderAnswer(text=parse_answer_only(self._complete(messages)), method=tag, **common)
        except LLMError as exc:
            fallback = extractive_answer(question, given.facts)
            return ReaderAnswer(
                text=fallback.text, citations=fallback.citations,
                method=f"extractive (reader failed: {exc.kind})", reader=self.reader, error_kind=exc.kind,
                error=" ".join(str(exc).split())[:300], prompt_tokens=tokens, context_chars=len(context.text),
            )
