"""The multi-hop loop: decompose, pick the next sub-query, retrieve, append facts.

The full *trajectory context* drives every hop decision and is never compacted. After
the loop a separate *synth_context* is compacted once; with compaction disabled it is
the full context itself, byte for byte. So the trajectory (sub-queries, retrieved ids,
hop count, stop reason) cannot depend on whether, or how hard, compaction runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .compaction import CompactionRequest, CompactionResult, reasoning_key_terms
from .context_format import is_header, parse_fact, render_context
from .packing.budget import Budget
from .records import Fact, facts_from_passages
from .retrieval import Retriever, ScoredPassage
from .strategies import DEFAULT_BUDGET_TOKENS, DEFAULT_STRATEGY, Compactor, make_compactor

__all__ = [
    "Answer",
    "Compactor",
    "Decomposer",
    "Fact",
    "Hop",
    "MultiHopRAG",
    "MultiHopResult",
    "RuleDecomposer",
    "STOP_ALL_ANSWERED",
    "STOP_MAX_HOPS",
    "STOP_NO_NEW_EVIDENCE",
    "Synthesizer",
    "is_answered",
]

STOP_ALL_ANSWERED = "all_answered"
STOP_MAX_HOPS = "max_hops"
STOP_NO_NEW_EVIDENCE = "no_new_evidence"


class Decomposer(Protocol):
    """Sub-queries for ``question`` given everything retrieved so far (deterministic)."""

    def __call__(self, question: str, context: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Answer:
    """A synthesised answer, the context lines it cites, and how it was produced."""

    text: str
    cited_lines: tuple[str, ...] = ()
    method: str = "extractive"


class Synthesizer(Protocol):
    """Answers ``question`` from the synth context: its text (what a reader model is shown)
    and the facts behind its lines (records, for readers that score sentences)."""

    def __call__(self, question: str, synth_context: str, facts: Sequence[Fact]) -> Answer: ...


@dataclass(frozen=True, slots=True)
class Hop:
    """One loop iteration: the sub-query issued and the ids of the new passages it added."""

    sub_query: str
    retrieved_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MultiHopResult:
    """Everything one ``multi_hop_search`` decided and produced.

    ``synth_context`` is what synthesis sees; ``compaction`` is ``None`` when compaction
    was off (then ``synth_context == full_context``).
    """

    question: str
    hops: tuple[Hop, ...]
    stop_reason: str
    sub_queries: tuple[str, ...]  # the final decomposition
    open_terms: tuple[str, ...]
    full_context: str
    synth_context: str
    facts: tuple[Fact, ...]
    compaction: CompactionResult | None
    answer: Answer | None = None

    @property
    def synth_facts(self) -> tuple[Fact, ...]:
        """The facts behind the synth context's lines, in context order (all facts when off)."""
        return self.compaction.kept_facts if self.compaction is not None else self.facts

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


def _fact_tokens(context: str) -> set[str]:
    """Lowercase whitespace tokens of the fact lines (hop headers excluded)."""
    out: set[str] = set()
    for line in context.split("\n"):
        if not is_header(line):
            out.update(line.lower().split())
    return out


def is_answered(sub_query: str, context_tokens: set[str], threshold: float = 0.6) -> bool:
    """True when at least ``threshold`` of the sub-query's key terms occur in the context.

    A sub-query with no key terms counts as answered (there is nothing left to look for).
    """
    terms = reasoning_key_terms(sub_query)
    if not terms:
        return True
    return sum(t in context_tokens for t in terms) >= threshold * len(terms)


_CAP_SPAN = re.compile(
    r"(?:[A-Z][\w'’.\-]*|\d[\w\-]*)(?:\s+(?:(?:of|the|de|and|von|van|del|la|le|du|da)\s+)*"
    r"(?:[A-Z][\w'’.\-]*|\d[\w\-]*))*"
)
_LEADING = frozenset("The A An In On At He She It They His Her Its This That These Those".split())
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)


