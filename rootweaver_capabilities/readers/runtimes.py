"""The llama.cpp runtimes the embedded reader can run a GGUF model on, one registry.

``llama-cpp-python``
    The ``Llama`` class; compiles llama.cpp at install. Tokenizes with the model's own vocabulary.
``xllamacpp``
    Xorbits' prebuilt wheel (MIT, abi3, CPU kernels chosen at run time): installs without a
    compiler. The prompt is tokenized with the reader's Qwen2.5 ``tokenizer.json``
    (``$ROOTWEAVER_TOKENIZER_JSON`` for another model), which gives llama.cpp's own token ids
    for the bundled model (the same ids on 1,144 prompts of the bundled data sets), and the
    ids are what is evaluated. A model that rejects them (another vocabulary) is refused at
    load with a ``ValueError`` saying what to set.

Both take a prompt as token ids and generate greedily at temperature 0 under a ``halt``
callback asked after every token (``True`` stops generation: the deadline). A runtime is
not thread-safe; the caller serialises calls. :func:`load_runtime` raises
:class:`~rootweaver_capabilities.readers.models.ReaderNotInstalledError` when the package
is missing and ``ValueError`` for an unknown name.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rootweaver_capabilities.config import READER_RUNTIMES
from rootweaver_capabilities.readers.models import INSTALL_HINT, ReaderNotInstalledError

__all__ = ["RUNTIMES", "Generated", "Runtime", "installed_runtime", "load_runtime"]

RUNTIMES = READER_RUNTIMES  # the order "auto" tries them in (see the config schema)
_MODULES = {"xllamacpp": "xllamacpp", "llama-cpp-python": "llama_cpp"}
_STOP = "<|im_end|>"
# Both runtimes evaluate prompts in batches of this many tokens, with flash attention as
# ``llm.flash_attention`` says, rather than at their differing defaults (llama-cpp-python:
# 512, off; xllamacpp's server: 2,048, "auto"). On is faster on both; off, the two compute the
# same logits and give the same answers (docs/llm.md, the runtimes).
_N_BATCH = 512
# What xllamacpp evaluates at load to check that the model takes the tokenizer's ids. It shares
# no first token with a chat prompt (which opens with <|im_start|>), so the first question starts from
# an empty cache, as on llama-cpp-python: a cached prefix evaluated in another batch moves
# near-tie logits and with them the answer.
_PROBE = f"ok{_STOP}\n"


@dataclass(frozen=True, slots=True)
class Generated:
    """One generation: the text, why it ended (``stop``, ``length``, ``halted``) and the
    number of tokens generated when the runtime reports it."""

    text: str
    finish_reason: str
    completion_tokens: int | None


class Runtime(Protocol):
    """A loaded model (see the module docstring). ``generate`` raises ``RuntimeError`` when
    the runtime rejects the request or fails."""

    name: str

    def tokenize(self, text: str) -> list[int]: ...

    def generate(self, prompt: list[int], *, temperature: float, max_tokens: int, seed: int | None,
                 json_mode: bool, halt: Callable[[], bool]) -> Generated: ...

    def close(self) -> None: ...


def installed_runtime(name: str = "auto") -> str | None:
    """The runtime ``name`` stands for when its package can be imported (checked without
    importing it), else ``None``; ``auto`` is the first installed of :data:`RUNTIMES`."""
    import importlib.util

    names = RUNTIMES if name == "auto" else (name,)
    return next((n for n in names if n in _MODULES and importlib.util.find_spec(_MODULES[n]) is not None), None)


def load_runtime(name: str, path: Path, *, n_ctx: int, n_threads: int, flash_attention: bool) -> Runtime:
    """Load the GGUF file at ``path`` on runtime ``name`` (prompts evaluated in batches of 512
    tokens, flash attention on or off as asked); ``auto`` takes the first installed
    runtime of :data:`RUNTIMES` that accepts the model (xllamacpp refuses a vocabulary other
    than its tokenizer's), and raises the first refusal when none does."""
    if name != "auto" and name not in RUNTIMES:
        raise ValueError(f"unknown reader runtime {name!r}; expected auto or one of: {', '.join(RUNTIMES)}")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when libgomp loads (see embedded._load)
    names = [n for n in RUNTIMES if installed_runtime(n)] if name == "auto" else [name]
    if not names:
        raise ReaderNotInstalledError(f"no llama.cpp runtime for the embedded reader is installed: {INSTALL_HINT}")
    refusals: list[ValueError] = []
    for candidate in names:
        try:
            return (_XLlamaCpp if candidate == "xllamacpp" else _LlamaCppPython)(path, n_ctx, n_threads,
                                                                                  flash_attention)
        except ImportError:
            raise ReaderNotInstalledError(f"the reader runtime {candidate} is not installed: {INSTALL_HINT}") from None
        except ValueError as exc:
            refusals.append(exc)
    raise refusals[0]


class _XLlamaCpp:
    name = "xllamacpp"

    def __init__(self, path: Path, n_ctx: int, n_threads: int, flash_attention: bool):
        import xllamacpp

        from rootweaver_capabilities.readers.token_count import TOKENIZER_ENV
        from rootweaver_innovations.compaction.budget import QwenTokenCounter, default_token_counter

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx, params.n_parallel, params.verbosity = n_ctx, 1, -1
        params.n_batch, params.flash_attn_type = _N_BATCH, int(flash_attention)  # 0 off, 1 on (-1 "auto")
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = n_threads
        self._server: Any = xllamacpp.Server(params)
        tokenizer = os.environ.get(TOKENIZER_ENV) or None
        self._tokenizer = QwenTokenCounter(tokenizer) if tokenizer else default_token_counter()
        probe = self._server.handle_completions({"prompt": self.tokenize(_PROBE), "max_tokens": 1})
        if "error" in probe:  # the ids are not this model's: it would read garbage or refuse every prompt
            raise ValueError(
                f"{path.name}: the xllamacpp runtime tokenizes with {tokenizer or 'the Qwen2.5 tokenizer'} and "
                f"this model rejects its ids ({probe['error'].get('message')}); set {TOKENIZER_ENV} to the "
                "model's tokenizer.json or use llm.runtime llama-cpp-python")

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer.ids(text)

    def generate(self, prompt: list[int], *, temperature: float, max_tokens: int, seed: int | None,
                 json_mode: bool, halt: Callable[[], bool]) -> Generated:
        request: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
                                   "stop": [_STOP], "stream": True}
        if seed is not None:
            request["seed"] = seed
        if json_mode:
            request["json_schema"] = {"type": "object"}
        text: list[str] = []
        end: dict[str, Any] = {"reason": "halted", "tokens": None, "error": None}

        def on_chunk(chunk: dict[str, Any]) -> bool:
            if "error" in chunk:
                end["error"] = chunk["error"].get("message", "unknown error")
                return True
            choice = chunk["choices"][0]
            text.append(choice.get("text") or "")
            if choice.get("finish_reason"):
                end["reason"] = choice["finish_reason"]
                end["tokens"] = (chunk.get("usage") or {}).get("completion_tokens")
                return False
            return halt()

        reply = self._server.handle_completions(request, on_chunk)
        if isinstance(reply, dict) and "error" in reply:
            end["error"] = reply["error"].get("message", "unknown error")
        if end["error"] is not None:
            raise RuntimeError(end["error"])
        return Generated("".join(text), end["reason"], end["tokens"])

    def close(self) -> None:
        self._server = None


