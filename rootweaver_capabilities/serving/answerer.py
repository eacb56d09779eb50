"""The answering core behind the HTTP service and the MCP server (no web framework here).

:class:`Answerer` loads the index and the reader once (at construction) and warms up the
lazily loaded models with one extractive answer, then answers questions through
:class:`~rootweaver_capabilities.capability.MultiHopCapability` on a bounded thread pool, so an
event loop never blocks on retrieval, compaction or the reader:

- admission is decided at once: ``service.concurrency`` answers run, ``service.queue_depth``
  more wait; one more raises :class:`Refusal` 503 (with ``Retry-After``) without queueing;
- a question is checked first: empty (422) or over ``service.max_question_chars`` (413);
- the request deadline (``service.request_timeout_s``) runs from admission: the reader gets
  what is left of it (and degrades to the labelled extractive answer when it passes, as it
  does on any reader failure); a request still unanswered at 1.1x the deadline is a 504;
- per-request ``max_tokens`` / ``compaction`` overrides run on a capability built from
  ``dataclasses.replace`` of the frozen config, cached (at most :data:`MAX_VARIANTS`, least
  recently used evicted); the retriever, the reader and the metrics are shared, never mutated.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rootweaver_innovations.answer_rules.extractive import extractive_synthesizer
from rootweaver_innovations.loop.multihop import Hop, Synthesizer
from rootweaver_innovations.compaction.strategies import strategy_names

from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.flags import StaticFlagProvider
from rootweaver_capabilities.metrics import Metrics
from rootweaver_capabilities.assembly import build_retriever, build_synthesizer
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_capabilities.result_json import result_record

__all__ = ["COMPACTION_CHOICES", "MAX_VARIANTS", "AskOptions", "Answerer", "Refusal", "internal_error"]

COMPACTION_CHOICES = ("off", *strategy_names())
MAX_VARIANTS = 8
WARM_UP_QUESTION = "Which of the two companies was founded first, and in which country?"
DEADLINE_GRACE = 1.1  # the backstop: the reader stops at the deadline, the loop itself has no deadline


class Refusal(Exception):
    """A request answered with an error instead of an answer: HTTP ``status``, a one-line
    ``message`` and, for 503, ``retry_after`` seconds."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class AskOptions:
    """Per-request overrides: the synth-context budget in reader tokens, the compaction
    strategy (``"off"`` for the full context); ``None`` keeps the config's."""

    max_tokens: int | None = None
    compaction: str | None = None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def internal_error(exc: BaseException) -> Refusal:
    """The 500 for an exception nobody expected: its type and its message on one line."""
    return Refusal(500, f"internal error: {type(exc).__name__}: {_one_line(exc)}")


