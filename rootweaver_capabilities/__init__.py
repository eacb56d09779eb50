"""rootweaver's runtime edge: validated config, feature flags, metrics and the capability.

Optional extras: ``flags`` (UnleashClient) for :class:`UnleashFlagProvider`, ``metrics``
(prometheus-client) for :class:`Metrics`, ``langchain`` for
``rootweaver_capabilities.adapters.langchain`` (not re-exported here), ``llm`` for the
OpenAI-compatible reader client and ``reader`` for the embedded llama.cpp reader
(``rootweaver_capabilities.readers.embedded``; both used through ``llm.provider``).

Each name is imported from its submodule on first use (PEP 562), so the command line
(:mod:`rootweaver_capabilities.cli.main`) starts without loading the config, numpy or the capability.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootweaver_innovations.lazy import lazy_names

if TYPE_CHECKING:
    from rootweaver_capabilities.capability import CapabilityContext, MultiHopCapability, RequestContext
    from rootweaver_capabilities.config import ConfigError, MultiHopConfig
    from rootweaver_capabilities.flags import FlagProvider, StaticFlagProvider, UnleashFlagProvider, build_flag_provider
    from rootweaver_capabilities.metrics import Metrics

__all__ = [
    "CapabilityContext",
    "ConfigError",
    "FlagProvider",
    "Metrics",
    "MultiHopCapability",
    "MultiHopConfig",
    "RequestContext",
    "StaticFlagProvider",
    "UnleashFlagProvider",
    "build_flag_provider",
]

_SUBMODULE = {  # public name -> the submodule defining it
    "CapabilityContext": "capability",
    "ConfigError": "config",
    "FlagProvider": "flags",
    "Metrics": "metrics",
    "MultiHopCapability": "capability",
    "MultiHopConfig": "config",
    "RequestContext": "capability",
    "StaticFlagProvider": "flags",
    "UnleashFlagProvider": "flags",
    "build_flag_provider": "flags",
}


__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE, globals())