class _LlamaCppPython:
    name = "llama-cpp-python"

    def __init__(self, path: Path, n_ctx: int, n_threads: int, flash_attention: bool):
        from llama_cpp import Llama

        self._llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_batch=_N_BATCH,
                            flash_attn=flash_attention, verbose=False)

    def tokenize(self, text: str) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def generate(self, prompt: list[int], *, temperature: float, max_tokens: int, seed: int | None,
                 json_mode: bool, halt: Callable[[], bool]) -> Generated:
        from llama_cpp import LlamaGrammar, StoppingCriteriaList
        from llama_cpp.llama_grammar import JSON_GBNF

        halted = {"yes": False}

        def stop(_ids: Any, _logits: Any) -> bool:
            halted["yes"] = halt()
            return halted["yes"]

        try:
            reply = self._llama.create_completion(
                prompt, temperature=temperature, max_tokens=max_tokens, seed=seed, stop=[_STOP],
                grammar=LlamaGrammar.from_string(JSON_GBNF, verbose=False) if json_mode else None,
                stopping_criteria=StoppingCriteriaList([stop]),
            )
        except ValueError as exc:
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        choice = reply["choices"][0]
        reason = "halted" if halted["yes"] else str(choice.get("finish_reason") or "")
        return Generated(choice["text"] or "", reason, (reply.get("usage") or {}).get("completion_tokens"))

    def close(self) -> None:
        self._llama.close()
