"""Registry of compaction strategies for the synthesis context, by config name."""

from __future__ import annotations

from .compaction import compact_lines
from .multihop import Compactor

__all__ = ["STRATEGIES", "make_compactor"]

STRATEGIES = ("line", "submodular", "evidence")


def make_compactor(strategy: str) -> Compactor:
    """The compactor for ``strategy`` (one of :data:`STRATEGIES`), else ``ValueError``."""
    if strategy == "line":
        return compact_lines
    if strategy in ("submodular", "evidence"):
        from .packing import SubmodularCompactor

        return SubmodularCompactor(policy=strategy)
    raise ValueError(f"unknown compaction strategy {strategy!r}; choose one of {sorted(STRATEGIES)}")
