"""The registry of answer rules, by config name (``answer_rules: [...]``).

An answer rule (:class:`~rootweaver_innovations.loop.multihop.AnswerRule`) answers from every fact
the loop read, with no reader; the loop tries the configured rules in order and the reader
answers when none settles the question. A new rule is one module and one
:func:`register_answer_rule` call, then its name in the config. The built-in:
``unknown_source`` (:func:`~rootweaver_innovations.answer_rules.cited_sources.unknown_source_answer`:
``insufficient information`` when the question cites a publication none of the read documents
comes from or names) and ``date_comparison``
(:func:`~rootweaver_innovations.conventions.wikipedia.dates.date_comparison_answer`, which reads
Wikipedia-style lead sentences).
"""

from __future__ import annotations

from collections.abc import Sequence

from rootweaver_innovations.answer_rules.cited_sources import unknown_source_answer
from rootweaver_innovations.conventions.wikipedia.dates import date_comparison_answer
from rootweaver_innovations.loop.result import AnswerRule
from rootweaver_innovations.defaults import DEFAULT_ANSWER_RULES
from rootweaver_innovations.registry import register

__all__ = ["ANSWER_RULES", "DEFAULT_ANSWER_RULES", "answer_rule_names", "make_answer_rules", "register_answer_rule"]

ANSWER_RULES: dict[str, AnswerRule] = {}


def register_answer_rule(name: str, rule: AnswerRule) -> None:
    """Add ``rule`` under a new non-empty ``name`` (``ValueError`` otherwise)."""
    register(ANSWER_RULES, "answer rule", name, rule)


def answer_rule_names() -> tuple[str, ...]:
    """Registered rule names, in registration order."""
    return tuple(ANSWER_RULES)


def make_answer_rules(names: Sequence[str]) -> tuple[AnswerRule, ...]:
    """The rules named, in the given order (``ValueError`` naming the choices for an unknown
    name, or for a name given twice)."""
    if len(set(names)) != len(names):
        raise ValueError(f"answer rules name one rule twice: {list(names)}")
    unknown = [n for n in names if n not in ANSWER_RULES]
    if unknown:
        raise ValueError(f"unknown answer rule {unknown[0]!r}; choose from {sorted(ANSWER_RULES)}")
    return tuple(ANSWER_RULES[n] for n in names)


register_answer_rule("unknown_source", unknown_source_answer)
register_answer_rule("date_comparison", date_comparison_answer)
