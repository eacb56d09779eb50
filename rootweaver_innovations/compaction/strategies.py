"""The registry of compaction strategies for the synthesis context, by config name.

A strategy is a callable ``(CompactionRequest) -> CompactionResult``; a new one is one
module and one :func:`register_strategy` call, then its name in the config
(``compaction.strategy``). The built-ins: ``line``
(:class:`~rootweaver_innovations.compaction.line.LineCompactor`, docs/adr/0001), and the packing policies ``submodular`` and ``evidence``
(:class:`~rootweaver_innovations.compaction.packing.compactor.PackingCompactor`). :data:`DEFAULT_STRATEGY`
is the one that keeps the most answers on the product path (``docs/results.md``). The
built-ins' names and the defaults live in :mod:`~rootweaver_innovations.defaults`, which the
command line's parser reads without loading the packers.

Every compactor :func:`make_compactor` returns is behind an input cap (:class:`InputCap`): a
request whose rendered full context is over ``max_input_chars`` characters or
``max_input_lines`` lines is refused with :class:`InputTooLargeError` before any work, so one oversized
request cannot take a server's memory or minutes of its time. Under the defaults (2,000,000
chars, 5,000 lines) every strategy stays under 200 MB (``benchmarks/bench_memory.py``,
docs/results.md); the packers' time grows with lines x lines that share words, which is what
the line cap bounds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rootweaver_innovations.compaction.line import CompactionRequest, CompactionResult, LineCompactor
from rootweaver_innovations.defaults import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_STRATEGY,
    LINE_STRATEGY,
    MAX_INPUT_CHARS,
    MAX_INPUT_LINES,
    PACKING_STRATEGIES,
)
from rootweaver_innovations.compaction.packing.compactor import PackingCompactor
from rootweaver_innovations.registry import register

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "DEFAULT_STRATEGY",
    "MAX_INPUT_CHARS",
    "MAX_INPUT_LINES",
    "STRATEGIES",
    "Compactor",
    "InputCap",
    "InputTooLargeError",
    "make_compactor",
    "register_strategy",
    "strategy_names",
]


class Compactor(Protocol):
    """Compacts the loop's facts into the synth context under the request's budget."""

    def __call__(self, request: CompactionRequest) -> CompactionResult: ...




class InputTooLargeError(ValueError):
    """A request over the compactor's input cap; the message names the cap and the knob."""


@dataclass(frozen=True, slots=True)
class InputCap:
    """``compactor`` refusing a request whose full context (facts and hop headers rendered)
    is over ``max_input_chars`` chars or ``max_input_lines`` lines."""

    compactor: Compactor
    max_input_chars: int = MAX_INPUT_CHARS
    max_input_lines: int = MAX_INPUT_LINES

    def __post_init__(self) -> None:
        for name in ("max_input_chars", "max_input_lines"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        """Compact with the wrapped compactor, or raise :class:`InputTooLargeError`."""
        rendering = request.context.rendering
        if len(rendering.text) > self.max_input_chars:
            raise InputTooLargeError(f"context of {len(rendering.text):,} chars is over the compaction input cap "
                                     f"(compaction.max_input_chars = {self.max_input_chars:,})")
        lines = max(rendering.line_count, 1)
        if lines > self.max_input_lines:
            raise InputTooLargeError(f"context of {lines:,} lines is over the compaction input cap "
                                     f"(compaction.max_input_lines = {self.max_input_lines:,})")
        return self.compactor(request)


STRATEGIES: dict[str, Callable[[], Compactor]] = {}


def register_strategy(name: str, factory: Callable[[], Compactor]) -> None:
    """Add a strategy under a new non-empty ``name`` other than ``"off"`` (``ValueError`` otherwise)."""
    register(STRATEGIES, "strategy", name, factory, reserved=("off",))


def strategy_names() -> tuple[str, ...]:
    """Registered strategy names, in registration order."""
    return tuple(STRATEGIES)


def make_compactor(
    strategy: str, *, max_input_chars: int = MAX_INPUT_CHARS, max_input_lines: int = MAX_INPUT_LINES
) -> InputCap:
    """A compactor for a registered ``strategy`` (``ValueError`` naming the choices otherwise),
    behind an :class:`InputCap` of ``max_input_chars`` / ``max_input_lines``."""
    factory = STRATEGIES.get(strategy)
    if factory is None:
        raise ValueError(f"unknown compaction strategy {strategy!r}; choose one of {sorted(STRATEGIES)}")
    return InputCap(factory(), max_input_chars, max_input_lines)


register_strategy(LINE_STRATEGY, LineCompactor)
for _policy in PACKING_STRATEGIES:
    register_strategy(_policy, functools.partial(PackingCompactor, policy=_policy))
