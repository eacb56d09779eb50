"""The argument checks the compaction records share, so that one kind of bad value always
reads the same: ``ValueError("<name> must be an int >= <minimum>, got <value!r>")`` and
``ValueError("<name> must be a finite number >= 0, got <value!r>")``. A bool is never taken
for a number.
"""

from __future__ import annotations

import math

__all__ = ["check_int", "check_nonnegative"]


def check_int(name: str, value: object, minimum: int) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an int (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def check_nonnegative(name: str, value: object) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a finite int or float (not a bool) >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
