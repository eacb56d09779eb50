"""The one way a plug-in joins a registry (compaction strategies, packing policies, answer rules).

Each kind of plug-in has its own registry, a ``dict`` from name to plug-in owned by the module
that defines the kind; :func:`register` is the shared check on the way in.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["register"]

T = TypeVar("T")


def register(registry: dict[str, T], kind: str, name: str, item: T, *, reserved: tuple[str, ...] = ()) -> T:
    """Add ``item`` to ``registry`` under ``name`` and return it. ``name`` must be a non-empty str,
    not in ``reserved`` and not registered yet; otherwise ``ValueError`` naming ``kind``."""
    if not isinstance(name, str) or not name or name in reserved:
        other = "".join(f" other than {r!r}" for r in reserved)
        raise ValueError(f"{kind} name must be a non-empty str{other}, got {name!r}")
    if name in registry:
        raise ValueError(f"{kind} {name!r} is already registered")
    registry[name] = item
    return item
