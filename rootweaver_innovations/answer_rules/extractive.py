"""The answer when no reader model is configured: extractive, deterministic, clearly labelled.

:func:`extractive_answer` picks, among the synth context's facts, the sentence the
``evidence`` packer's answer model scores most likely to hold the answer (the model the
packer already uses, so no second model), then cuts from it the span the question asks
for: a date or year for *when* questions, a number for *how many/much/long/old*, one of
the named options for *A or B* questions, else the first capitalised name the question does
not already contain, a one-word sentence opener such as "According" only when no other fits
(names and options come from :func:`~rootweaver_innovations.text.entity_spans` and the
compared entities of the loop's conventions). With no such span the whole
sentence is the answer. The sentence's fact is always cited, so a reader of the output can
check the span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.compaction.evidence import score, shipped_model
from rootweaver_innovations.compaction.packing import Budget, fact_candidates, packing_problem
from rootweaver_innovations.loop.result import Answer, Synthesizer
from rootweaver_innovations.records import Fact
from rootweaver_innovations.text import MONTH_PATTERN, entity_spans

__all__ = ["EXTRACTIVE_METHOD", "ExtractiveSynthesizer", "answer_span", "extractive_answer", "extractive_synthesizer",
           "extractive_under", "load_extractive"]

EXTRACTIVE_METHOD = "extractive (no LLM): evidence-model sentence and span"
_SCORING_BUDGET = Budget(10_000, "tokens")  # only for the model's cost feature; nothing is packed

_MONTH = f"(?:{MONTH_PATTERN})"
_DATE = re.compile(rf"\b(?:\d{{1,2}} {_MONTH},? \d{{4}}|{_MONTH} \d{{1,2}},? \d{{4}}|{_MONTH} \d{{4}}|1[0-9]{{3}}|20[0-9]{{2}})\b")
_NUMBER = re.compile(r"\b\d[\d,.]*(?:\s+(?:million|billion|thousand|hundred))?(?:\s+[a-z]+)?")


def answer_span(question: str, sentence: str, conventions: Conventions | None = None) -> str:
    """The part of ``sentence`` that answers ``question``'s type, or ``""`` when none fits;
    the options of a comparison are the entities ``conventions`` (default member when
    ``None``) finds compared."""
    q = question.lower()
    if q.startswith("when") or re.search(r"\b(?:what|which) (?:year|date)\b", q):
        m = _DATE.search(sentence)
        return m.group(0) if m else ""
    if re.search(r"\bhow (?:many|much|long|old|tall|far)\b", q):
        m = _NUMBER.search(sentence)
        return m.group(0).strip() if m else ""
    options = (conventions or default_conventions()).compared_entities(question)
    if options is not None:  # "A or B" / "Are A and B ...": the option the sentence names, the first if both
        named = [o for o in options if o.lower() in sentence.lower()]
        if named:
            return named[0]
    for skip_initial in (True, False):  # a one-word sentence opener ("According", "It") only as a last resort
        for name in entity_spans(sentence, skip_initial=skip_initial):
            if name.lower() not in q:
                return name
    return ""


def load_extractive() -> None:
    """Load what the first extractive answer reads (the evidence model and the token counter
    of its cost feature, ~0.7 s) now, so that a reader's fallback is not slowed by it after
    the reader's deadline has passed."""
    shipped_model()
    _SCORING_BUDGET.token_counter  # noqa: B018 - loads and caches the shared counter


def extractive_answer(question: str, facts: Sequence[Fact], conventions: Conventions | None = None) -> Answer:
    """Answer ``question`` from ``facts`` (the synth context's) without a language model.

    Deterministic; empty ``facts`` give an empty answer. ``text`` is the span (or the
    sentence; :func:`answer_span` under ``conventions``); the chosen fact is the one citation.
    """
    cands = fact_candidates(question, facts)
    if not cands:
        return Answer(text="", citations=(), method=EXTRACTIVE_METHOD)
    p = score(packing_problem(cands, question, _SCORING_BUDGET)).answers
    fact = [f for f in facts if f.sentence.strip()][int(np.argmax(p))]
    span = answer_span(question, fact.sentence, conventions)
    return Answer(text=span or fact.body, citations=(fact,), method=EXTRACTIVE_METHOD)


def extractive_synthesizer(question: str, context: SynthContext) -> Answer:
    """:func:`extractive_answer` as a ``Synthesizer`` (it reads the synth context's facts),
    under the default conventions (:func:`extractive_under` for others)."""
    return extractive_answer(question, context.facts)


@dataclass(frozen=True, slots=True)
class ExtractiveSynthesizer:
    """:func:`extractive_answer` under ``conventions`` as a ``Synthesizer``."""

    conventions: Conventions

    def __call__(self, question: str, context: SynthContext) -> Answer:
        return extractive_answer(question, context.facts, self.conventions)


def extractive_under(conventions: Conventions) -> Synthesizer:
    """The extractive synthesizer for a loop under ``conventions``: :func:`extractive_synthesizer`
    itself for the default member (so a configured loop and the library's default agree),
    else an :class:`ExtractiveSynthesizer`."""
    if conventions.name == default_conventions().name:
        return extractive_synthesizer
    return ExtractiveSynthesizer(conventions)
