"""The synth context as a record, and its one rendering to text.

A :class:`SynthContext` is facts plus the hop queries they came from, in one of three
layouts:

- ``"full"``, the trajectory context: every hop in order as a header line
  ``"From query: <sub-query>"`` followed by its fact lines, hops separated by one blank
  line; a hop with no facts is its header alone;
- ``"headed"``, what the line compactor keeps: the header of each hop that has facts, then
  those facts, no blank lines;
- ``"facts"``, what the packers keep: the fact lines alone.

Fact lines are :attr:`~rootweaver_innovations.records.Fact.line`. The text is rendered on first
use and kept; nothing in the package parses it back.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import fold_whitespace

__all__ = ["HOP_HEADER_PREFIX", "LAYOUTS", "Rendering", "SynthContext", "format_header"]

HOP_HEADER_PREFIX = "From query:"
LAYOUTS = ("full", "headed", "facts")


def format_header(sub_query: str) -> str:
    """A hop's header line; whitespace in the sub-query folded to single spaces."""
    return f"{HOP_HEADER_PREFIX} {fold_whitespace(sub_query)}"


@dataclass(frozen=True, slots=True)
class Rendering:
    """A context's text and where each part landed (0-based line indices).

    ``fact_lines[i]`` is the line of ``facts[i]``; ``header_lines[h]`` that of hop ``h``'s
    header, -1 when the layout does not show it; ``blank_lines`` the separators.
    """

    text: str
    fact_lines: tuple[int, ...]
    header_lines: tuple[int, ...]
    blank_lines: tuple[int, ...]
    line_count: int


@dataclass(frozen=True)
class SynthContext:
    """Facts, the hop queries they came from, and a layout (see the module docstring).

    ``hop_queries[h]`` is hop ``h``'s sub-query; in the ``"full"`` and ``"headed"`` layouts every
    fact's ``hop`` must index it (``ValueError`` otherwise) and facts are shown grouped by hop,
    in their given order within a hop. An unknown layout is a ``ValueError``.
    """

    facts: tuple[Fact, ...]
    hop_queries: tuple[str, ...]
    layout: str = "full"

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        hops = len(self.hop_queries)
        if self.layout != "facts" and self.facts and max(f.hop for f in self.facts) >= hops:  # Fact.hop >= 0
            i, f = next((i, f) for i, f in enumerate(self.facts) if f.hop >= hops)
            raise ValueError(f"fact {i} has hop {f.hop}, but there are {hops} hops")

    @functools.cached_property
    def rendering(self) -> Rendering:
        """The text and line map, rendered on first use."""
        return _render(self.facts, self.hop_queries, self.layout)

    @property
    def text(self) -> str:
        return self.rendering.text

    def with_facts(self, facts: Sequence[Fact], layout: str) -> SynthContext:
        """A context over ``facts`` (a subset of these) with the same hop queries."""
        return SynthContext(tuple(facts), self.hop_queries, layout)


def _render(facts: Sequence[Fact], hop_queries: Sequence[str], layout: str) -> Rendering:
    lines: list[str] = []
    fact_lines = [0] * len(facts)
    if layout == "facts":
        for i, f in enumerate(facts):
            fact_lines[i] = i
            lines.append(f.line)
        return Rendering("\n".join(lines), tuple(fact_lines), (-1,) * len(hop_queries), (), len(lines))
    by_hop: list[list[int]] = [[] for _ in hop_queries]
    for i, f in enumerate(facts):
        by_hop[f.hop].append(i)
    header_lines = [-1] * len(hop_queries)
    blank_lines = []
    for h, query in enumerate(hop_queries):
        if layout == "headed" and not by_hop[h]:
            continue
        if h and layout == "full":
            blank_lines.append(len(lines))
            lines.append("")
        header_lines[h] = len(lines)
        lines.append(format_header(query))
        for i in by_hop[h]:
            fact_lines[i] = len(lines)
            lines.append(facts[i].line)
    return Rendering("\n".join(lines), tuple(fact_lines), tuple(header_lines), tuple(blank_lines), len(lines))
