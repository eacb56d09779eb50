"""What a reader is asked and answers: the request packet, the completion, the client
protocol both transports (HTTP and embedded) implement, the chat-completions body they
send and the ChatML prompt they count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ChatClient", "ChatCompletion", "ChatPacket", "chat_body", "render_chatml"]


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


class ChatClient(Protocol):
    """What the synthesizer and the evals need from a reader, over HTTP or in-process.

    ``context_window`` (prompt + answer tokens), ``max_tokens`` (reserved for the answer
    unless a call passes its own) and ``timeout_s`` (the wall-clock deadline of one
    request) describe the reader; ``count_prompt_tokens`` counts rendered messages with the
    reader's own tokenizer; ``load`` does the one-off set-up (tokenizer, model) so the
    first request does not pay for it; ``chat`` raises
    :class:`~rootweaver_capabilities.readers.errors.LLMError` subclasses only.
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


def render_chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """The ChatML prompt the server builds (``--chat_format chatml``; Qwen's template when a
    system message is present), including the assistant generation prefix."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)