def _entity_spans(text: str, skip_initial: bool = True) -> list[str]:
    """Capitalised spans (proper-noun-like), a leading article stripped.

    Skipped: spans starting with a digit or a month name, one-word spans shorter than
    3 chars, and (with ``skip_initial``) one-word spans opening ``text``, which are
    capitalised anyway.
    """
    spans = []
    for m in _CAP_SPAN.finditer(text):
        words = m.group(0).rstrip(".").split()
        while words and words[0] in _LEADING:
            words = words[1:]
        if not words or words[0][0].isdigit() or words[0].lower() in _MONTHS:
            continue
        if len(words) == 1 and (len(words[0]) < 3 or (skip_initial and not text[: m.start()].strip())):
            continue
        spans.append(" ".join(words))
    return spans


def _bare(token: str) -> str:
    return token.strip(".,;:!?\"'()[]")


@dataclass(frozen=True, slots=True)
class RuleDecomposer:
    """Deterministic decomposer for bridge and comparison questions (HotpotQA-style).

    Comparison ("Are X and Y both ...", "... X or Y?"): one sub-query per entity plus the
    question's remaining key terms. Otherwise the question itself, then up to
    ``max_bridges`` bridge sub-queries: named entities found in the facts retrieved for
    the question that are neither in the question nor the title of a retrieved passage,
    each with the question terms its own sentence lacks.
    """

    max_bridges: int = 2

    def __call__(self, question: str, context: str) -> list[str]:
        question = " ".join(question.split())
        pair = self._comparison_entities(question)
        if pair is not None:
            names = {_bare(t) for t in " ".join(pair).lower().split()}
            rest = [t for t in reasoning_key_terms(question) if _bare(t) not in names]
            return [" ".join([e, *rest]) for e in pair]
        return [question, *self._bridges(question, context)]

    @staticmethod
    def _comparison_entities(question: str) -> tuple[str, str] | None:
        head, sep, tail = question.rstrip("?").rpartition(" or ")
        if sep:
            left = _entity_spans(head.rpartition(",")[2], skip_initial=False)
            right = _entity_spans(tail, skip_initial=False)
            if left and right and tail[:1].isupper():
                return left[-1], right[0]
        m = re.match(r"^(?:Between|Are|Were|Is|Was|Do|Did)\s+(.+?)\s+and\s+(.+)$", question.rstrip("?"))
        if m:
            left = _entity_spans(m.group(1), skip_initial=False)
            right = _entity_spans(m.group(2), skip_initial=False)
            if left and right and m.group(2)[:1].isupper():
                return left[0], right[0]
        return None

    def _bridges(self, question: str, context: str) -> list[str]:
        if not context:
            return []
        q_lower = question.lower()
        q_terms = reasoning_key_terms(question)
        titles: set[str] = set()
        first_block: list[str] = []
        block = 0
        for line in context.split("\n"):
            if is_header(line):
                block += 1
                continue
            parsed = parse_fact(line)
            if parsed is None:
                continue
            titles.add(parsed[0].lower())
            if block == 1:
                first_block.append(parsed[1])
        scored = sorted(
            enumerate(first_block),
            key=lambda p: (-len(set(q_terms).intersection(p[1].lower().split())), p[0]),
        )
        out: list[str] = []
        seen: set[str] = set()
        for _, sentence in scored:
            sent_tokens = set(sentence.lower().split())
            for span in _entity_spans(sentence):
                low = span.lower()
                if low in q_lower or low in titles or low in seen or not reasoning_key_terms(span):
                    continue
                seen.add(low)
                missing = [t for t in q_terms if t not in sent_tokens and t not in low.split()]
                out.append(" ".join([span, *missing]))
                if len(out) >= self.max_bridges:
                    return out
        return out


