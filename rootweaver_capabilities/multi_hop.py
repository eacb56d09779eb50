"""``MultiHopCapability``: MultiHopRAG wired to config, flags and metrics for agent runtimes.

``execute(context)`` per request:

1. reads the capability flag (``flags.capability_flag``) for the request's
   ``userId``/``sessionId``. **Off: a no-op** - nothing is retrieved, ``context.metadata``
   is left untouched, ``None`` is returned (only the ``disabled`` request counter moves);
2. decides compaction for this request: on only when ``compaction.enabled`` is true in
   the config AND (if ``flags.compaction_flag`` is set) that rollout flag is on for the
   request's context;
3. runs the multi-hop search on one of two ``MultiHopRAG`` instances built once (lazily,
   under a lock): compaction off, or on with the configured strategy. Both share the
   retriever, decomposer and loop settings, so the trajectory is the same either way;
4. records ``context.metadata["multi_hop"]`` (see :func:`_record`) and the metrics, and
   returns the ``MultiHopResult``.

Flag providers are asked through a guard: a provider that raises counts as "off", so a
flag problem never reaches the agent. Errors of the search itself (empty question,
broken retriever) propagate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rootweaver_innovations.compaction import CompactionRequest, CompactionResult
from rootweaver_innovations.comparison import date_comparison_answer
from rootweaver_innovations.extractive import extractive_synthesizer
from rootweaver_innovations.multihop import MultiHopRAG, MultiHopResult, Synthesizer
from rootweaver_innovations.packing import Budget
from rootweaver_innovations.retrieval import BM25Retriever, Retriever
from rootweaver_innovations.strategies import Compactor, make_compactor

from .config import LLMConfig, MultiHopConfig, RetrieverConfig
from .flags import FlagProvider, build_flag_provider
from .metrics import Metrics
from .records import result_record

__all__ = ["CapabilityContext", "MultiHopCapability", "RequestContext", "build_synthesizer"]

log = logging.getLogger(__name__)


class CapabilityContext(Protocol):
    """What an agent runtime hands to ``execute``: the question, ids, a metadata dict."""

    @property
    def query(self) -> str: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...


@dataclass(slots=True)
class RequestContext:
    """A minimal :class:`CapabilityContext`."""

    query: str
    user_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class _TimedCompactor:
    """Wraps a compactor and leaves its wall time (s) in ``clock.seconds`` of this thread."""

    def __init__(self, compactor: Compactor, clock: threading.local):
        self._compactor = compactor
        self._clock = clock

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        start = time.perf_counter()
        try:
            return self._compactor(request)
        finally:
            self._clock.seconds = time.perf_counter() - start


def _default_retriever(cfg: RetrieverConfig) -> Retriever:
    """BM25 over the index ``cfg.index`` (memory-mapped; checked against ``cfg.corpus`` when
    that is set too), else over ``cfg.corpus``, else over the bundled demo corpus; backend
    ``sphinxql``: the Manticore/Sphinx cluster of ``cfg.sphinxql``."""
    if cfg.backend == "sphinxql":
        from .sphinxql import SphinxQLRetriever

        return SphinxQLRetriever(cfg.sphinxql)
    if cfg.index is not None:
        from rootweaver_innovations.index import open_index

        return open_index(cfg.index, corpus=cfg.corpus).retriever()
    if cfg.corpus is not None:
        from rootweaver_innovations.corpus import load_corpus_jsonl

        passages = load_corpus_jsonl(cfg.corpus)
    else:
        try:
            from rootweaver_innovations.demo import demo_passages
        except ImportError as exc:
            raise ValueError(
                "retriever.corpus is null but the bundled demo corpus (rootweaver_innovations.demo) is not "
                "available; set retriever.corpus to a JSONL file or pass retriever="
            ) from exc
        passages = demo_passages()
    return BM25Retriever(passages, backend=cfg.backend)


def build_synthesizer(cfg: LLMConfig) -> Synthesizer:
    """The reader of ``cfg.provider``: :func:`~rootweaver_innovations.extractive.extractive_synthesizer`
    for ``none``, an :class:`~rootweaver_capabilities.llm.LLMSynthesizer` on the embedded
    model for ``local`` or on the endpoint for ``openai``. Raises ``ValueError`` (one line,
    with the install command) when ``local`` is asked for but llama-cpp-python is not
    installed."""
    if cfg.provider == "none":
        return extractive_synthesizer
    from .llm import LLMSynthesizer, OpenAIChatClient

    if cfg.provider == "local":
        from .embedded import LlamaCppChatClient
        from .reader_models import INSTALL_HINT, reader_installed

        if not reader_installed():
            raise ValueError(f"llm.provider is 'local' but the embedded reader is not installed: {INSTALL_HINT}")
        client = LlamaCppChatClient(cfg.model_path, model=cfg.model, context_window=cfg.context_window,
                                    max_tokens=cfg.max_tokens, timeout_s=cfg.timeout_s)
    else:
        client = OpenAIChatClient(
            cfg.base_url, cfg.model, api_key_env=cfg.api_key_env, timeout_s=cfg.timeout_s,
            context_window=cfg.context_window, max_tokens=cfg.max_tokens,
        )
    return LLMSynthesizer(client, mode=cfg.mode)


class MultiHopCapability:
    """The multi-hop retrieval capability for an agent runtime (see the module docstring).

    ``flags`` defaults to the provider ``config.flags`` names; ``retriever`` to BM25 over
    ``config.retriever`` (a built index is opened memory-mapped, so worker processes share
    its pages); ``synthesizer`` to :func:`build_synthesizer` of ``config.llm`` (the
    extractive answer for ``llm.provider: none``); ``metrics`` to none. Whatever the
    synthesizer, date comparisons are answered by
    :func:`~rootweaver_innovations.comparison.date_comparison_answer` from the trajectory's
    facts. Safe to share across threads: one instance serves concurrent ``execute`` calls.
    """

    def __init__(
        self,
        config: MultiHopConfig,
        flags: FlagProvider | None = None,
        retriever: Retriever | None = None,
        synthesizer: Synthesizer | None = None,
        metrics: Metrics | None = None,
    ):
        self.config = config
        self.flags = flags if flags is not None else build_flag_provider(config.flags)
        self.metrics = metrics
        self._retriever = retriever
        self._synthesizer = synthesizer
        self._lock = threading.Lock()
        self._clock = threading.local()
        self._rags: tuple[MultiHopRAG, MultiHopRAG | None] | None = None

    def _instances(self) -> tuple[MultiHopRAG, MultiHopRAG | None]:
        """(compaction off, compaction on or None when the config disables it), built once."""
        rags = self._rags
        if rags is None:
            with self._lock:
                if self._rags is None:
                    cfg = self.config
                    retriever = self._retriever if self._retriever is not None else _default_retriever(cfg.retriever)
                    synthesizer = self._synthesizer
                    if synthesizer is None:
                        synthesizer = build_synthesizer(cfg.llm)
                    common = dict(
                        retriever=retriever,
                        synthesizer=synthesizer,
                        answer_rule=date_comparison_answer,
                        max_hops=cfg.max_hops,
                        max_passages=cfg.max_passages,
                        stop_rule=cfg.stop_rule,
                        passages_per_hop=cfg.passages_per_hop,
                        answerability_threshold=cfg.answerability_threshold,
                        compaction_budget=Budget(cfg.compaction.budget, cfg.compaction.unit),
                    )
                    off = MultiHopRAG(**common, compaction_enabled=False)
                    on = None
                    if cfg.compaction.enabled:
                        compactor = make_compactor(cfg.compaction.strategy,
                                                   max_input_chars=cfg.compaction.max_input_chars,
                                                   max_input_lines=cfg.compaction.max_input_lines)
                        timed = _TimedCompactor(compactor, self._clock)
                        on = MultiHopRAG(**common, decomposer=off.decomposer, title_index=off.title_index,
                                         compaction_enabled=True,
                                         compactor=timed)
                    self._rags = (off, on)
                rags = self._rags
        return rags

    def _flag(self, name: str, context: Mapping[str, str]) -> bool:
        try:
            return bool(self.flags.is_enabled(name, context))
        except Exception as exc:  # noqa: BLE001 - a flag problem must never reach the agent
            log.warning("flag %s could not be evaluated (%s); treating it as off", name, type(exc).__name__)
            return False

    def execute(self, context: CapabilityContext) -> MultiHopResult | None:
        """Run the capability for ``context`` (see the module docstring); ``None`` when off."""
        cfg = self.config
        flag_ctx = {k: v for k, v in (("userId", context.user_id), ("sessionId", context.session_id)) if v}
        if not self._flag(cfg.flags.capability_flag, flag_ctx):
            if self.metrics is not None:
                self.metrics.count_disabled()
            return None
        flags_seen = {cfg.flags.capability_flag: True}
        compact = cfg.compaction.enabled
        if compact and cfg.flags.compaction_flag is not None:
            compact = self._flag(cfg.flags.compaction_flag, flag_ctx)
            flags_seen[cfg.flags.compaction_flag] = compact
        off, on = self._instances()
        self._clock.seconds = None
        result = (on if compact and on is not None else off).multi_hop_search(context.query)
        record = _record(result, cfg.compaction.enabled, flags_seen, self._clock.seconds)
        context.metadata["multi_hop"] = record
        if self.metrics is not None:
            self.metrics.observe(record)
        return result

    def __repr__(self) -> str:
        return f"MultiHopCapability(config={self.config!r}, flags={self.flags!r})"


def _record(
    result: MultiHopResult, compaction_configured: bool, flags: dict[str, bool], seconds: float | None
) -> dict[str, Any]:
    """The ``context.metadata["multi_hop"]`` record of one executed request.

    :func:`~rootweaver_capabilities.records.result_record` of the result (``strategy`` is
    ``"off"`` and ``compaction`` ``None`` when no compaction ran, and then
    ``context_chars == full_context_chars``), plus whether compaction is configured, the
    flags evaluated and the compaction latency (``None`` when none ran).
    """
    record = result_record(result)
    record["compaction_configured"] = compaction_configured
    record["compaction_latency_ms"] = (
        round(seconds * 1000.0, 3) if result.compaction is not None and seconds is not None else None
    )
    record["flags"] = dict(flags)
    return record
