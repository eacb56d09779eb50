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

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rootweaver_innovations.compaction.line import CompactionRequest, CompactionResult
from rootweaver_innovations.loop.multihop import Hop, MultiHopRAG, MultiHopResult, Synthesizer
from rootweaver_innovations.retrieval.retrievers import Retriever
from rootweaver_innovations.compaction.strategies import Compactor

from rootweaver_capabilities.assembly import build_rag
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.flags import FlagProvider, build_flag_provider
from rootweaver_capabilities.metrics import Metrics
from rootweaver_capabilities.result_json import result_record

__all__ = ["CapabilityContext", "MultiHopCapability", "RequestContext"]

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


class MultiHopCapability:
    """The multi-hop retrieval capability for an agent runtime (see the module docstring).

    ``flags`` defaults to the provider ``config.flags`` names; the loop is
    :func:`~rootweaver_capabilities.assembly.build_rag` of ``config`` (a built index is opened
    memory-mapped, so worker processes share its pages), with ``retriever`` and ``synthesizer``
    in place of the configured ones when given; ``metrics`` defaults to none. Safe to share
    across threads: one instance serves concurrent ``execute`` calls.
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
                    base = build_rag(self.config, retriever=self._retriever, synthesizer=self._synthesizer)
                    off = dataclasses.replace(base, compaction_enabled=False)
                    on = None
                    if self.config.compaction.enabled:  # same retriever, decomposer and title index
                        on = dataclasses.replace(base, compactor=_TimedCompactor(base.compactor, self._clock))
                    self._rags = (off, on)
                rags = self._rags
        return rags

    def _flag(self, name: str, context: Mapping[str, str]) -> bool:
        try:
            return bool(self.flags.is_enabled(name, context))
        except Exception as exc:  # noqa: BLE001 - a flag problem must never reach the agent
            log.warning("flag %s could not be evaluated (%s); treating it as off", name, type(exc).__name__)
            return False

    def execute(
        self, context: CapabilityContext, on_hop: Callable[[Hop], None] | None = None
    ) -> MultiHopResult | None:
        """Run the capability for ``context`` (see the module docstring); ``None`` when off.
        ``on_hop`` is handed to :meth:`~rootweaver_innovations.loop.multihop.MultiHopRAG.multi_hop_search`."""
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
        result = (on if compact and on is not None else off).multi_hop_search(context.query, on_hop)
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

    :func:`~rootweaver_capabilities.result_json.result_record` of the result (``strategy`` is
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
