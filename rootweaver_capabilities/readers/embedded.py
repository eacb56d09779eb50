"""The embedded reader: llama-cpp-python's ``Llama`` in this process, no server.

:class:`LlamaCppChatClient` is a :class:`~rootweaver_capabilities.readers.chat.ChatClient`, so the
embedded reader and the OpenAI-compatible server share the prompt, the answer parsing,
the evidence mode and the window check of :class:`~rootweaver_capabilities.readers.synthesizer.LLMSynthesizer`.
The prompt is rendered as ChatML (what the server does with ``--chat_format chatml``),
tokenized with the model's own tokenizer, checked against the window and evaluated as
those very tokens (the count is what runs).

The model (by default Qwen2.5-Coder-1.5B-Instruct Q4_K_M, see
:mod:`~rootweaver_capabilities.readers.models`) is assembled into the cache on first use
and loaded lazily, once per process (every client on the same file and settings shares
one ``Llama``). ``Llama`` is not thread-safe: calls on one model are serialised.

Deadline: a call waits for the model lock and generates under the current
:func:`~rootweaver_capabilities.readers.deadline.request_deadline` (its own ``timeout_s`` otherwise);
generation stops when less than two of its longest token steps are left before the deadline
(checked after every token) and the call raises
:class:`~rootweaver_capabilities.readers.errors.LLMDeadlineError`. The deadline is therefore honoured
unless the prompt's evaluation (bounded by the window) alone runs past it.

Install: ``pip install 'rootweaver[reader]'`` with the ``CMAKE_ARGS`` of the README
(llama-cpp-python compiles; the default native build can die with SIGILL on VMs).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rootweaver_capabilities.config import LLMConfig
from rootweaver_capabilities.readers.chat import ChatCompletion, ChatPacket, chat_body, render_chatml
from rootweaver_capabilities.readers.deadline import remaining_s, request_deadline
from rootweaver_capabilities.readers.errors import LLMDeadlineError, LLMResponseError, PromptTooLongError
from rootweaver_capabilities.readers.models import DEFAULT_READER, INSTALL_HINT, ReaderNotInstalledError, ensure_model

__all__ = ["LlamaCppChatClient"]

_LLM = LLMConfig()  # the reader's defaults: the config schema's

_CHATML_END = "<|im_end|>"
_models: dict[tuple[str, int, int], Any] = {}
_model_locks: dict[tuple[str, int, int], threading.Lock] = {}
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


def _load(path: Path, n_ctx: int, n_threads: int) -> tuple[Any, threading.Lock]:
    """The process-wide ``Llama`` for ``(path, n_ctx, n_threads)`` and its call lock.

    ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` here (an explicit setting wins): llama.cpp's
    OpenMP threads otherwise spin between steps, and on 2 cores shared with other work
    that cost about 45% of prompt throughput (300-token prompts: 30-41 s spinning,
    18-19 s passive, measured on this project's VM)."""
    key = (str(path), n_ctx, n_threads)
    with _load_lock:
        if key not in _models:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when libgomp loads, below
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ReaderNotInstalledError(f"the embedded reader is not installed: {INSTALL_HINT}") from None
            _models[key] = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
            _model_locks[key] = threading.Lock()
        return _models[key], _model_locks[key]


class LlamaCppChatClient:
    """Chat completions from a GGUF model in this process (see the module docstring).

    ``model_path`` ``None`` means the default reader model, assembled into the cache on
    first use; ``model`` is the name reported in answers. ``context_window`` is the
    ``n_ctx`` the model is loaded with; ``max_tokens`` is reserved for the answer unless a
    call passes its own; ``timeout_s`` is the deadline of a call outside an outer one.
    ``n_threads`` defaults to the CPU count. Raises ``ValueError`` on bad sizes; the model
    is not touched until the first call.
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
        n_threads: int | None = None,
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
        self.n_threads = n_threads or os.cpu_count() or 1

    def _llama(self) -> tuple[Any, threading.Lock]:
        path = self.model_path if self.model_path is not None else ensure_model(DEFAULT_READER)
        return _load(path, self.context_window, self.n_threads)

    def load(self) -> None:
        """Assemble (first use) and load the model now instead of at the first call."""
        self._llama()

    def _tokens(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        llama, _ = self._llama()
        return llama.tokenize(render_chatml(messages).encode("utf-8"), add_bos=False, special=True)

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
            llama, lock = self._llama()
            prompt = self._tokens(messages)  # exactly what is evaluated: counted == sent
            tokens = len(prompt)
            packet = ChatPacket(url, body, tokens)
            if tokens + out_tokens > self.context_window:
                raise PromptTooLongError(packet, self.context_window, out_tokens)

            # stop before the token step that would cross the deadline: on a busy machine a
            # step takes tens of milliseconds and the reply still has to be built after it
            steps = {"last": None, "longest": 0.0, "stopped": False}

            def past_deadline(_ids: Any, _logits: Any) -> bool:
                now = time.monotonic()
                if steps["last"] is not None:  # the first call follows the prompt's prefill
                    steps["longest"] = max(steps["longest"], now - steps["last"])
                steps["last"] = now
                left = remaining_s()
                steps["stopped"] = left is not None and left <= 2 * steps["longest"]
                return steps["stopped"]

            from llama_cpp import LlamaGrammar, StoppingCriteriaList
            from llama_cpp.llama_grammar import JSON_GBNF

            left = remaining_s()
            if not lock.acquire(timeout=max(left, 0.0) if left is not None else -1):
                raise LLMDeadlineError(packet, 0, ["waiting for the model"], self.timeout_s)
            try:
                reply = llama.create_completion(
                    prompt, temperature=temperature, max_tokens=out_tokens, seed=seed, stop=[_CHATML_END],
                    grammar=LlamaGrammar.from_string(JSON_GBNF, verbose=False) if json_mode else None,
                    stopping_criteria=StoppingCriteriaList([past_deadline]),
                )
            except (RuntimeError, ValueError) as exc:
                raise LLMResponseError(f"the embedded model failed: {type(exc).__name__}: {exc}", packet) from None
            finally:
                lock.release()
            left = remaining_s()
            if steps["stopped"] or (left is not None and left <= 0):
                raise LLMDeadlineError(packet, 1, ["generation stopped"], self.timeout_s)
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        return ChatCompletion(
            text=choice["text"] or "", finish_reason=str(choice.get("finish_reason") or ""),
            model=self.model, prompt_tokens=usage.get("prompt_tokens", tokens),
            completion_tokens=usage.get("completion_tokens"), attempts=1, latency_s=time.monotonic() - started,
        )
