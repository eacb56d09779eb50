"""Text from a corpus, a reader or a server made safe to print.

Contract: corpus passages and reader replies are untrusted. In human output
(a terminal) no C0/C1 control character (ESC, BEL, NUL, DEL, ...), bidirectional
override or isolate, or line/paragraph separator from such text reaches the screen: each
is written as a visible escape (``\\x1b``, ``\\u202e``). Newlines are kept where the
output is multi-line (the synth context) and escaped where it must stay one line (an
error message). JSON output is ASCII (``ensure_ascii``), so U+2028, U+2029, NEL and every
control character travel as ``\\uXXXX`` escapes and a JSON line is always one line.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["UNSAFE", "json_text", "safe_record", "terminal_safe"]

# C0 controls but tab and newline, DEL, C1 controls (NEL included), the bidi marks, embeddings,
# overrides and isolates, and the Unicode line/paragraph separators.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONE_LINE = re.compile(UNSAFE.pattern[:-1] + "\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` with every :data:`UNSAFE` character (and, with ``one_line``, every newline)
    replaced by its visible escape; everything else, non-ASCII letters included, unchanged."""
    return (_UNSAFE_ONE_LINE if one_line else UNSAFE).sub(_escape, text)


def safe_record(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with :func:`terminal_safe`
    applied to every string in it, keys included; other values unchanged."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {safe_record(k): safe_record(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_record(v) for v in value]
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=True, **kwargs)``: pure ASCII, one line unless
    ``indent`` is given, no raw control or separator character anywhere."""
    return json.dumps(value, ensure_ascii=True, **kwargs)
