"""The embedded reader: a GGUF model on a llama.cpp runtime in this process, no server.

:class:`LlamaCppChatClient` is a :class:`~rootweaver_capabilities.readers.chat.ChatClient`, so the
embedded reader and the OpenAI-compatible server share the prompt, the answer parsing,
the evidence mode and the window check of :class:`~rootweaver_capabilities.readers.synthesizer.LLMSynthesizer`.
The prompt is rendered as ChatML (what the server does with ``--chat_format chatml``),
tokenized with the model's tokenizer, checked against the window and evaluated as
those very tokens (the count is what runs).

The runtime (:mod:`~rootweaver_capabilities.readers.runtimes`: the prebuilt ``xllamacpp``
wheel, or ``llama-cpp-python``, which compiles) is ``llm.runtime``; ``auto`` takes
llama-cpp-python when it is installed, else xllamacpp. The model (by default Qwen2.5-Coder-1.5B-Instruct Q4_K_M, see
:mod:`~rootweaver_capabilities.readers.models`) is assembled into the cache on first use
and loaded lazily, once per process (every client on the same runtime, file and settings
shares it). Calls on one model are serialised.

Deadline: a call waits for the model lock and generates under the current
:func:`~rootweaver_capabilities.readers.deadline.request_deadline` (its own ``timeout_s`` otherwise);
generation stops when less than two of its longest token steps are left before the deadline
(checked after every token) and the call raises
:class:`~rootweaver_capabilities.readers.errors.LLMDeadlineError`. The deadline is therefore honoured
unless the prompt's evaluation (bounded by the window) alone runs past it.

Install: ``pip install 'rootweaver[reader]'`` (xllamacpp, no compiler).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rootweaver_capabilities.config import LLMConfig
from rootweaver_capabilities.readers.chat import ChatCompletion, ChatPacket, chat_body, render_chatml
from rootweaver_capabilities.readers.deadline import remaining_s, request_deadline
from rootweaver_capabilities.readers.errors import LLMDeadlineError, LLMResponseError, PromptTooLongError
from rootweaver_capabilities.readers.models import DEFAULT_READER, ensure_model
from rootweaver_capabilities.readers.runtimes import Runtime, load_runtime

__all__ = ["LlamaCppChatClient"]

_LLM = LLMConfig()  # the reader's defaults: the config schema's

_Key = tuple[str, str, int, int, bool]  # runtime, path, n_ctx, n_threads, flash attention
_models: dict[_Key, Runtime] = {}
_model_locks: dict[_Key, threading.Lock] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free the loaded models while the interpreter is whole (llama_cpp's own finalizer, run
    later in shutdown, finds its native bindings gone and prints a traceback). A model still
    generating in a daemon thread after 5 s is left to that finalizer."""
    with _load_lock:
        for key in list(_models):
            if _model_locks[key].acquire(timeout=5):
                _models.pop(key).close()


def _load(runtime: str, path: Path, n_ctx: int, n_threads: int,
          flash_attention: bool) -> tuple[Runtime, threading.Lock]:
    """The process-wide model for ``(runtime, path, n_ctx, n_threads, flash_attention)`` and its
    call lock.

    ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` (an explicit setting wins): llama.cpp's
    OpenMP threads otherwise spin between steps, and on 2 cores shared with other work
    that cost about 45% of prompt throughput (300-token prompts: 30-41 s spinning,
    18-19 s passive, measured on this project's VM)."""
    key = (runtime, str(path), n_ctx, n_threads, flash_attention)
    with _load_lock:
        if key not in _models:
            _models[key] = load_runtime(runtime, path, n_ctx=n_ctx, n_threads=n_threads,
                                        flash_attention=flash_attention)
            _model_locks[key] = threading.Lock()
        return _models[key], _model_locks[key]


