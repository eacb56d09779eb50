"""Budgets in explicit units and the tokenizer behind token budgets.

A :class:`Budget` is ``limit`` units of ``"chars"`` (Python string length of the rendered
packet, separators and headers included) or ``"tokens"`` (counted by a real tokenizer
behind the :class:`TokenCounter` protocol; the default is the reader's, Qwen2.5, shipped
in ``rootweaver_innovations/data/qwen2.5-tokenizer``). There is no chars-per-token guess.
A leaf: it imports nothing of the package's, so the loop, the compactors and the readers can
all depend on it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rootweaver_innovations.memo import Memo

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "UNITS",
    "Budget",
    "QwenTokenCounter",
    "TokenCounter",
    "default_token_counter",
]

UNITS = ("chars", "tokens")
_QWEN_DIR = "qwen2.5-tokenizer"


# The Qwen2 pre-tokenizer (tokenizer.json's "pre_tokenizer") and its split pattern for ASCII text:
# there \p{L} is [A-Za-z], \p{N} is [0-9] and \s (Unicode White_Space) is re.ASCII's [ \t\n\r\f\v].
_QWEN2_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_QWEN2_PRE_TOKENIZER = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": _QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ],
}
_ASCII_SPLIT = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    re.ASCII,
)
# Where a non-ASCII text is cut into words: before each space that lies between two non-space
# characters. No piece of the pattern above holds a non-space character followed by a space, so
# each such cut is a piece boundary. Python's \s holds every character the tokenizer's \s does
# (tab to carriage return, NEL, the Zs, Zl and Zp categories), so its \S never cuts inside a piece.
_WORD_CUT = re.compile(r"(?<=\S)(?= \S)")


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet: the character each byte is written as before BPE."""
    kept = [*range(33, 127), *range(161, 173), *range(174, 256)]
    moved = [b for b in range(256) if b not in kept]
    return {**{b: chr(b) for b in kept}, **{b: chr(256 + k) for k, b in enumerate(moved)}}


def _encoded(tokenizer: Tokenizer, text: str) -> int:
    """The token count of ``text`` by a full encode (no special tokens)."""
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


_INT_BYTES = 28  # a memoised count
_PIECE_MEMO_BYTES = 16 << 20  # pieces and words: at most 16 MiB however long a process runs
_PIECE_MEMO_CHARS = 256  # a longer "word" (e.g. unbroken CJK text) is counted, not memoised
_TEXT_MEMO_BYTES = 32 << 20  # whole texts: at most 32 MiB
_TEXT_MEMO_CHARS = 8192  # a longer text is counted from its (memoised) pieces every time


class _PieceCounts:
    """Exact token counts for a Qwen2-style byte-level BPE tokenizer at a fraction of a full
    encode, since the pre-tokenizer's pieces are encoded independently and recur across texts
    far more than texts do. An ASCII text is split with the pre-tokenizer's own pattern (its
    ASCII form); a new piece is counted by the tokenizer's BPE model. Any other text is cut
    into words at boundaries every split shares (:data:`_WORD_CUT`); a new word is counted as
    above when it is ASCII, else by a full encode of that word. Counts of pieces and words
    (each the count of that string alone) are memoised, at most ``cache_size`` of them and
    16 MiB (:class:`~rootweaver_innovations.memo.Memo`).
    """

    def __init__(self, tokenizer: Tokenizer, cache_size: int):
        self._tokenizer = tokenizer
        self._bpe = tokenizer.model.tokenize
        self._marks = frozenset(t.content[0] for t in tokenizer.get_added_tokens_decoder().values() if t.content)
        self._bytes = str.maketrans({chr(b): c for b, c in _byte_alphabet().items() if b < 128})
        self._counts: Memo[int] = Memo(max_entries=cache_size, max_bytes=_PIECE_MEMO_BYTES,
                                       max_key_chars=_PIECE_MEMO_CHARS, value_bytes=lambda _n: _INT_BYTES)

    @classmethod
    def of(cls, tokenizer: Tokenizer, cache_size: int) -> _PieceCounts | None:
        """The fast path for ``tokenizer`` (a ``tokenizers.Tokenizer``), or ``None`` unless it
        has no normalizer, exactly the Qwen2 pre-tokenizer and a BPE model."""
        from tokenizers.models import BPE

        pre = tokenizer.pre_tokenizer
        if (tokenizer.normalizer is not None or pre is None or not isinstance(tokenizer.model, BPE)
                or json.loads(pre.__getstate__()) != _QWEN2_PRE_TOKENIZER):
            return None
        return cls(tokenizer, cache_size)

    def covers(self, text: str) -> bool:
        """Whether ``text`` holds no character an added token starts with (added tokens are
        matched before the split, so such a text takes the full encode)."""
        return not any(m in text for m in self._marks)

    def count(self, text: str) -> int:
        """The token count of ``text``, which :meth:`covers` accepts."""
        if text.isascii():
            return self._ascii(text)
        counts, n = self._counts, 0
        for word in _WORD_CUT.split(text):
            c = counts.get(word)
            if c is None:
                c = self._ascii(word) if word.isascii() else _encoded(self._tokenizer, word)
                counts.put(word, c)
            n += c
        return n

    def _ascii(self, text: str) -> int:
        counts, n = self._counts, 0
        for piece in _ASCII_SPLIT.findall(text):
            c = counts.get(piece)
            if c is None:
                c = counts.put(piece, len(self._bpe(piece.translate(self._bytes))))
            n += c
        return n


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text exactly as the reader's tokenizer would (no special tokens)."""

    name: str

    def count(self, text: str) -> int: ...


