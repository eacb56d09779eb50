"""Registry of compaction strategies for the synthesis context, by config name.

Every compactor :func:`make_compactor` returns is behind an input cap
(:class:`InputCap`): a context longer than ``max_input_chars`` characters or
``max_input_lines`` lines is refused with :class:`InputTooLargeError` before any work, so
one oversized request cannot take a server's memory or minutes of its time. Under the
defaults (2,000,000 chars, 5,000 lines) every strategy stays under 200 MB (see
``benchmarks/bench_memory.py`` and docs/results.md): the packers hold at most a 4,096^2
int32 similarity (64 MB) and recompute similarity columns beyond 4,096 candidates. Their
time grows with lines x lines that share words, which is what the line cap bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .compaction import CompactionResult, compact_lines
from .multihop import Compactor

__all__ = ["MAX_INPUT_CHARS", "MAX_INPUT_LINES", "STRATEGIES", "InputCap", "InputTooLargeError", "make_compactor"]

STRATEGIES = ("line", "submodular", "evidence")
MAX_INPUT_CHARS = 2_000_000
MAX_INPUT_LINES = 5000


class InputTooLargeError(ValueError):
    """A context over the compactor's input cap; the message names the cap and the knob."""


@dataclass(frozen=True, slots=True)
class InputCap:
    """``compactor`` refusing a context over ``max_input_chars`` chars or ``max_input_lines`` lines."""

    compactor: Compactor
    max_input_chars: int = MAX_INPUT_CHARS
    max_input_lines: int = MAX_INPUT_LINES

    def __post_init__(self) -> None:
        for name in ("max_input_chars", "max_input_lines"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")

    def __call__(
        self, context: str, *, max_chars: int, question: str = "", open_terms: Sequence[str] = ()
    ) -> CompactionResult:
        """Compact ``context`` with the wrapped compactor, or raise :class:`InputTooLargeError`."""
        if len(context) > self.max_input_chars:
            raise InputTooLargeError(f"context of {len(context):,} chars is over the compaction input cap "
                                     f"(compaction.max_input_chars = {self.max_input_chars:,})")
        lines = context.count("\n") + 1
        if lines > self.max_input_lines:
            raise InputTooLargeError(f"context of {lines:,} lines is over the compaction input cap "
                                     f"(compaction.max_input_lines = {self.max_input_lines:,})")
        return self.compactor(context, max_chars=max_chars, question=question, open_terms=open_terms)


def make_compactor(
    strategy: str, *, max_input_chars: int = MAX_INPUT_CHARS, max_input_lines: int = MAX_INPUT_LINES
) -> InputCap:
    """The compactor for ``strategy`` (one of :data:`STRATEGIES`, else ``ValueError``) behind
    an :class:`InputCap` of ``max_input_chars`` / ``max_input_lines``."""
    if strategy == "line":
        compactor: Compactor = compact_lines
    elif strategy in ("submodular", "evidence"):
        from .packing import SubmodularCompactor

        compactor = SubmodularCompactor(policy=strategy)
    else:
        raise ValueError(f"unknown compaction strategy {strategy!r}; choose one of {sorted(STRATEGIES)}")
    return InputCap(compactor, max_input_chars, max_input_lines)
