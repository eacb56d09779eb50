"""What a compactor is given and returns, and the deterministic line compactor.

Pure: no I/O, no model, no clock. A compactor takes a :class:`CompactionRequest` (the
question, the full context as a :class:`~rootweaver_innovations.compaction.synth_context.SynthContext`,
the open terms, a budget) and returns a :class:`CompactionResult`: the kept facts as a
synth context, and every fact left out with its reason.

:class:`LineCompactor` (strategy ``line``, the compactor of docs/adr/0001) ranks facts, never text. Budget
contract: the budget counts every character (or reader token) of the rendered synth
context, newlines and hop headers included, and is absolute. A fact that does not fit is
skipped whole (never truncated) and smaller ones after it are still tried. Kept facts keep
their context order; a hop header is shown only with at least one of its kept facts, and
its size counts too.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.synth_context import SynthContext, format_header
from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import reasoning_key_terms

__all__ = [
    "CompactionRequest",
    "CompactionResult",
    "DroppedFact",
    "DroppedLine",
    "LineCompactor",
    "LineRanking",
    "fit_facts",
    "rank_facts",
]

# Reasons a line can be left out of the synthesis context.
REASON_BUDGET = "budget"  # did not fit in what was left of the budget
REASON_BLANK = "blank"  # empty or whitespace-only line (the blank line between hop blocks)
REASON_DUPLICATE = "duplicate_text"  # same text as a line already considered
REASON_ORPHAN_HEADER = "header_without_kept_facts"  # hop header whose facts all dropped
REASON_HOP_HEADER = "hop_header"  # a packer's synth context carries facts only, no hop headers


class DroppedFact(NamedTuple):
    """A fact left out of the synth context: its index in the request's facts, and why."""

    index: int
    fact: Fact
    reason: str


class DroppedLine(NamedTuple):
    """A line of the rendered full context left out, and why (for output only)."""

    position: int
    text: str
    reason: str


