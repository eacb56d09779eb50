"""Extractive line compactor for the synthesis context, and the shared key-term extractor.

Pure: no I/O, no model, no clock. ``reasoning_key_terms`` is the single term extractor
used both here and by ``MultiHopRAG``'s answerability check, so the two can never
disagree about which words matter.

Budget contract of :func:`compact_lines`: ``max_chars`` counts every character of the
returned text, the ``"\\n"`` separators included, and is absolute. A line that does not
fit is skipped whole (never truncated) and smaller lines after it are still tried. Kept
lines come out in their original order; a hop header (``"From query: ..."``) is emitted
only together with at least one of its kept facts and its characters count too.
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from .context_format import HOP_HEADER_PREFIX, ContextLayout, render_context
from .records import Fact

if TYPE_CHECKING:
    from .packing.budget import Budget

__all__ = [
    "HOP_HEADER_PREFIX",
    "STOP_WORDS",
    "CompactionRequest",
    "CompactionResult",
    "DroppedLine",
    "KeptLine",
    "LineRanking",
    "compact_lines",
    "fit_lines",
    "rank_lines",
    "reasoning_key_terms",
]

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also among an and any are aren't as at be
    because been before being below between both but by can cannot could couldn't did
    didn't do does doesn't doing don't down during each either else ever every few for
    from further had hadn't has hasn't have haven't having he her here hers herself him
    himself his how however i if in into is isn't it it's its itself just least less let
    like many may me might more most much must mustn't my myself neither never no nor not
    now of off often on once only or other others otherwise our ours ourselves out over
    own per perhaps rather same shall she should shouldn't since so some such than that
    that's the their theirs them themselves then there there's these they this those
    though through thus to too under until up upon us very was wasn't we were weren't
    what what's when where whether which while who who's whom whose why will with within
    without won't would wouldn't yet you your yours yourself yourselves
    """.split()
)

# Reasons a line can be left out of the synthesis context.
REASON_BUDGET = "budget"  # did not fit in what was left of max_chars
REASON_BLANK = "blank"  # empty or whitespace-only line
REASON_DUPLICATE = "duplicate_text"  # same text as a line already considered
REASON_ORPHAN_HEADER = "header_without_kept_facts"  # hop header whose facts all dropped
REASON_HOP_HEADER = "hop_header"  # a packer's synth context carries facts only, no hop headers


def reasoning_key_terms(text: str) -> list[str]:
    """Return the key terms of ``text`` in order of appearance, duplicates kept.

    A key term is a token of ``text.lower().split()`` (whitespace split, punctuation NOT
    stripped) that is longer than 3 characters and not in :data:`STOP_WORDS`.
    """
    return [t for t in text.lower().split() if len(t) > 3 and t not in STOP_WORDS]


class KeptLine(NamedTuple):
    """A line of the input kept in the output (an immutable tuple: cheap to build per line).

    ``position`` is its 0-based line index in the input; ``band`` is the priority band
    that admitted it (0 open sub-query term, 1 latest hop block, 2 the rest) or, for a hop
    header, the band of the best fact it was emitted with.
    """

    position: int
    text: str
    band: int


class DroppedLine(NamedTuple):
    """A line of the input left out, and why (one of the ``REASON_*`` values)."""

    position: int
    text: str
    reason: str