@dataclass
class MultiHopRAG:
    """The hop loop with retriever, decomposer, synthesizer and compactor injected.

    ``passages_per_hop`` new (not yet seen) passages are added per hop; all their
    sentences become fact lines. Raises ``ValueError`` on ``max_hops < 1``,
    ``passages_per_hop < 1`` or a threshold outside (0, 1]. With ``compaction_enabled`` the
    synth context is ``compactor``'s output under ``compaction_budget`` (chars or reader
    tokens); without it, the full context byte for byte.
    """

    retriever: Retriever
    decomposer: Decomposer = field(default_factory=RuleDecomposer)
    synthesizer: Synthesizer | None = None
    max_hops: int = 5
    passages_per_hop: int = 3
    answerability_threshold: float = 0.6
    compaction_enabled: bool = False
    compaction_budget: Budget = field(default_factory=lambda: Budget(DEFAULT_BUDGET_TOKENS, "tokens"))
    compactor: Compactor = field(default_factory=lambda: make_compactor(DEFAULT_STRATEGY))

    def __post_init__(self) -> None:
        if self.max_hops < 1:
            raise ValueError(f"max_hops must be >= 1, got {self.max_hops}")
        if self.passages_per_hop < 1:
            raise ValueError(f"passages_per_hop must be >= 1, got {self.passages_per_hop}")
        if not 0 < self.answerability_threshold <= 1:
            raise ValueError(f"answerability_threshold must be in (0, 1], got {self.answerability_threshold}")
        if not isinstance(self.compaction_budget, Budget):
            raise ValueError(f"compaction_budget must be a Budget, got {type(self.compaction_budget).__name__}")

    def _decompose_query(self, question: str, context: str) -> list[str]:
        return self.decomposer(question, context)

    def _select_next_query(
        self, sub_queries: Sequence[str], context: str, asked: set[str]
    ) -> tuple[str | None, str]:
        """Next open, not-yet-asked sub-query, or ``(None, stop_reason)``."""
        tokens = _fact_tokens(context)
        open_ones = [q for q in sub_queries if not is_answered(q, tokens, self.answerability_threshold)]
        if not open_ones:
            return None, STOP_ALL_ANSWERED
        for q in open_ones:
            if q not in asked:
                return q, ""
        return None, STOP_NO_NEW_EVIDENCE

    def _retrieve_new(self, sub_query: str, seen: set[str]) -> list[ScoredPassage]:
        hits = self.retriever.search(sub_query, self.passages_per_hop + len(seen))
        return [h for h in hits if h.passage.id not in seen][: self.passages_per_hop]

    def multi_hop_search(self, question: str) -> MultiHopResult:
        """Run the loop for ``question`` (non-empty, else ``ValueError``)."""
        if not question or not question.strip():
            raise ValueError("question must be a non-empty string")
        context = ""
        hops: list[Hop] = []
        facts: list[Fact] = []
        seen: set[str] = set()
        asked: set[str] = set()
        stop = STOP_MAX_HOPS
        for hop in range(self.max_hops):
            sub_queries = self._decompose_query(question, context)
            nxt, reason = self._select_next_query(sub_queries, context, asked)
            if nxt is None:
                stop = reason
                break
            asked.add(nxt)
            hits = self._retrieve_new(nxt, seen)
            if not hits:
                stop = STOP_NO_NEW_EVIDENCE
                break
            seen.update(h.passage.id for h in hits)
            facts.extend(facts_from_passages([h.passage for h in hits], hop=hop, sub_query=nxt,
                                             scores=[h.score for h in hits]))
            hops.append(Hop(nxt, tuple(h.passage.id for h in hits)))
            context = render_context(facts, [h.sub_query for h in hops]).text

        final_subs = tuple(self._decompose_query(question, context))
        tokens = _fact_tokens(context)
        open_terms = tuple(dict.fromkeys(
            t for q in final_subs if not is_answered(q, tokens, self.answerability_threshold)
            for t in reasoning_key_terms(q)
        ))
        compaction = None
        synth = context
        if self.compaction_enabled:
            compaction = self.compactor(CompactionRequest(
                question, tuple(facts), tuple(h.sub_query for h in hops), open_terms, self.compaction_budget
            ))
            synth = compaction.text
        result = MultiHopResult(
            question=question,
            hops=tuple(hops),
            stop_reason=stop,
            sub_queries=final_subs,
            open_terms=open_terms,
            full_context=context,
            synth_context=synth,
            facts=tuple(facts),
            compaction=compaction,
        )
        if self.synthesizer is None:
            return result
        return dataclasses.replace(result, answer=self.synthesizer(question, synth, result.synth_facts))
