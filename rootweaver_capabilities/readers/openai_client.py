"""The OpenAI-compatible chat client (vLLM, llama.cpp's server).

The client speaks ``POST {base_url}/chat/completions``. Before anything is sent the
prompt is counted with the reader's tokenizer (or the server's tokenize endpoint) and
refused when it does not fit the context window with the output tokens reserved: there
is no silent truncation (the synthesizer shrinks the synth context to fit first).
Timeouts, connection errors, HTTP 5xx and 429 are retried a bounded number of times with
exponential backoff; then a typed error (:mod:`~rootweaver_capabilities.readers.errors`)
carries the packet that was to be sent, so nothing is lost.

``timeout_s`` bounds a whole ``chat()`` call: token counting, every attempt, every backoff
sleep (:mod:`~rootweaver_capabilities.readers.deadline`). Text from a response is scrubbed
of the API key before it reaches an error or an answer
(:mod:`~rootweaver_capabilities.readers.redaction`).

**Bounded replies.** A reply body is read as a stream and refused
(:class:`~rootweaver_capabilities.readers.errors.LLMReplyTooLargeError`) as soon as its
decompressed size passes ``max_reply_bytes``: a gzip bomb costs at most that much memory.

Install with ``pip install 'rootweaver[llm]'`` (httpx; ``tokenizers`` is a core dependency).
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from rootweaver_innovations.compaction.budget import TokenCounter

from rootweaver_capabilities.config import LLMConfig
from rootweaver_capabilities.readers.chat import ChatCompletion, ChatPacket, chat_body, render_chatml
from rootweaver_capabilities.readers.deadline import deadline_transport, remaining_s, request_deadline
from rootweaver_capabilities.readers.errors import (
    LLMDeadlineError,
    LLMError,
    LLMNullContentError,
    LLMReplyTooLargeError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
    PromptTooLongError,
)
from rootweaver_capabilities.readers.redaction import redact, scrub
from rootweaver_capabilities.readers.token_count import resolve_token_counter

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "OpenAIChatClient"]

DEFAULT_MAX_REPLY_BYTES = 8 << 20
_LLM = LLMConfig()  # the reader's defaults: the config schema's


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
        timeout_s: float = _LLM.timeout_s,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        context_window: int = _LLM.context_window,
        max_tokens: int = _LLM.max_tokens,
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
        self._http = httpx.Client(timeout=timeout_s, transport=transport or deadline_transport())

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

