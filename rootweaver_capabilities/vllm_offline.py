"""Optional in-process vLLM batch generation for evals on a GPU machine (extra ``vllm``).

``vllm`` is imported inside :class:`VLLMBatchGenerator` only, so importing this module
(or anything on a CPU path) never loads CUDA. The HTTP route (``vllm serve`` plus
:class:`rootweaver_capabilities.llm.OpenAIChatClient`) stays the default; this batch
path trades the client's per-call checks for throughput. It applies the same context
check as the client, using vLLM's own tokenizer and chat template, and raises
``ValueError`` naming the offending item instead of truncating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["VLLMBatchGenerator", "VLLMGeneration"]


@dataclass(frozen=True, slots=True)
class VLLMGeneration:
    """One conversation's reply, with the prompt size vLLM counted and the seed used."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    seed: int | None


class VLLMBatchGenerator:
    """``vllm.LLM`` wrapped for chat batches.

    ``model`` is a local path or a model id already in the host's cache (this project
    never downloads weights). ``max_model_len`` plays the role of the client's
    ``context_window``. Raises ``ImportError`` naming the extra when vLLM is missing.
    """

    def __init__(
        self,
        model: str,
        *,
        max_model_len: int = 4096,
        gpu_memory_utilization: float = 0.85,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        seed: int = 0,
    ):
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ImportError(
                "in-process vLLM needs a CUDA host and the 'vllm' extra: pip install 'rootweaver[vllm]'; "
                "on CPU use the OpenAI-compatible client against a server instead"
            ) from exc
        if max_model_len < 2:
            raise ValueError(f"max_model_len must be >= 2, got {max_model_len}")
        self.model = model
        self.max_model_len = max_model_len
        self._llm = LLM(
            model=model,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
            dtype=dtype,
            seed=seed,
        )

    def _prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        tokenizer = self._llm.get_tokenizer()
        ids = tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
        return len(ids)

    def generate(
        self,
        conversations: Sequence[Sequence[Mapping[str, str]]],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seeds: Sequence[int | None] | None = None,
    ) -> list[VLLMGeneration]:
        """One reply per conversation, in order. ``seeds`` (one per conversation) makes
        sampled runs reproducible; ``ValueError`` when a prompt plus ``max_tokens`` exceeds
        ``max_model_len`` or ``seeds`` has the wrong length."""
        from vllm import SamplingParams

        if seeds is not None and len(seeds) != len(conversations):
            raise ValueError(f"got {len(seeds)} seeds for {len(conversations)} conversations")
        per_seed = list(seeds) if seeds is not None else [None] * len(conversations)
        for i, conv in enumerate(conversations):
            n = self._prompt_tokens(conv)
            if n + max_tokens > self.max_model_len:
                raise ValueError(
                    f"conversation {i}: {n} prompt tokens + {max_tokens} output > max_model_len {self.max_model_len}"
                )
        params = [SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=s) for s in per_seed]
        outputs: list[Any] = self._llm.chat([list(c) for c in conversations], params, use_tqdm=False)
        return [
            VLLMGeneration(
                text=out.outputs[0].text,
                prompt_tokens=len(out.prompt_token_ids or ()),
                completion_tokens=len(out.outputs[0].token_ids),
                finish_reason=str(out.outputs[0].finish_reason or ""),
                seed=seed,
            )
            for out, seed in zip(outputs, per_seed, strict=True)
        ]