class LlamaCppChatClient:
    """Chat completions from a GGUF model in this process (see the module docstring).

    ``model_path`` ``None`` means the default reader model, assembled into the cache on
    first use; ``model`` is the name reported in answers. ``context_window`` is the
    ``n_ctx`` the model is loaded with; ``max_tokens`` is reserved for the answer unless a
    call passes its own; ``timeout_s`` is the deadline of a call outside an outer one.
    ``runtime`` is ``auto`` or a name in :data:`~rootweaver_capabilities.readers.runtimes.RUNTIMES`;
    ``n_threads`` defaults to the CPU count; ``flash_attention`` is ``llm.flash_attention``.
    Raises ``ValueError`` on bad sizes; the model is not touched until the first call.
    """

    transport = "local"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model: str = _LLM.model,
        context_window: int = _LLM.context_window,
        max_tokens: int = _LLM.max_tokens,
        timeout_s: float = _LLM.timeout_s,
        runtime: str = _LLM.runtime,
        n_threads: int | None = None,
        flash_attention: bool = _LLM.flash_attention,
    ):
        if context_window < 1 or not 0 < max_tokens < context_window:
            raise ValueError(
                f"need context_window >= 1 and 0 < max_tokens < context_window, got {context_window}, {max_tokens}"
            )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.model = model
        self.context_window = context_window
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.runtime = runtime
        self.n_threads = n_threads or os.cpu_count() or 1
        self.flash_attention = flash_attention

    def _loaded(self) -> tuple[Runtime, threading.Lock]:
        path = self.model_path if self.model_path is not None else ensure_model(DEFAULT_READER)
        return _load(self.runtime, path, self.context_window, self.n_threads, self.flash_attention)

    def load(self) -> None:
        """Assemble (first use) and load the model now instead of at the first call."""
        self._loaded()

    def _tokens(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        return self._loaded()[0].tokenize(render_chatml(messages))

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        return len(self._tokens(messages))

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> ChatCompletion:
        """One completion; ``PromptTooLongError`` before generating when it does not fit,
        ``LLMDeadlineError`` when the deadline passes, ``LLMResponseError`` when the model
        call fails."""
        out_tokens = self.max_tokens if max_tokens is None else max_tokens
        body = chat_body(self.model, messages, temperature=temperature, out_tokens=out_tokens, seed=seed,
                         context_window=self.context_window)
        url = f"local://{self.model_path.name if self.model_path else DEFAULT_READER}"
        with request_deadline(self.timeout_s):
            started = time.monotonic()
            model, lock = self._loaded()
            prompt = model.tokenize(render_chatml(messages))  # exactly what is evaluated: counted == sent
            tokens = len(prompt)
            packet = ChatPacket(url, body, tokens)
            if tokens + out_tokens > self.context_window:
                raise PromptTooLongError(packet, self.context_window, out_tokens)

            # stop before the token step that would cross the deadline: on a busy machine a
            # step takes tens of milliseconds and the reply still has to be built after it
            steps = {"last": None, "longest": 0.0}

            def past_deadline() -> bool:
                now = time.monotonic()
                if steps["last"] is not None:  # the first call follows the prompt's prefill
                    steps["longest"] = max(steps["longest"], now - steps["last"])
                steps["last"] = now
                left = remaining_s()
                return left is not None and left <= 2 * steps["longest"]

            left = remaining_s()
            if not lock.acquire(timeout=max(left, 0.0) if left is not None else -1):
                raise LLMDeadlineError(packet, 0, ["waiting for the model"], self.timeout_s)
            try:
                reply = model.generate(prompt, temperature=temperature, max_tokens=out_tokens, seed=seed,
                                       json_mode=json_mode, halt=past_deadline)
            except RuntimeError as exc:
                raise LLMResponseError(f"the embedded model failed: {exc}", packet) from None
            finally:
                lock.release()
            left = remaining_s()
            if reply.finish_reason == "halted" or (left is not None and left <= 0):
                raise LLMDeadlineError(packet, 1, ["generation stopped"], self.timeout_s)
        return ChatCompletion(
            text=reply.text, finish_reason=reply.finish_reason, model=self.model, prompt_tokens=tokens,
            completion_tokens=reply.completion_tokens, attempts=1, latency_s=time.monotonic() - started,
        )
