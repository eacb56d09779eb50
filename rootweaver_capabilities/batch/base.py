"""What ``rootweaver batch``'s parser and error handling need, without the batch machinery:
the default chunk size and the error that ends a batch (:mod:`rootweaver_capabilities.batch.run`
imports the capability and the config; this module imports nothing)."""

from __future__ import annotations

__all__ = ["CHUNK", "BatchError"]

CHUNK = 8  # questions per task sent to a worker: amortises the per-task overhead (Ray: ~1 ms)


class BatchError(RuntimeError):
    """The batch cannot go on (e.g. every Ray actor is gone); answers so far are kept."""
