"""Memos bounded by bytes as well as by entries (a count cap alone let 16,384
memoised 20 KB lines hold 3.5 GB).

A :class:`Memo` maps a string to a value. It never holds more than ``max_entries``
entries or an estimated ``max_bytes`` (each entry costs the key's size, the value's
estimated size from ``value_bytes`` and a fixed dict-slot overhead); a key longer than
``max_key_chars`` is never stored, its value is computed every time. When an entry
would pass either bound the memo is emptied first (clear-on-full: O(1), no LRU
bookkeeping; a working set that fits is rebuilt in one pass). Safe to share across
threads: adding takes a lock, reading does not (a read racing a clear is a miss).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Memo"]

V = TypeVar("V")
_SLOT_BYTES = 100  # a dict slot, its hash entry and the key object's header, roughly


class Memo(Generic[V]):
    """A string-keyed memo within ``max_entries`` entries and about ``max_bytes`` bytes
    (see the module docstring); ``ValueError`` for a bound below 1."""

    def __init__(self, *, max_entries: int, max_bytes: int, max_key_chars: int,
                 value_bytes: Callable[[V], int] = sys.getsizeof):
        if min(max_entries, max_bytes, max_key_chars) < 1:
            raise ValueError(f"memo bounds must be >= 1, got {max_entries}, {max_bytes}, {max_key_chars}")
        self.max_entries, self.max_bytes, self.max_key_chars = max_entries, max_bytes, max_key_chars
        self._value_bytes = value_bytes
        self._data: dict[str, V] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    @property
    def bytes(self) -> int:
        """The estimated bytes held now (never above ``max_bytes``)."""
        return self._bytes

    def get(self, key: str) -> V | None:
        """The value memoised for ``key``, else ``None``."""
        return self._data.get(key)

    def put(self, key: str, value: V) -> V:
        """Memoise ``value`` for ``key`` when the key is short enough and the entry fits the
        bounds at all (emptying the memo first when it is full); returns ``value``."""
        if len(key) > self.max_key_chars:
            return value
        cost = sys.getsizeof(key) + self._value_bytes(value) + _SLOT_BYTES
        if cost > self.max_bytes:
            return value
        with self._lock:
            if key in self._data:
                return value
            if len(self._data) >= self.max_entries or self._bytes + cost > self.max_bytes:
                self._data.clear()
                self._bytes = 0
            self._data[key] = value
            self._bytes += cost
        return value

    def memoised(self, key: str, compute: Callable[[str], V]) -> V:
        """``get(key)``, or ``put(key, compute(key))`` on a miss."""
        value = self._data.get(key)
        return value if value is not None else self.put(key, compute(key))
