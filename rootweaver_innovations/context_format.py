"""The text layout of a trajectory context: hop headers and one fact per line.

A context is hop blocks joined by a blank line. A block is a header line
``"From query: <sub-query>"`` followed by fact lines ``"<title> | <sentence>"``. Contexts are
rendered from records here, once; :func:`parse_fact` exists only for text the code did not
render itself (a user's context handed to :func:`~rootweaver_innovations.compaction.compact_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import Fact

__all__ = [
    "FACT_SEPARATOR",
    "HOP_HEADER_PREFIX",
    "ContextLayout",
    "fold_whitespace",
    "format_fact",
    "format_header",
    "is_header",
    "parse_fact",
    "render_context",
]

HOP_HEADER_PREFIX = "From query:"
FACT_SEPARATOR = " | "


def fold_whitespace(text: str) -> str:
    """``text`` with every whitespace run (newlines included) folded to one space, ends stripped."""
    return " ".join(text.split())


def format_header(sub_query: str) -> str:
    return f"{HOP_HEADER_PREFIX} {fold_whitespace(sub_query)}"


def format_fact(title: str, sentence: str) -> str:
    """One fact line; newlines inside title or sentence are folded to spaces."""
    return f"{fold_whitespace(title)}{FACT_SEPARATOR}{fold_whitespace(sentence)}"


def is_header(line: str) -> bool:
    return line.startswith(HOP_HEADER_PREFIX)


def parse_fact(line: str) -> tuple[str, str] | None:
    """``(title, sentence)`` of a fact line, or ``None`` for a header or a free line."""
    if is_header(line) or FACT_SEPARATOR not in line:
        return None
    title, _, sentence = line.partition(FACT_SEPARATOR)
    return title, sentence


@dataclass(frozen=True, slots=True)
class ContextLayout:
    """A rendered context and where each record landed in it.

    ``fact_lines[i]`` is the 0-based line index of ``facts[i]``; ``header_lines[h]`` that of
    hop ``h``'s header.
    """

    text: str
    fact_lines: tuple[int, ...]
    header_lines: tuple[int, ...]


def render_context(facts: Sequence[Fact], hop_queries: Sequence[str]) -> ContextLayout:
    """The full context: per hop (in order) its header, then its facts in the given order.

    Hops are separated by one blank line; a hop with no facts is rendered as its header
    alone. ``ValueError`` if a fact's ``hop`` is not an index of ``hop_queries``.
    """
    by_hop: list[list[int]] = [[] for _ in hop_queries]
    for i, f in enumerate(facts):
        if not 0 <= f.hop < len(hop_queries):
            raise ValueError(f"fact {i} has hop {f.hop}, but there are {len(hop_queries)} hops")
        by_hop[f.hop].append(i)
    lines: list[str] = []
    fact_lines = [0] * len(facts)
    header_lines = []
    for h, query in enumerate(hop_queries):
        if h:
            lines.append("")
        header_lines.append(len(lines))
        lines.append(format_header(query))
        for i in by_hop[h]:
            fact_lines[i] = len(lines)
            lines.append(facts[i].line)
    return ContextLayout("\n".join(lines), tuple(fact_lines), tuple(header_lines))
