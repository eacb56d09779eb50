"""The registry of compaction strategies for the synthesis context, by config name.

A strategy is a callable ``(CompactionRequest) -> CompactionResult``; a new one is one
module and one :func:`register_strategy` call. The built-ins: ``line`` (the deterministic
line compactor, ADR-077), and the packing policies ``submodular`` and ``evidence``
(:class:`~rootweaver_innovations.packing.compactor.PackingCompactor`). :data:`DEFAULT_STRATEGY`
is the one that keeps the most answers on the product path (``docs/results.md``).

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

from .compaction import CompactionRequest, CompactionResult, fit_lines, rank_lines
from .packing.compactor import PackingCompactor

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "DEFAULT_STRATEGY",
    "MAX_INPUT_CHARS",
    "MAX_INPUT_LINES",
    "STRATEGIES",
    "Compactor",
    "InputCap",
    "InputTooLargeError",
    "LineCompactor",
    "make_compactor",
    "register_strategy",
    "strategy_names",
]


class Compactor(Protocol):
    """Compacts the loop's facts into the synth context under the request's budget."""

    def __call__(self, request: CompactionRequest) -> CompactionResult: ...


@dataclass(frozen=True, slots=True)
class LineCompactor:
    """:func:`~rootweaver_innovations.compaction.compact_lines` on the rendered full context.

    A char budget is passed through; for a token budget the largest char limit whose output
    fits in the tokens is found by bisection (the output only grows with the char limit).
    The lines are ranked once (:func:`~rootweaver_innovations.compaction.rank_lines`) and
    fitted to each limit tried (:func:`~rootweaver_innovations.compaction.fit_lines`).
    """

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        layout = request.layout
        budget = request.budget
        ranking = rank_lines(layout.text, question=request.question, open_terms=request.open_terms)

        def run(max_chars: int) -> CompactionResult:
            return fit_lines(ranking, max_chars)

        if budget.unit == "chars":
            res = run(budget.limit)
        else:
            lo, hi, res = 1, max(1, len(layout.text)), None
            while lo <= hi:
                mid = (lo + hi) // 2
                attempt = run(mid)
                if budget.measure(attempt.text) <= budget.limit:
                    res, lo = attempt, mid + 1
                else:
                    hi = mid - 1
            res = res if res is not None else run(1)
        fact_at = dict(zip(layout.fact_lines, request.facts))
        return CompactionResult(
            text=res.text, kept=res.kept, dropped=res.dropped, limit=budget.limit, input_chars=res.input_chars,
            strategy="line", unit=budget.unit, used=budget.measure(res.text),
            kept_facts=tuple(fact_at[k.position] for k in res.kept if k.position in fact_at),
        )


MAX_INPUT_CHARS = 2_000_000
MAX_INPUT_LINES = 5000


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
        text = request.layout.text
        if len(text) > self.max_input_chars:
            raise InputTooLargeError(f"context of {len(text):,} chars is over the compaction input cap "
                                     f"(compaction.max_input_chars = {self.max_input_chars:,})")
        lines = text.count("\n") + 1
        if lines > self.max_input_lines:
            raise InputTooLargeError(f"context of {lines:,} lines is over the compaction input cap "
                                     f"(compaction.max_input_lines = {self.max_input_lines:,})")
        return self.compactor(request)


STRATEGIES: dict[str, Callable[[], Compactor]] = {}
DEFAULT_STRATEGY = "evidence"
DEFAULT_BUDGET_TOKENS = 160  # reader tokens: on 80 even-half HotpotQA questions the 1.5B reader scores F1 .605 here vs .610 at 256, ~20% faster


def register_strategy(name: str, factory: Callable[[], Compactor]) -> None:
    """Add a strategy under a new non-empty ``name`` (``ValueError`` otherwise)."""
    if not isinstance(name, str) or not name or name == "off":
        raise ValueError(f"strategy name must be a non-empty str other than 'off', got {name!r}")
    if name in STRATEGIES:
        raise ValueError(f"strategy {name!r} is already registered")
    STRATEGIES[name] = factory


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


register_strategy("line", LineCompactor)
register_strategy("submodular", functools.partial(PackingCompactor, policy="submodular"))
register_strategy("evidence", functools.partial(PackingCompactor, policy="evidence"))
