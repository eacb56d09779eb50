"""One immutable, validated configuration object for the multi-hop capability.

``MultiHopConfig.from_yaml(path)`` / ``from_mapping(mapping, source=...)`` build it and
``to_mapping()`` gives back a plain nested dict, so ``from_mapping(c.to_mapping()) == c``.
Every knob is declared once, with its type, default, rule and description
(:mod:`~rootweaver_capabilities.config.schema`); :func:`knob_reference` lists them
(:mod:`~rootweaver_capabilities.config.reference`: the command line's defaults and
``docs/configuration.md`` come from there; the shipped ``configs/retrieval/multi_hop.yaml``
sets exactly these keys).

Validation happens at the door (:mod:`~rootweaver_capabilities.config.validate`): an
unknown key, a wrong type, an impossible value or a file knob (``retriever.corpus``,
``flags.static_file``, ``flags.unleash.bootstrap_file``) naming no existing file raises
:class:`ConfigError` (a ``ValueError``) whose one-line message names the dotted key and the
source (the YAML file path, or ``source=`` for a mapping). A YAML file is read strictly
(:mod:`~rootweaver_capabilities.config.yaml_strict`: size, encoding, duplicate keys,
aliases, depth).

Secrets: the config holds only the *names* of environment variables; the values are read
from the environment when needed and never stored in the object. No other knob can be
overridden from the environment. Relative paths are used as given, i.e. relative to the
working directory of the process.

Each name is imported from its submodule on first use (PEP 562), so reading the schema's
defaults does not load the YAML parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootweaver_innovations.lazy import lazy_names

if TYPE_CHECKING:
    from rootweaver_capabilities.config.reference import Knob, Section, find_knob, knob_reference, sections
    from rootweaver_capabilities.config.rules import ConfigError
    from rootweaver_capabilities.config.schema import (
        CAPABILITY_FLAG,
        FLAG_PROVIDERS,
        LLM_PROVIDERS,
        READER_RUNTIMES,
        ChunkingConfig,
        CompactionConfig,
        FlagsConfig,
        LLMConfig,
        MultiHopConfig,
        RetrieverConfig,
        ServiceConfig,
        SphinxQLConfig,
        UnleashConfig,
    )
    from rootweaver_capabilities.config.yaml_strict import MAX_CONFIG_BYTES, MAX_YAML_DEPTH

_SUBMODULE = {  # public name -> the submodule defining it
    **dict.fromkeys(("CAPABILITY_FLAG", "FLAG_PROVIDERS", "LLM_PROVIDERS", "READER_RUNTIMES", "ChunkingConfig",
                     "CompactionConfig", "FlagsConfig", "LLMConfig", "MultiHopConfig", "RetrieverConfig", "ServiceConfig",
                     "SphinxQLConfig", "UnleashConfig"), "schema"),
    **dict.fromkeys(("Knob", "Section", "find_knob", "knob_reference", "sections"), "reference"),
    **dict.fromkeys(("MAX_CONFIG_BYTES", "MAX_YAML_DEPTH"), "yaml_strict"),
    "ConfigError": "rules",
}
__all__ = sorted(_SUBMODULE)

__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE, globals())