class QwenTokenCounter:
    """The Qwen2.5 byte-level BPE tokenizer, loaded with the ``tokenizers`` package alone.

    ``path`` is a ``tokenizer.json``; by default the copy shipped with the package (see its
    NOTICE: Apache-2.0). Counts are memoised per text (the same facts are packed again
    under several budgets and policies); the memo holds at most ``cache_size`` texts and
    32 MiB, and no text over 8,192 chars (:class:`~rootweaver_innovations.memo.Memo`). When
    the tokenizer's pre-tokenizer is Qwen2's, a new text is counted piece by piece
    (:class:`_PieceCounts`: the same count, several times faster); otherwise by a full encode.
    """

    name = "qwen2.5"

    def __init__(self, path: str | Path | None = None, cache_size: int = 65536):
        from tokenizers import Tokenizer

        if path is None:
            ref = resources.files("rootweaver_innovations") / "data" / _QWEN_DIR / "tokenizer.json"
            with resources.as_file(ref) as file:
                self._tok = Tokenizer.from_file(str(file))
        else:
            self._tok = Tokenizer.from_file(str(path))
        self._cache: Memo[int] = Memo(max_entries=cache_size, max_bytes=_TEXT_MEMO_BYTES,
                                      max_key_chars=_TEXT_MEMO_CHARS, value_bytes=lambda _n: _INT_BYTES)
        self._pieces = _PieceCounts.of(self._tok, cache_size)

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            pieces = self._pieces
            n = pieces.count(text) if pieces is not None and pieces.covers(text) else _encoded(self._tok, text)
            self._cache.put(text, n)
        return n

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text`` (special tokens such as ``<|im_start|>`` written in it
        become their ids, as llama.cpp tokenizes a prompt), not memoised."""
        return self._tok.encode(text, add_special_tokens=False).ids


@functools.lru_cache(maxsize=1)
def default_token_counter() -> QwenTokenCounter:
    """The shared Qwen2.5 counter (loaded once per process, ~0.4 s)."""
    return QwenTokenCounter()


@dataclass(frozen=True, slots=True)
class Budget:
    """A hard limit on the rendered packet, in an explicit unit.

    ``limit`` is an int >= 1; ``unit`` one of :data:`UNITS`; ``counter`` only for
    ``"tokens"`` (``None`` means the default Qwen2.5 counter); ``separator`` joins the
    packet's lines (default ``"\\n"``). Bad values raise ``ValueError``.
    """

    limit: int
    unit: str = "chars"
    counter: TokenCounter | None = None
    separator: str = "\n"

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"budget limit must be a positive int, got {self.limit!r}")
        if self.unit not in UNITS:
            raise ValueError(f"budget unit must be one of {list(UNITS)}, got {self.unit!r}")
        if self.counter is not None and self.unit != "tokens":
            raise ValueError("a token counter only applies to unit='tokens'")
        if self.counter is not None and not isinstance(self.counter, TokenCounter):
            raise ValueError(f"counter must have name and count(text) -> int, got {self.counter!r}")
        if not isinstance(self.separator, str):
            raise ValueError(f"separator must be a str, got {self.separator!r}")

    @classmethod
    def chars(cls, limit: int) -> Budget:
        return cls(limit, "chars")

    @classmethod
    def tokens(cls, limit: int, counter: TokenCounter | None = None) -> Budget:
        return cls(limit, "tokens", counter)

    @property
    def token_counter(self) -> TokenCounter | None:
        """The counter token budgets use (``None`` for a chars budget)."""
        if self.unit != "tokens":
            return None
        return self.counter if self.counter is not None else default_token_counter()

    @property
    def measurer(self) -> Callable[[str], int]:
        """:meth:`measure` as a plain function (``len`` or the counter's ``count``), looked up
        once by callers that size many texts."""
        counter = self.token_counter
        return len if counter is None else counter.count

    def measure(self, text: str) -> int:
        """Size of ``text`` in this budget's unit."""
        return self.measurer(text)
