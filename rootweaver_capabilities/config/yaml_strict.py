"""Reading a config file as YAML, strictly.

A file over :data:`MAX_CONFIG_BYTES` (which keeps the pure-Python parse under a second),
not UTF-8, not valid YAML, repeating a key in a mapping, using an alias (``*name``: the
defence against "billion laughs" expansion) or nesting deeper than :data:`MAX_YAML_DEPTH`
levels raises :class:`~rootweaver_capabilities.config.rules.ConfigError` with one line
naming the file, and its line and column where there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rootweaver_capabilities.config.rules import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "MAX_YAML_DEPTH", "read_yaml"]

MAX_YAML_DEPTH = 32  # the config nests 4 levels; deeper input is rejected before recursion
MAX_CONFIG_BYTES = 32 * 1024  # the shipped, fully commented config is 4.5 KB; bounds the pure-Python parse


def read_yaml(path: Path) -> Any:
    """The YAML document of the file at ``path`` (``None`` for an empty file); see the module
    docstring for what is refused."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: config file is over {MAX_CONFIG_BYTES:,} bytes (a config is a few KB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}{_yaml_where(exc, text)}: invalid YAML: {_yaml_problem(exc)}") from None


def _yaml_where(exc: yaml.YAMLError, text: str) -> str:
    """``:line:column`` (1-based) of a PyYAML error in ``text``, or ``""`` when it has no position."""
    if isinstance(exc, yaml.reader.ReaderError):  # carries a character offset, not a mark
        line, column = text.count("\n", 0, exc.position) + 1, exc.position - text.rfind("\n", 0, exc.position)
        return f":{line}:{column}"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return f":{mark.line + 1}:{mark.column + 1}"
    return ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's problem text on one line (its ``str`` spans several, with a source excerpt)."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        return f"character U+{exc.character:04X} is not allowed"
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    return " ".join(str(problem).split())


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys in a mapping, aliases, and deep nesting.

    Aliases are refused outright (a config has no use for them, and expanding them is
    what makes a few hundred bytes of "billion laughs" hang); nesting is counted while
    composing, so a deep document fails at :data:`MAX_YAML_DEPTH` instead of hitting
    Python's recursion limit, and flow nesting (``[[[...``) already while scanning, whose
    look-ahead for a possible key otherwise costs time quadratic in the depth.
    """

    _depth = 0

    def fetch_flow_collection_start(self, TokenClass: type) -> None:
        if self.flow_level >= MAX_YAML_DEPTH:
            raise yaml.scanner.ScannerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                            self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a config",
                                              event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                              event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
