"""Prometheus metrics of the multi-hop capability (extra ``metrics``: prometheus-client).

Each :class:`Metrics` owns its own ``CollectorRegistry`` (two instances never collide,
e.g. in tests); :meth:`Metrics.serve` exposes it on ``http://<addr>:<port>/metrics``,
127.0.0.1 by default. Series, all labelled by ``strategy`` (``line``, ``submodular``, or
``off`` when compaction did not run for the request), except the request counter:

- ``multi_hop_context_chars``: histogram of the synthesis-context size in characters
- ``multi_hop_full_context_chars``: histogram of the uncompacted (trajectory) context size
- ``multi_hop_hops``: histogram of retrieval hops per request
- ``multi_hop_compaction_latency_seconds``: histogram of compaction time (only when it ran)
- ``multi_hop_compaction_dropped_lines_total``: counter of context lines compaction dropped
- ``multi_hop_requests_total{status}``: ``executed`` or ``disabled`` (capability flag off)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CONTEXT_CHAR_BUCKETS", "HOP_BUCKETS", "LATENCY_BUCKETS", "Metrics", "MetricsServer"]

CONTEXT_CHAR_BUCKETS = (250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0)
HOP_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass(frozen=True, slots=True)
class MetricsServer:
    """A running ``/metrics`` endpoint; :meth:`close` stops it."""

    addr: str
    port: int
    _server: Any
    _thread: Any

    @property
    def url(self) -> str:
        return f"http://{self.addr}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Metrics:
    """The capability's metric families in a registry of their own.

    :meth:`observe` takes the ``context.metadata["multi_hop"]`` record written by
    ``MultiHopCapability.execute``; :meth:`count_disabled` counts a no-op request.
    """

    def __init__(self) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Histogram
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Metrics needs the 'metrics' extra: pip install 'rootweaver[metrics]'") from exc
        self.registry = CollectorRegistry()
        self.context_chars = Histogram(
            "multi_hop_context_chars",
            "Characters of the synthesis context handed to the synthesizer "
            "(after compaction when it ran, else the full context).",
            ["strategy"], buckets=CONTEXT_CHAR_BUCKETS, registry=self.registry,
        )
        self.full_context_chars = Histogram(
            "multi_hop_full_context_chars",
            "Characters of the full, never-compacted trajectory context.",
            ["strategy"], buckets=CONTEXT_CHAR_BUCKETS, registry=self.registry,
        )
        self.hops = Histogram(
            "multi_hop_hops", "Retrieval hops per multi-hop request.",
            ["strategy"], buckets=HOP_BUCKETS, registry=self.registry,
        )
        self.compaction_latency = Histogram(
            "multi_hop_compaction_latency_seconds", "Wall time of one synthesis-context compaction.",
            ["strategy"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.dropped_lines = Counter(
            "multi_hop_compaction_dropped_lines", "Context lines left out of the synthesis context by compaction.",
            ["strategy"], registry=self.registry,
        )
        self.requests = Counter(
            "multi_hop_requests", "Multi-hop capability requests by outcome (executed, disabled).",
            ["status"], registry=self.registry,
        )

    def observe(self, record: Mapping[str, Any]) -> None:
        """Record one executed request from its metadata record."""
        strategy = record["strategy"]
        self.requests.labels(status="executed").inc()
        self.context_chars.labels(strategy=strategy).observe(record["context_chars"])
        self.full_context_chars.labels(strategy=strategy).observe(record["full_context_chars"])
        self.hops.labels(strategy=strategy).observe(record["hop_count"])
        if record["compaction_latency_ms"] is not None:
            self.compaction_latency.labels(strategy=strategy).observe(record["compaction_latency_ms"] / 1000.0)
            self.dropped_lines.labels(strategy=strategy).inc(record["dropped_lines"])

    def count_disabled(self) -> None:
        """Record one request skipped because the capability flag was off."""
        self.requests.labels(status="disabled").inc()

    def value(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """Current value of one sample (e.g. ``"multi_hop_hops_count"``), 0.0 if absent."""
        got = self.registry.get_sample_value(name, dict(labels or {}))
        return 0.0 if got is None else got

    def serve(self, port: int, addr: str = "127.0.0.1") -> MetricsServer:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread (``port=0``: any free port)."""
        from prometheus_client import start_http_server

        server, thread = start_http_server(port, addr=addr, registry=self.registry)
        return MetricsServer(addr, server.server_address[1], server, thread)