class Answerer:
    """Answers questions for one process (see the module docstring); thread-safe.
    ``synthesizer`` defaults to :func:`build_synthesizer` of ``config``."""

    def __init__(self, config: MultiHopConfig, metrics: Metrics | None = None, synthesizer: Synthesizer | None = None):
        self.config = config
        self.metrics = metrics
        self.retriever = build_retriever(config.retriever)  # the memory-mapped index, opened now
        self.synthesizer = synthesizer if synthesizer is not None else build_synthesizer(config)
        if hasattr(self.synthesizer, "load"):  # the embedded model / tokenizer, loaded before serving
            self.synthesizer.load()
        self._warm_up()
        self._base = MultiHopCapability(config, retriever=self.retriever, synthesizer=self.synthesizer,
                                        metrics=metrics)
        self._variants: OrderedDict[tuple[bool, str, str, int], MultiHopCapability] = OrderedDict()
        self._lock = threading.Lock()
        svc = config.service
        self._capacity = svc.concurrency + svc.queue_depth
        self._admitted = 0
        self._pool = ThreadPoolExecutor(svc.concurrency, thread_name_prefix="rootweaver-answer")

    def _warm_up(self) -> None:
        """Answer one question extractively, off the books (no flags, no metrics), so the
        lazily loaded models of retrieval, compaction and the extractive answer are in
        memory before the first request (about 0.7 s otherwise, paid by that request)."""
        flags = StaticFlagProvider({self.config.flags.capability_flag: True})
        MultiHopCapability(self.config, flags=flags, retriever=self.retriever,
                           synthesizer=extractive_synthesizer).execute(RequestContext(query=WARM_UP_QUESTION))

    def _capability(self, config: MultiHopConfig) -> MultiHopCapability:
        """A variant of the configured capability: its own config, everything else shared."""
        return MultiHopCapability(config, flags=self._base.flags, retriever=self.retriever,
                                  synthesizer=self.synthesizer, metrics=self.metrics)

    def capability(self, options: AskOptions) -> MultiHopCapability:
        """The capability for ``options``: the configured one, or a cached variant."""
        base = self.config.compaction
        comp = base
        if options.compaction == "off":
            comp = dataclasses.replace(comp, enabled=False)
        elif options.compaction is not None:
            comp = dataclasses.replace(comp, enabled=True, strategy=options.compaction)
        if options.max_tokens is not None:
            comp = dataclasses.replace(comp, unit="tokens", budget=options.max_tokens)
        if comp == base:
            return self._base
        key = (comp.enabled, comp.strategy, comp.unit, comp.budget)
        with self._lock:
            variant = self._variants.get(key)
            if variant is None:
                variant = self._capability(dataclasses.replace(self.config, compaction=comp))
                self._variants[key] = variant
                if len(self._variants) > MAX_VARIANTS:
                    self._variants.popitem(last=False)
            else:
                self._variants.move_to_end(key)
            return variant

    def check(self, question: str, options: AskOptions) -> None:
        """Raise :class:`Refusal` 422 / 413 for a question or options that cannot be answered."""
        if not question.strip():
            raise Refusal(422, "field 'question': must not be empty")
        if too_long := self.config.service.question_too_long(question):
            raise Refusal(413, f"field 'question': {too_long}")
        if options.compaction is not None and options.compaction not in COMPACTION_CHOICES:
            raise Refusal(422, f"field 'compaction': must be one of {', '.join(COMPACTION_CHOICES)}")
        if options.max_tokens is not None and options.max_tokens < 1:
            raise Refusal(422, "field 'max_tokens': must be >= 1")

    def submit(
        self,
        question: str,
        options: AskOptions = AskOptions(),
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        on_hop: Callable[[Hop], None] | None = None,
    ) -> Future[dict[str, Any]]:
        """Check and admit one request (else :class:`Refusal` at once) and start it; the
        future gives the ``rootweaver ask --json`` record or raises :class:`Refusal`."""
        self.check(question, options)
        svc = self.config.service
        with self._lock:
            if self._admitted >= self._capacity:
                raise Refusal(503, f"busy: {svc.concurrency} answers running and {svc.queue_depth} waiting "
                                   "(service.queue_depth); retry later", retry_after=svc.retry_after_s)
            self._admitted += 1
        admitted_at = time.monotonic()
        try:
            return self._pool.submit(self._run, options, question, user_id, session_id, on_hop, admitted_at)
        except RuntimeError:  # the pool is shut down: the process is stopping
            self._release()
            raise Refusal(503, "shutting down", retry_after=svc.retry_after_s) from None

    def _release(self) -> None:
        with self._lock:
            self._admitted -= 1

    def _run(self, options: AskOptions, question: str, user_id: str | None, session_id: str | None,
             on_hop: Callable[[Hop], None] | None, admitted_at: float) -> dict[str, Any]:
        """One admitted request, in a pool thread (a new variant is built here, off the event loop)."""
        from rootweaver_capabilities.readers.deadline import request_deadline

        try:
            timeout = self.config.service.request_timeout_s
            left = timeout - (time.monotonic() - admitted_at)
            if left <= 0:
                raise Refusal(504, f"request deadline of {timeout:g} s passed while queued (service.request_timeout_s)")
            capability = self.capability(options)
            ctx = RequestContext(query=question, user_id=user_id, session_id=session_id)
            with request_deadline(left):
                try:
                    result = capability.execute(ctx, on_hop)
                except ValueError as exc:  # the loop's own refusals (input caps): the request's fault
                    raise Refusal(422, _one_line(exc)) from None
                except Exception as exc:  # noqa: BLE001 - reported as one line, the server keeps serving
                    raise internal_error(exc) from None
            if result is None:
                raise Refusal(403, f"the capability is switched off for this request (flag "
                                   f"{capability.config.flags.capability_flag})")
            return result_record(result, detail=True)
        finally:
            self._release()

    async def ask(
        self,
        question: str,
        options: AskOptions = AskOptions(),
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        on_hop: Callable[[Hop], None] | None = None,
    ) -> dict[str, Any]:
        """:meth:`submit` and wait without blocking the event loop; 504 past the backstop."""
        future = self.submit(question, options, user_id=user_id, session_id=session_id, on_hop=on_hop)
        return await self.wait(future)

    async def wait(self, future: Future[dict[str, Any]]) -> dict[str, Any]:
        """The record of a submitted request, or :class:`Refusal` 504 at 1.1x the deadline."""
        timeout = self.config.service.request_timeout_s
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout * DEADLINE_GRACE)
        except TimeoutError:
            raise Refusal(504, f"request deadline of {timeout:g} s passed (service.request_timeout_s)") from None

    @property
    def in_flight(self) -> int:
        """Requests admitted and not finished (running or waiting)."""
        return self._admitted

    def close(self) -> None:
        """Stop taking work; queued requests are cancelled, running ones finish in their threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)
