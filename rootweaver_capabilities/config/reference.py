"""The knobs of the schema as records, in declaration order: what the command line takes its
defaults and help from, and what ``docs/configuration.md`` is generated from
(``scripts/gen_config_reference.py``)."""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass
from typing import Any

from rootweaver_capabilities.config.rules import Rule, join, knob_fields
from rootweaver_capabilities.config.schema import MultiHopConfig

__all__ = ["Knob", "Section", "find_knob", "knob_reference", "sections"]


@dataclass(frozen=True, slots=True)
class Knob:
    """One knob: its dotted key, its default as YAML writes it (a flag map as a dict, a name
    list as a list) and its :class:`~rootweaver_capabilities.config.rules.Rule`."""

    key: str
    default: Any
    rule: Rule

    @property
    def doc(self) -> str:
        return self.rule.doc


@dataclass(frozen=True, slots=True)
class Section:
    """A mapping of knobs: its dotted key (``""`` for the top level), what it is for, and its
    own knobs (not those of the sections nested in it)."""

    key: str
    doc: str
    knobs: tuple[Knob, ...]


def _knob(f: Field[Any], key: str) -> Knob:
    rule: Rule = f.metadata["rule"]
    default = None if f.default is MISSING else f.default
    if rule.kind == "flag_map":
        default = dict(default)
    elif rule.kind == "names":
        default = list(default)
    return Knob(key, default, rule)


def sections() -> list[Section]:
    """Every section, the top level first, each before the sections nested in it."""
    out: list[Section] = []

    def walk(cls: type, path: str, doc: str) -> None:
        fs = knob_fields(cls)
        out.append(Section(path, doc, tuple(_knob(f, join(path, f.name)) for f in fs if "rule" in f.metadata)))
        for f in fs:
            if "section" in f.metadata:
                walk(f.metadata["section"], join(path, f.name), f.metadata["doc"])

    walk(MultiHopConfig, "", "The multi-hop loop and the answer rules.")
    return out


def knob_reference() -> list[Knob]:
    """Every knob, section by section as :func:`sections` orders them."""
    return [k for s in sections() for k in s.knobs]


def find_knob(key: str) -> Knob:
    """The knob at the dotted ``key``; ``KeyError`` naming it when there is none."""
    cls: type = MultiHopConfig
    *path, name = key.split(".")
    for part in path:
        found = {f.name: f for f in knob_fields(cls)}.get(part)
        if found is None or "section" not in found.metadata:
            raise KeyError(f"no config section {part!r} in {key!r}")
        cls = found.metadata["section"]
    found = {f.name: f for f in knob_fields(cls)}.get(name)
    if found is None or "rule" not in found.metadata:
        raise KeyError(f"no config knob {key!r}")
    return _knob(found, key)
