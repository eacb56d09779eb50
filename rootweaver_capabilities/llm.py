"""OpenAI-compatible chat client (vLLM, llama.cpp's server) and the LLM synthesizer.

The client speaks ``POST {base_url}/chat/completions``. Before anything is sent the
prompt is counted with the reader's tokenizer (or the server's tokenize endpoint) and
refused when it does not fit the context window with the output tokens reserved: there
is no silent truncation. Timeouts, connection errors, HTTP 5xx and 429 are retried a
bounded number of times with exponential backoff; then a typed error carries the packet
that was to be sent, so nothing is lost.

Exception tree::

    LLMError                      base; every instance carries ``packet`` (ChatPacket)
     +-- PromptTooLongError       prompt + reserved output > context window (not sent)
     +-- LLMUnavailableError      retries exhausted (timeouts, connection errors, 5xx, 429)
     +-- LLMRequestError          the server refused the request (4xx other than 429)
     +-- LLMResponseError         HTTP 200 but not an OpenAI chat completion

Install with ``pip install 'rootweaver[llm]'`` (httpx; ``tokenizers`` is a core dependency).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from rootweaver_innovations.extractive import extractive_answer
from rootweaver_innovations.multihop import Answer
from rootweaver_innovations.records import Fact
from rootweaver_innovations.packing import QwenTokenCounter, TokenCounter

from .prompts import (
    MODE_ANSWER,
    MODE_EVIDENCE,
    MODES,
    answer_only_messages,
    ask_with_evidence,
    number_context,
    parse_answer_only,
)

__all__ = [
    "ChatClient",
    "ChatCompletion",
    "ChatPacket",
    "LLMError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMSynthesizer",
    "LLMUnavailableError",
    "LlamaCppServerCounter",
    "OpenAIChatClient",
    "PromptTooLongError",
    "TOKENIZER_ENV",
    "render_chatml",
    "resolve_token_counter",
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

    def __init__(self, message: str, packet: ChatPacket):
        super().__init__(message)
        self.packet = packet


class PromptTooLongError(LLMError):
    """The prompt does not fit; raised before any network call."""

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

    def __init__(self, packet: ChatPacket, attempts: int, errors: Sequence[str]):
        super().__init__(f"LLM unavailable after {attempts} attempt(s): {errors[-1]}", packet)
        self.attempts = attempts
        self.errors = tuple(errors)


class LLMRequestError(LLMError):
    """The server answered 4xx (not 429): retrying the same packet cannot help."""

    def __init__(self, packet: ChatPacket, status: int, detail: str):
        super().__init__(f"server refused the request with HTTP {status}: {detail}", packet)
        self.status = status
        self.detail = detail


class LLMResponseError(LLMError):
    """HTTP 200 whose body is not a chat completion."""


def render_chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """The ChatML prompt the server builds (``--chat_format chatml``; Qwen's template when a
    system message is present), including the assistant generation prefix."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class LlamaCppServerCounter:
    """Counts with the model actually loaded: llama-cpp-python's ``/extras/tokenize/count``.

    A :class:`~rootweaver_innovations.packing.TokenCounter`; HTTP errors propagate (the
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
    """What the synthesizer and the evals need from a client."""

    model: str

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> ChatCompletion: ...


class OpenAIChatClient:
    """Chat completions against an OpenAI-compatible server.

    ``base_url`` includes the API prefix (``http://127.0.0.1:8765/v1``). The API key is read
    from ``os.environ[api_key_env]`` at construction (no header when unset or
    ``api_key_env`` is ``None``). ``max_retries`` retries follow the first attempt, waiting
    ``backoff_s * 2**i`` before retry ``i`` (0-based). ``context_window`` is the server's
    (``--n_ctx`` / ``--max-model-len``); ``max_tokens`` is reserved for the output of every
    call unless a call passes its own. ``token_counter`` defaults to
    :func:`resolve_token_counter`, resolved on first use. ``transport`` and ``sleep`` are
    for tests. Raises ``ValueError`` on non-positive sizes or negative retry settings.
    """

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
        token_counter: TokenCounter | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
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
        self._counter = token_counter
        self._sleep = sleep
        key = os.environ.get(api_key_env) if api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(timeout=timeout_s, transport=transport)

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

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        return self.token_counter.count(render_chatml(messages))

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
        if not messages:
            raise ValueError("messages must not be empty")
        for m in messages:
            if set(m) != {"role", "content"} or m["role"] not in {"system", "user", "assistant"}:
                raise ValueError(f"each message needs exactly role (system|user|assistant) and content, got {m!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        out_tokens = self.max_tokens if max_tokens is None else max_tokens
        if not 0 < out_tokens < self.context_window:
            raise ValueError(f"max_tokens must be in (0, {self.context_window}), got {out_tokens}")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": temperature,
            "max_tokens": out_tokens,
        }
        if seed is not None:
            body["seed"] = seed
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        draft = ChatPacket(f"{self.base_url}/chat/completions", body, None)
        tokens, _ = self._retrying(draft, "token count", lambda: self.count_prompt_tokens(messages))
        packet = ChatPacket(draft.url, body, tokens)
        if tokens + out_tokens > self.context_window:
            raise PromptTooLongError(packet, self.context_window, out_tokens)
        return packet

    def _retrying(self, packet: ChatPacket, step: str, call: Callable[[], Any]) -> tuple[Any, int]:
        """``(call(), attempts)`` under the retry policy.

        Retried: timeouts, transport errors, ``HTTPStatusError`` with 5xx/429. Other status
        errors raise ``LLMRequestError``; exhaustion raises ``LLMUnavailableError``.
        """
        errors: list[str] = []
        for attempt in range(1, self.max_retries + 2):
            if attempt > 1:
                self._sleep(self.backoff_s * 2 ** (attempt - 2))
            try:
                return call(), attempt
            except httpx.TimeoutException as exc:
                errors.append(f"{step} attempt {attempt}: timeout ({type(exc).__name__})")
            except httpx.TransportError as exc:
                errors.append(f"{step} attempt {attempt}: {type(exc).__name__}: {exc}")
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                if status < 500 and status != 429:
                    raise LLMRequestError(packet, status, exc.response.text[:500]) from exc
                errors.append(f"{step} attempt {attempt}: HTTP {status}: {exc.response.text[:200]}")
        raise LLMUnavailableError(packet, self.max_retries + 1, errors)

    def send(self, packet: ChatPacket) -> ChatCompletion:
        """POST ``packet`` with bounded retries; see the module docstring for the errors."""
        started = time.monotonic()

        def post() -> httpx.Response:
            resp = self._http.post(packet.url, json=dict(packet.body), headers=self._headers)
            resp.raise_for_status()
            return resp

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
        """``send(build_packet(...))``."""
        return self.send(
            self.build_packet(messages, temperature=temperature, max_tokens=max_tokens, seed=seed, json_mode=json_mode)
        )

    @staticmethod
    def _parse(resp: httpx.Response, packet: ChatPacket, attempts: int, latency: float) -> ChatCompletion:
        try:
            data = resp.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return ChatCompletion(
                text=choice["message"]["content"] or "",
                finish_reason=str(choice.get("finish_reason") or ""),
                model=str(data.get("model", packet.body["model"])),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                attempts=attempts,
                latency_s=latency,
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMResponseError(f"not a chat completion ({exc!r}): {resp.text[:300]}", packet) from exc


@dataclass
class LLMSynthesizer:
    """MultiHopRAG ``Synthesizer`` through a chat client.

    ``mode="answer"``: answer-only prompt, no citations. ``mode="evidence"``: line-numbered
    context, JSON ``{"answer", "evidence"}`` reply (retried once when malformed, then
    returned with ``method`` ending in ``(malformed reply)`` and the raw reply as text);
    ``cited_lines`` are the cited context lines verbatim.

    Safe behaviour: when the server stays unavailable (``LLMUnavailableError``) the answer
    degrades to :func:`extractive_answer` with ``method`` saying so, and the error (with the
    packet that was to be sent) is kept in ``last_error``. ``PromptTooLongError`` and
    ``LLMRequestError`` propagate: they are configuration problems, not outages.
    """

    client: ChatClient
    mode: str = MODE_ANSWER
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    json_mode: bool = False
    last_error: LLMUnavailableError | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {self.mode!r}")

    def _complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        return self.client.chat(
            messages, temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
            json_mode=self.json_mode,
        ).text

    def __call__(self, question: str, synth_context: str, facts: Sequence[Fact] = ()) -> Answer:
        self.last_error = None
        tag = f"llm:{self.client.model}:{self.mode}"
        try:
            if self.mode == MODE_EVIDENCE:
                numbered = number_context(synth_context)
                outcome = ask_with_evidence(self._complete, question, numbered)
                if outcome.malformed:
                    return Answer(text=outcome.replies[-1].strip(), method=f"{tag} (malformed reply)")
                return Answer(text=outcome.answer, cited_lines=numbered.cited_lines(outcome.evidence), method=tag)
            reply = self._complete(answer_only_messages(question, synth_context))
            return Answer(text=parse_answer_only(reply), method=tag)
        except LLMUnavailableError as exc:
            self.last_error = exc
            fallback = extractive_answer(question, facts)
            return Answer(
                text=fallback.text,
                cited_lines=fallback.cited_lines,
                method=f"extractive (LLM unavailable after {exc.attempts} attempts)",
            )
