"""No secrets in error text: text taken from a response (bodies, transport messages) is
scrubbed of the API key (raw, JSON-escaped, percent-encoded and base64, at any alignment)
and of any ``Authorization`` / ``Bearer`` value before it reaches an exception or an
answer, so a server that echoes request headers cannot leak the key into a message, an
answer or a log."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["REDACTED", "redact", "scrub", "secret_forms"]

_AUTH_VALUE = re.compile(r"""(?i)(authorization\W{0,4}?\s*[:=]\s*["']?)[^"'\r\n,;}]+""")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{4,}")
REDACTED = "[redacted]"


def secret_forms(secret: str) -> tuple[str, ...]:
    """The strings under which ``secret`` can be echoed back: itself, JSON-escaped (with and
    without ``\\/``), percent-encoded (``quote``, ``quote_plus``, upper and lower hex), and
    the base64 and URL-safe base64 of every byte alignment (the 4-character groups that
    depend on the secret's bytes alone, so the secret inside any longer base64 text is
    found). Longest first; empty for an empty secret."""
    if not secret:
        return ()
    import base64
    import json
    from urllib.parse import quote, quote_plus

    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/"),
             json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe=""), quote_plus(secret, safe="")}
    forms |= {f.lower() for f in forms if "%" in f}
    raw = secret.encode("utf-8")
    for shift in range(3):
        first, end = -(-shift // 3), (shift + len(raw)) // 3  # whole 3-byte groups inside the secret
        if end - first < 2:
            continue
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(encode(b"\0" * shift + raw).decode("ascii")[4 * first:4 * end])
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every secret in ``secrets``, in every form of :func:`secret_forms`,
    replaced by ``[redacted]`` (for a reader's answer: nothing else is touched)."""
    for secret in secrets:
        for form in secret_forms(secret):
            text = text.replace(form, REDACTED)
    return text


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """:func:`redact` of ``text`` and every ``Authorization`` / ``Bearer`` value replaced by
    ``[redacted]`` too (for text that came from a server or a transport)."""
    text = redact(text, secrets)
    text = _AUTH_VALUE.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)

