"""What one run of the loop decides and produces, and the parts plugged into it.

:class:`Hop` (one sub-query, the passages it added, why), :class:`Answer` (text, cited facts,
method), :class:`MultiHopResult` (the trajectory and the synth context), and the protocols of
the injected parts: :class:`Decomposer`, :class:`AnswerRule`, :class:`Synthesizer`.
Records only: no retrieval, no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.line import CompactionRequest, CompactionResult
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.records import Fact

__all__ = ["ABSTAINED", "INSUFFICIENT_INFORMATION", "Answer", "AnswerRule", "Decomposer", "Hop", "MultiHopResult",
           "Synthesizer"]

INSUFFICIENT_INFORMATION = "insufficient information"
"""The one answer text that says the read documents do not support an answer."""
ABSTAINED = "abstained"
"""How the ``method`` of an answer that is :data:`INSUFFICIENT_INFORMATION` begins (the reason
follows in parentheses)."""


class Decomposer(Protocol):
    """Sub-queries for ``question`` given the facts retrieved so far, in loop order
    (deterministic; no facts before the first hop)."""

    def __call__(self, question: str, facts: Sequence[Fact]) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Answer:
    """A synthesised answer, the facts it cites (in citation order), and how it was produced."""

    text: str
    citations: tuple[Fact, ...] = ()
    method: str = "extractive"


class AnswerRule(Protocol):
    """An answer computed from all the facts the loop read (the trajectory's, not only the
    synth context's), with no reader and no prompt; ``None`` when it does not settle the
    question, and the next rule (then the synthesizer) answers."""

    def __call__(self, question: str, facts: Sequence[Fact]) -> Answer | None: ...


class Synthesizer(Protocol):
    """Answers ``question`` from the synth context, exactly as it will be shown to a reader
    (its facts, and the text rendered from them)."""

    def __call__(self, question: str, context: SynthContext) -> Answer: ...


@dataclass(frozen=True, slots=True)
class Hop:
    """One loop iteration: the sub-query issued, the ids of the new passages it added, why,
    and those passages' titles (same order as the ids)."""

    sub_query: str
    retrieved_ids: tuple[str, ...]
    reason: str = ""
    titles: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MultiHopResult:
    """Everything one ``multi_hop_search`` decided and produced.

    ``full`` is the trajectory context (every fact, every hop); ``synth`` what synthesis
    sees: the compacted context, or ``full`` itself when compaction was off
    (``compaction is None``). Their texts are rendered once, on first use.
    """

    question: str
    hops: tuple[Hop, ...]
    stop_reason: str
    sub_queries: tuple[str, ...]  # the final decomposition
    open_terms: tuple[str, ...]
    full: SynthContext
    compaction: CompactionResult | None
    answer: Answer | None = None

    @property
    def synth(self) -> SynthContext:
        return self.compaction.context if self.compaction is not None else self.full

    @property
    def facts(self) -> tuple[Fact, ...]:
        """Every fact of the trajectory, in loop order."""
        return self.full.facts

    @property
    def synth_facts(self) -> tuple[Fact, ...]:
        """The facts behind the synth context's lines, in context order (all facts when off)."""
        return self.synth.facts

    @property
    def full_context(self) -> str:
        return self.full.text

    @property
    def synth_context(self) -> str:
        return self.synth.text

    @property
    def hop_count(self) -> int:
        return len(self.hops)

    @property
    def context_chars(self) -> int:
        return len(self.synth_context)

    @property
    def full_context_chars(self) -> int:
        return len(self.full_context)

    def trajectory(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(sub-query, retrieved ids) per hop: what must not change with compaction."""
        return tuple((h.sub_query, h.retrieved_ids) for h in self.hops)

    def compaction_request(self, budget: Budget) -> CompactionRequest:
        """What a compactor is handed for this trajectory under ``budget`` (the loop's own
        request; an eval compacting a stored result the way the product would uses it too)."""
        return CompactionRequest(self.question, self.full, self.open_terms, budget)
