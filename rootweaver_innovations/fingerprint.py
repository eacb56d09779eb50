"""Fingerprints of code and data, for artifacts that must name what built them.

:func:`code_fingerprint` hashes the syntax trees of modules (docstrings and comments left
out, so rewording them changes nothing) together with data strings, so an index built by
other tokenizing or naming code is recognised without a version number someone has to bump.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["code_fingerprint"]


def code_fingerprint(modules: Iterable[str], data: Iterable[str] = ()) -> str:
    """SHA-256 (hex) of the modules' code, in the order given, and of ``data``.

    ``modules`` are dotted names importable from this environment; ``ValueError`` naming one
    that is not. Two runs of the same code and data give the same string."""
    h = hashlib.sha256()
    for name in modules:
        h.update(name.encode() + b"\0" + _module_code(name).encode() + b"\0")
    for item in data:
        h.update(b"data\0" + item.encode() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=None)
def _module_code(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"no Python source for module {name!r}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)
