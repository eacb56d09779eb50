"""Reading and checking a configuration against its knobs' rules.

:func:`parse` checks the shape of a raw mapping (a mapping, no unknown keys) and builds
constructor arguments; :func:`validate` checks every knob of a built object against its
rule; :func:`to_mapping` gives the plain nested dict back. A bad value raises
:class:`~rootweaver_capabilities.config.rules.ConfigError` with one line naming the dotted
key and the source. Bools are never accepted as numbers; an int is accepted where a float
is expected. Values echoed in a message are abbreviated (:func:`shown`), so a message
stays one short line whatever the input; an ``env`` knob's value is never echoed (it may
be a secret pasted by mistake).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rootweaver_capabilities.config.rules import ConfigError, Rule, join, knob_fields

__all__ = ["TYPE_NAMES", "parse", "shown", "to_mapping", "validate"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse(cls: type, raw: Any, path: str, source: str) -> dict[str, Any]:
    """Check the shape of ``raw`` (mapping, no unknown keys) and build constructor kwargs."""
    if not isinstance(raw, Mapping):
        where = f"key '{path}'" if path else "the top level"
        raise ConfigError(f"{source}: {where} must be a mapping, got {type(raw).__name__}")
    known = {f.name: f for f in knob_fields(cls)}
    for key in raw:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key '{join(path, _key_text(key))}' "
                f"(allowed{' in ' + path if path else ''}: {', '.join(sorted(known))})"
            )
    kwargs: dict[str, Any] = {}
    for name, value in raw.items():
        f, key = known[name], join(path, name)
        if "section" in f.metadata:
            kwargs[name] = f.metadata["section"](**parse(f.metadata["section"], value, key, source))
            continue
        rule: Rule = f.metadata["rule"]
        if rule.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif rule.kind == "flag_map" and isinstance(value, Mapping):
            value = tuple(sorted(value.items(), key=lambda kv: str(kv[0])))
        elif rule.kind == "names" and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return kwargs


TYPE_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a non-empty string",
              "file": "a non-empty string (a file path)", "path": "a non-empty string (a file or folder path)",
              "env": "an environment variable name", "url": "an http(s) URL",
              "flag_map": "a mapping of flag name -> true/false", "names": "a list of names"}


def _type_ok(kind: str, v: Any) -> bool:
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "bool":
        return isinstance(v, bool)
    if kind in ("str", "file", "path", "env", "url"):
        return isinstance(v, str) and bool(v.strip())
    if kind == "names":
        return isinstance(v, tuple) and all(isinstance(n, str) for n in v) and len(set(v)) == len(v)
    return isinstance(v, tuple) and all(  # flag_map
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and p[0] and isinstance(p[1], bool)
        for p in v
    )


_SHORT = reprlib.Repr()  # keyword arguments need Python 3.12
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 2, 80, 80, 40
_SHORT.maxtuple = _SHORT.maxlist = _SHORT.maxdict = _SHORT.maxset = 4
SHOWN_MAX = 160  # chars: nested containers of long keys still repr to 300+ chars


def shown(value: Any) -> str:
    """A bounded, one-line repr of a config value for an error message (huge or deeply
    nested values are abbreviated with ``...``, never expanded; at most ``SHOWN_MAX`` chars)."""
    text = _SHORT.repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 3] + "..."


def _key_text(key: Any) -> str:
    """A mapping key as written in a dotted path: short printable strings verbatim, else abbreviated."""
    return key if isinstance(key, str) and key.isprintable() and len(key) <= 80 else shown(key)


def validate(obj: Any, path: str, source: str) -> None:
    """Check every knob of ``obj`` (recursively) against its rule; raise ``ConfigError``."""
    for f in knob_fields(type(obj)):
        key, value = join(path, f.name), getattr(obj, f.name)
        if "section" in f.metadata:
            if not isinstance(value, f.metadata["section"]):
                raise ConfigError(f"{source}: key '{key}' must be a mapping, got {type(value).__name__}")
            validate(value, key, source)
            continue
        rule: Rule = f.metadata["rule"]
        if value is None:
            if rule.nullable:
                continue
            raise ConfigError(f"{source}: key '{key}' must be {TYPE_NAMES[rule.kind]}, got null")
        if rule.kind == "env":  # never echo the value: it may be a secret pasted by mistake
            if not (isinstance(value, str) and _ENV_NAME.fullmatch(value)):
                raise ConfigError(f"{source}: key '{key}' must name an environment variable "
                                  "([A-Za-z_][A-Za-z0-9_]*); the value is not shown since it may be a secret")
            continue
        if not _type_ok(rule.kind, value):
            given = value if rule.kind != "flag_map" else dict(value) if isinstance(value, tuple) else value
            or_null = " or null" if rule.nullable else ""
            raise ConfigError(f"{source}: key '{key}' must be {TYPE_NAMES[rule.kind]}{or_null}, "
                              f"got {type(given).__name__} {shown(given)}")
        if rule.kind == "url" and not re.match(r"https?://\S+$", value):
            raise ConfigError(f"{source}: key '{key}' must be an http(s) URL, got {shown(value)}")
        if key == "flags.unleash.url" and not value.rstrip("/").endswith("/api"):
            raise ConfigError(f"{source}: key '{key}' must end in '/api' (the client API base), got {shown(value)}")
        if rule.kind == "file" and not Path(value).is_file():
            raise ConfigError(f"{source}: key '{key}' must name an existing file, got {shown(value)} (not found)")
        if rule.kind == "path" and not Path(value).exists():
            raise ConfigError(f"{source}: key '{key}' must name an existing file or folder, got {shown(value)} "
                              "(not found)")
        choices = rule.allowed()
        if rule.kind == "names":
            unknown = [n for n in value if n not in choices]
            if unknown:
                raise ConfigError(f"{source}: key '{key}' names unknown {shown(unknown[0])}; "
                                  f"choose from {sorted(choices)}")
            continue
        if choices and value not in choices:
            raise ConfigError(f"{source}: key '{key}' must be one of {sorted(choices)}, got {shown(value)}")
        if rule.check is not None and not rule.check(value):
            raise ConfigError(f"{source}: key '{key}' {rule.rule}, got {shown(value)}")


def to_mapping(obj: Any) -> dict[str, Any]:
    """Plain nested dict of every knob of ``obj`` (flag maps as dicts, name lists as lists)."""
    out: dict[str, Any] = {}
    for f in knob_fields(type(obj)):
        value = getattr(obj, f.name)
        if "section" in f.metadata:
            out[f.name] = to_mapping(value)
        elif f.metadata["rule"].kind == "flag_map":
            out[f.name] = dict(value)
        elif f.metadata["rule"].kind == "names":
            out[f.name] = list(value)
        else:
            out[f.name] = value
    return out

