"""How a knob is declared: a dataclass field whose metadata holds its :class:`Rule` (type,
nullability, allowed values, a value check, its description), or a nested section; and
:class:`ConfigError`, what a bad value raises."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from typing import Any

__all__ = ["ConfigError", "Rule", "join", "knob", "knob_fields", "positive", "section"]


class ConfigError(ValueError):
    """The configuration is malformed; the message names the dotted key and the source."""


@dataclass(frozen=True, slots=True)
class Rule:
    """How one knob is checked: type, nullability, allowed values, a value predicate."""

    kind: str  # "int" | "float" | "bool" | "str" | "file" | "path" | "env" | "url" | "flag_map" | "names"
    doc: str
    nullable: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()  # a callable: a live registry
    check: Callable[[Any], bool] | None = None
    rule: str = ""  # what ``check`` demands, for the error message

    def allowed(self) -> tuple[str, ...]:
        """The allowed values (a live registry is asked now); empty when any value of the type goes."""
        return self.choices() if callable(self.choices) else self.choices


def knob(default: Any, kind: str, doc: str, **rule: Any) -> Any:
    """A dataclass field holding one knob with its :class:`Rule`."""
    return field(default=default, metadata={"rule": Rule(kind, doc, **rule)})


def section(cls: type, doc: str) -> Any:
    """A dataclass field holding a nested section of knobs (``cls``, built with its defaults)."""
    return field(default_factory=cls, metadata={"section": cls, "doc": doc})


def knob_fields(cls: type) -> list[Field[Any]]:
    """The fields of ``cls`` that are knobs or sections, in declaration order."""
    return [f for f in fields(cls) if "rule" in f.metadata or "section" in f.metadata]


def join(path: str, name: str) -> str:
    """``name`` under the dotted ``path`` (the top level when ``path`` is empty)."""
    return f"{path}.{name}" if path else name


def positive(v: float) -> bool:
    return v >= 1