@dataclass(frozen=True)
class CompactionRequest:
    """What a compactor is given once the loop has stopped.

    ``context`` is the full context (the trajectory's facts in loop order, hop then rank then
    sentence, and the hop queries; layout ``"full"``, or ``"facts"`` for facts without hops);
    ``open_terms`` the key terms of sub-queries still open; ``budget`` the hard limit on the
    synth context in chars or reader tokens.
    """

    question: str
    context: SynthContext
    open_terms: tuple[str, ...]
    budget: Budget

    @property
    def facts(self) -> tuple[Fact, ...]:
        return self.context.facts

    @property
    def hop_queries(self) -> tuple[str, ...]:
        return self.context.hop_queries

    @classmethod
    def of_context(cls, question: str, context: SynthContext, budget: Budget) -> CompactionRequest:
        """A request to compact a synth context further (a reader fitting its window): its
        facts in the full layout (``"facts"`` stays ``"facts"``), no open terms."""
        layout = "facts" if context.layout == "facts" else "full"
        return cls(question, context.with_facts(context.facts, layout), (), budget)


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compactor kept and what it left out.

    ``context`` is the synth context (the kept facts, in context order); ``dropped`` every
    other fact of ``source`` (the full context compacted) with its reason, in loop order.
    ``budget`` is the limit and ``used`` the rendered context's real size in its unit;
    ``strategy`` names the compactor.
    """

    context: SynthContext
    dropped: tuple[DroppedFact, ...]
    source: SynthContext
    budget: Budget
    used: int
    strategy: str

    @property
    def kept_facts(self) -> tuple[Fact, ...]:
        return self.context.facts

    @property
    def text(self) -> str:
        return self.context.text

    def dropped_lines(self) -> tuple[DroppedLine, ...]:
        """Every line of the rendered full context not in the synth context, by position:
        the dropped facts, the blank separators, and the hop headers not shown (``hop_header``
        when the synth context shows none, else ``header_without_kept_facts``)."""
        full = self.source.rendering
        shown = self.context.rendering.header_lines
        header_reason = REASON_HOP_HEADER if self.context.layout == "facts" else REASON_ORPHAN_HEADER
        out = [DroppedLine(full.fact_lines[d.index], d.fact.line, d.reason) for d in self.dropped]
        out += [DroppedLine(i, "", REASON_BLANK) for i in full.blank_lines]
        out += [DroppedLine(line, format_header(q), header_reason)
                for q, line, kept in zip(self.source.hop_queries, full.header_lines, shown) if line >= 0 and kept < 0]
        return tuple(sorted(out))


@dataclass(frozen=True, slots=True, eq=False)
class LineRanking:
    """What the line compactor decides before it looks at the budget (see :func:`rank_facts`).

    ``ranked`` are ``(band, -overlap, position, index)`` of the facts to consider, best first
    (``position`` the fact's line in the full context, ``index`` its place in the request);
    ``skipped`` the duplicates, dropped whatever the budget; ``header_cost[h]`` what showing
    hop ``h``'s header adds in chars (0 in the ``"facts"`` layout).
    """

    request: CompactionRequest
    ranked: tuple[tuple[int, int, int, int], ...]
    skipped: tuple[DroppedFact, ...]
    header_cost: tuple[int, ...]


def rank_facts(request: CompactionRequest) -> LineRanking:
    """Rank the request's facts into the line compactor's bands.

    Band 0: the fact's line holds an open term (``request.open_terms``, lowercased) as a
    whitespace-separated token; band 1: the fact is in the latest hop (every fact, when the
    context has no hop headers); band 2: the rest. Within a band, lines holding more key terms
    of the question come first, then earlier lines. A line equal to an earlier one is skipped
    (``duplicate_text``).
    """
    context = request.context
    headed = context.layout != "facts"
    positions = context.rendering.fact_lines
    latest = len(context.hop_queries) - 1
    open_set = frozenset(t.lower() for t in request.open_terms)
    query_set = frozenset(reasoning_key_terms(request.question))
    skipped: list[DroppedFact] = []
    candidates: list[int] = []
    seen_text: set[str] = set()
    for i in sorted(range(len(context.facts)), key=positions.__getitem__):
        fact = context.facts[i]
        if fact.line in seen_text:
            skipped.append(DroppedFact(i, fact, REASON_DUPLICATE))
        else:
            seen_text.add(fact.line)
            candidates.append(i)
    hits = _token_hits([context.facts[i].line for i in candidates], open_set | query_set)
    ranked = []
    for k, i in enumerate(candidates):
        in_latest = not headed or context.facts[i].hop == latest
        found = hits.get(k)
        if found is None:
            ranked.append((1 if in_latest else 2, 0, positions[i], i))
        else:
            band = 0 if not found.isdisjoint(open_set) else 1 if in_latest else 2
            ranked.append((band, -len(query_set.intersection(found)), positions[i], i))
    ranked.sort()
    header_cost = tuple(len(format_header(q)) + 1 if headed else 0 for q in context.hop_queries)
    return LineRanking(request, tuple(ranked), tuple(skipped), header_cost)


def _token_hits(lines: list[str], terms: frozenset[str]) -> dict[int, set[str]]:
    """For each line with any, the ``terms`` that are whitespace-separated tokens of the lowercased line.

    Each line is lowercased on its own (one wide, non-ASCII char would make a whole-text
    lowercase several times slower); each term is then searched once in all of them, and an
    occurrence counts when whitespace, a line end or the text's ends bound it on both sides.
    """
    hits: dict[int, set[str]] = {}
    tokens = [t for t in terms if t.split() == [t]]  # a term with whitespace is never a token
    if not tokens or not lines:
        return hits
    lowered = [line.lower() for line in lines]  # lower() never makes a "\n"
    joined = "\n" + "\n".join(lowered) + "\n"  # line k is joined[starts[k]:starts[k + 1] - 1]
    starts = list(accumulate((len(line) + 1 for line in lowered), initial=1))
    find = joined.find
    for term in tokens:
        width = len(term)
        at = find(term)
        while at >= 0:
            if joined[at - 1].isspace() and joined[at + width].isspace():
                k = bisect_right(starts, at) - 1
                found = hits.get(k)
                if found is None:
                    hits[k] = {term}
                else:
                    found.add(term)
                at = find(term, starts[k + 1])  # line k holds the term: on to the next line
            else:
                at = find(term, at + width)  # tokens of one term never overlap
    return hits


def fit_facts(ranking: LineRanking, max_chars: int) -> tuple[tuple[int, ...], tuple[DroppedFact, ...]]:
    """``(kept, dropped)``: fact indices kept best first while they fit in ``max_chars`` (the
    budget contract above; kept in context order), and the facts left out, in loop order.
    ``ValueError`` if ``max_chars < 1``."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive int, got {max_chars!r}")
    facts = ranking.request.facts
    dropped = list(ranking.skipped)
    used = 0  # chars of emitted lines plus one separator per line after the first
    kept: list[tuple[int, int]] = []
    shown: set[int] = set()
    for _band, _neg_overlap, position, i in ranking.ranked:
        fact = facts[i]
        cost = len(fact.line) + (1 if used else 0)
        add_header = fact.hop not in shown
        if add_header and ranking.header_cost:
            cost += ranking.header_cost[fact.hop]
        if used + cost > max_chars:
            dropped.append(DroppedFact(i, fact, REASON_BUDGET))
            continue
        used += cost
        kept.append((position, i))
        shown.add(fact.hop)
    kept.sort()
    return tuple(i for _, i in kept), tuple(sorted(dropped))


@dataclass(frozen=True, slots=True)
class LineCompactor:
    """The deterministic line compactor (strategy ``line``): :func:`rank_facts` once, then
    :func:`fit_facts` to the budget.

    A char budget is used as is; for a token budget the largest char limit whose rendered
    output fits in the tokens is found by bisection (the output only grows with the limit).
    """

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        budget = request.budget
        ranking = rank_facts(request)
        layout = "facts" if request.context.layout == "facts" else "headed"

        def run(max_chars: int) -> tuple[SynthContext, tuple[DroppedFact, ...]]:
            kept, dropped = fit_facts(ranking, max_chars)
            return request.context.with_facts([request.facts[i] for i in kept], layout), dropped

        if budget.unit == "chars":
            context, dropped = run(budget.limit)
        else:
            lo, hi, best = 1, max(1, len(request.context.text)), None
            while lo <= hi:
                mid = (lo + hi) // 2
                attempt = run(mid)
                if budget.measure(attempt[0].text) <= budget.limit:
                    best, lo = attempt, mid + 1
                else:
                    hi = mid - 1
            context, dropped = best if best is not None else run(1)
        return CompactionResult(context, dropped, request.context, budget, budget.measure(context.text), "line")

