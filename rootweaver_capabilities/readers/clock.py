"""The reader's clock for one-shot commands: load before the deadline, time the answer.

Contract: a reader's ``timeout_s`` covers one answer, never the one-off
set-up. :func:`load_reader` loads the model and tokenizer (``synthesizer.load()``, as
``serve`` does) before any deadline opens and returns the seconds it took;
:class:`TimedSynthesizer` wraps the synthesizer so the command knows how long the answer
itself took; :func:`deadline_note` turns a missed deadline into the one line a person
reads: the measured load and generation times and the deadline, so "the reader is too
slow on this machine" is said once, with numbers, instead of a bare fallback label.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rootweaver_innovations.compaction.synth_context import SynthContext

__all__ = ["TimedSynthesizer", "deadline_note", "load_reader"]


def load_reader(synthesizer: Any) -> float:
    """Load ``synthesizer``'s reader now (its ``load()``, when it has one) and return the
    wall seconds spent (0.0 for a synthesizer with nothing to load)."""
    start = time.perf_counter()
    load = getattr(synthesizer, "load", None)
    if load is not None:
        load()
    return time.perf_counter() - start


class TimedSynthesizer:
    """A synthesizer that forwards every call to ``inner`` and keeps the wall seconds of the
    last call in ``seconds`` (``None`` before the first)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.seconds: float | None = None

    def __call__(self, question: str, context: SynthContext) -> Any:
        start = time.perf_counter()
        try:
            return self.inner(question, context)
        finally:
            self.seconds = time.perf_counter() - start


def deadline_note(answer: Mapping[str, Any] | None, load_s: float, answer_s: float | None,
                  timeout_s: float) -> str | None:
    """One line saying the reader missed its deadline on this machine, with the measured
    load time (paid before the deadline) and answer time, when ``answer`` (an
    :func:`~rootweaver_capabilities.records.answer_record`) failed with ``deadline``;
    ``None`` otherwise."""
    if not answer or answer.get("error_kind") != "deadline":
        return None
    spent = "unknown" if answer_s is None else f"{answer_s:.1f} s"
    return (f"rootweaver: note: the reader could not answer within its {timeout_s:g} s deadline on this machine "
            f"(model load {load_s:.1f} s, before the deadline; answer stopped after {spent}); "
            "raise --timeout or use a faster reader")
