"""Sub-queries for the ``coverage`` stop rule, and when a sub-query counts as answered.

:class:`RuleDecomposer` splits a comparison question into one sub-query per compared entity
(as the corpus's conventions read the question) and otherwise adds bridge sub-queries for
the named entities the first hop found. :func:`is_answered` is the answerability check both
stop rules and the line compactor's open terms share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.defaults import ANSWERABILITY_THRESHOLD
from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import entity_spans, fold_whitespace, reasoning_key_terms

__all__ = ["RuleDecomposer", "fact_tokens", "is_answered"]


def fact_tokens(facts: Sequence[Fact]) -> set[str]:
    """Lowercase whitespace tokens of the facts' context lines (hop headers are not facts)."""
    out: set[str] = set()
    for f in facts:
        out.update(f.line.lower().split())
    return out


def is_answered(sub_query: str, context_tokens: set[str], threshold: float = ANSWERABILITY_THRESHOLD) -> bool:
    """True when at least ``threshold`` of the sub-query's key terms occur in the context.

    A sub-query with no key terms counts as answered (there is nothing left to look for).
    """
    terms = reasoning_key_terms(sub_query)
    if not terms:
        return True
    return sum(t in context_tokens for t in terms) >= threshold * len(terms)


def _bare(token: str) -> str:
    return token.strip(".,;:!?\"'()[]")


@dataclass(frozen=True, slots=True)
class RuleDecomposer:
    """Deterministic decomposer for bridge and comparison questions (HotpotQA-style).

    Comparison (the two entities ``conventions`` finds compared, e.g. "Are X and Y both
    ...", "... X or Y?" under ``wikipedia``): one sub-query per entity plus the question's
    remaining key terms. Otherwise the question itself, then up to
    ``max_bridges`` bridge sub-queries: named entities found in the facts retrieved for
    the question that are neither in the question nor the title of a retrieved passage,
    each with the question terms its own sentence lacks.
    """

    max_bridges: int = 2
    conventions: Conventions = field(default_factory=default_conventions)

    def __call__(self, question: str, facts: Sequence[Fact]) -> list[str]:
        question = " ".join(question.split())
        pair = self.conventions.compared_entities(question)
        if pair is not None:
            names = {_bare(t) for t in " ".join(pair).lower().split()}
            rest = [t for t in reasoning_key_terms(question) if _bare(t) not in names]
            return [" ".join([e, *rest]) for e in pair]
        return [question, *self._bridges(question, facts)]

    def _bridges(self, question: str, facts: Sequence[Fact]) -> list[str]:
        if not facts:
            return []
        q_lower = question.lower()
        q_terms = reasoning_key_terms(question)
        titles = {fold_whitespace(f.title).lower() for f in facts}
        first_block = [f.body for f in facts if f.hop == 0]  # what the question itself retrieved
        scored = sorted(
            enumerate(first_block),
            key=lambda p: (-len(set(q_terms).intersection(p[1].lower().split())), p[0]),
        )
        out: list[str] = []
        seen: set[str] = set()
        for _, sentence in scored:
            sent_tokens = set(sentence.lower().split())
            for span in entity_spans(sentence):
                low = span.lower()
                if low in q_lower or low in titles or low in seen or not reasoning_key_terms(span):
                    continue
                seen.add(low)
                missing = [t for t in q_terms if t not in sent_tokens and t not in low.split()]
                out.append(" ".join([span, *missing]))
                if len(out) >= self.max_bridges:
                    return out
        return out