@dataclass(frozen=True)
class CompactionRequest:
    """What a compactor is given once the loop has stopped.

    ``facts`` are the trajectory's facts in loop order (hop, then rank, then sentence);
    ``hop_queries[h]`` is the sub-query of hop ``h`` (every ``fact.hop`` indexes it);
    ``open_terms`` the key terms of sub-queries still open; ``budget`` the hard limit on the
    synth context in chars or reader tokens. The full context these describe is
    :attr:`layout`.
    """

    question: str
    facts: tuple[Fact, ...]
    hop_queries: tuple[str, ...]
    open_terms: tuple[str, ...]
    budget: Budget

    @classmethod
    def of_facts(cls, question: str, facts: Sequence[Fact], budget: Budget) -> CompactionRequest:
        """A request over facts without their loop (a reader cutting its own prompt): each
        hop's query is the ``sub_query`` its facts carry, ``""`` for a hop none of them has;
        no open terms."""
        hop_queries = [""] * (max((f.hop for f in facts), default=-1) + 1)
        for f in facts:
            hop_queries[f.hop] = hop_queries[f.hop] or f.sub_query
        return cls(question, tuple(facts), tuple(hop_queries), (), budget)

    @functools.cached_property
    def layout(self) -> ContextLayout:
        """:func:`~rootweaver_innovations.context_format.render_context` of facts and hop
        queries, rendered on first use and kept (the input cap and the compactor share it);
        ``ValueError`` if a fact's hop is not an index of ``hop_queries``."""
        return render_context(self.facts, self.hop_queries)


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compactor kept and what it left out.

    ``text`` is the compacted context; ``kept`` and ``dropped`` together account for
    every line of the full context exactly once (positions are its 0-based line indices).
    ``kept_facts`` are the facts behind the kept lines, in context order. ``limit`` and
    ``unit`` (``"chars"`` or ``"tokens"``) are the budget and ``used`` the text's real size
    in that unit. ``strategy`` names the compactor that produced it.
    """

    text: str
    kept: tuple[KeptLine, ...]
    dropped: tuple[DroppedLine, ...]
    limit: int
    input_chars: int
    strategy: str = "line"
    unit: str = "chars"
    used: int = 0
    kept_facts: tuple[Fact, ...] = ()

    @property
    def output_chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True, eq=False)
class LineRanking:
    """What :func:`compact_lines` decides before it looks at the budget (see :func:`rank_lines`).

    ``lines`` are the context's lines; ``headers`` the positions of hop headers;
    ``header_of[i]`` the position of the header governing line ``i`` (-1 if none);
    ``skipped`` the blank and duplicate lines, dropped whatever the budget; ``ranked`` the
    remaining fact lines as ``(band, -overlap, position)``, best first; ``input_chars`` the
    context's length.
    """

    lines: tuple[str, ...]
    headers: tuple[int, ...]
    header_of: tuple[int, ...]
    skipped: tuple[DroppedLine, ...]
    ranked: tuple[tuple[int, int, int], ...]
    input_chars: int


def rank_lines(context: str, *, question: str = "", open_terms: Iterable[str] = ()) -> LineRanking:
    """Split ``context`` into lines and rank its fact lines (the bands of :func:`compact_lines`).

    A line's hits are the key terms of ``question`` and the lowercased ``open_terms`` that
    are whitespace-separated tokens of the lowercased line.
    """
    lines = context.split("\n")
    open_set = frozenset(t.lower() for t in open_terms)
    query_set = frozenset(reasoning_key_terms(question))

    headers: list[int] = []
    header_of: list[int] = []
    skipped: list[DroppedLine] = []
    facts: list[int] = []
    seen_text: set[str] = set()
    current = -1
    for i, line in enumerate(lines):
        if line.startswith(HOP_HEADER_PREFIX):
            current = i
            headers.append(i)
        elif not line or line.isspace():
            skipped.append(DroppedLine(i, line, REASON_BLANK))
        elif line in seen_text:
            skipped.append(DroppedLine(i, line, REASON_DUPLICATE))
        else:
            seen_text.add(line)
            facts.append(i)
        header_of.append(current)
    latest = current
    hits = _token_hits([lines[i] for i in facts], open_set | query_set)
    ranked = [(1 if i >= latest else 2, 0, i) for k, i in enumerate(facts) if k not in hits]
    for k, found in hits.items():
        i = facts[k]
        band = 0 if not found.isdisjoint(open_set) else 1 if i >= latest else 2
        ranked.append((band, -len(query_set.intersection(found)), i))
    ranked.sort()
    return LineRanking(tuple(lines), tuple(headers), tuple(header_of), tuple(skipped), tuple(ranked), len(context))


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


_position = itemgetter(0)


def fit_lines(ranking: LineRanking, max_chars: int) -> CompactionResult:
    """Keep ranked lines best first while they fit in ``max_chars`` (the budget contract of
    :func:`compact_lines`); ``ValueError`` if ``max_chars < 1``."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive int, got {max_chars!r}")
    lines, header_of = ranking.lines, ranking.header_of
    dropped = list(ranking.skipped)
    used = 0  # chars of emitted lines plus one separator per line after the first
    kept_band: dict[int, int] = {}
    for band, _neg_overlap, i in ranking.ranked:
        line = lines[i]
        header = header_of[i]
        cost = len(line) + (1 if used else 0)
        add_header = header >= 0 and header not in kept_band
        if add_header:
            cost += len(lines[header]) + 1
        if used + cost > max_chars:
            dropped.append(DroppedLine(i, line, REASON_BUDGET))
            continue
        used += cost
        kept_band[i] = band
        if add_header:
            kept_band[header] = band
    dropped.extend(DroppedLine(h, lines[h], REASON_ORPHAN_HEADER) for h in ranking.headers if h not in kept_band)

    order = sorted(kept_band)
    kept = tuple(KeptLine(i, lines[i], kept_band[i]) for i in order)
    text = "\n".join([lines[i] for i in order])
    return CompactionResult(
        text=text,
        kept=kept,
        dropped=tuple(sorted(dropped, key=_position)),  # positions are distinct
        limit=max_chars,
        input_chars=ranking.input_chars,
        used=len(text),
    )


def compact_lines(
    context: str,
    *,
    max_chars: int,
    question: str = "",
    open_terms: Iterable[str] = (),
) -> CompactionResult:
    """Keep the most useful lines of ``context`` within ``max_chars`` characters.

    Bands: 0 = the line holds a key term of a still-open sub-query (``open_terms``);
    1 = the line sits in the latest hop block (at or after the last hop header; the whole
    text when there is none); 2 = the rest. Within a band, lines with more key terms of
    ``question`` come first, then earlier lines. Raises ``ValueError`` if
    ``max_chars < 1`` (:func:`fit_lines` checks it). Equal to ``fit_lines(rank_lines(...), max_chars)``.
    """
    return fit_lines(rank_lines(context, question=question, open_terms=open_terms), max_chars)
