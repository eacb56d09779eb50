"""The text layout of a trajectory context: hop headers and one fact per line.

A context is hop blocks joined by a blank line. A block is a header line
``"From query: <sub-query>"`` followed by fact lines ``"<title> | <sentence>"``.
"""

from __future__ import annotations

__all__ = ["FACT_SEPARATOR", "HOP_HEADER_PREFIX", "format_fact", "format_header", "is_header", "parse_fact"]

HOP_HEADER_PREFIX = "From query:"
FACT_SEPARATOR = " | "


def format_header(sub_query: str) -> str:
    return f"{HOP_HEADER_PREFIX} {' '.join(sub_query.split())}"


def format_fact(title: str, sentence: str) -> str:
    """One fact line; newlines inside title or sentence are folded to spaces."""
    return f"{' '.join(title.split())}{FACT_SEPARATOR}{' '.join(sentence.split())}"


def is_header(line: str) -> bool:
    return line.startswith(HOP_HEADER_PREFIX)


def parse_fact(line: str) -> tuple[str, str] | None:
    """``(title, sentence)`` of a fact line, or ``None`` for a header or a free line."""
    if is_header(line) or FACT_SEPARATOR not in line:
        return None
    title, _, sentence = line.partition(FACT_SEPARATOR)
    return title, sentence
