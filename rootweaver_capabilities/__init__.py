"""rootweaver's runtime edge: validated config, feature flags, metrics and the capability.

Optional extras: ``flags`` (UnleashClient) for :class:`UnleashFlagProvider`, ``metrics``
(prometheus-client) for :class:`Metrics`, ``langchain`` for
``rootweaver_capabilities.langchain_adapters`` (not re-exported here), ``llm`` for the
OpenAI-compatible reader client and ``reader`` for the embedded llama.cpp reader
(``rootweaver_capabilities.embedded``; both used through ``llm.provider``).
"""

from .config import ConfigError, MultiHopConfig
from .flags import FlagProvider, StaticFlagProvider, UnleashFlagProvider, build_flag_provider
from .metrics import Metrics
from .capability import CapabilityContext, MultiHopCapability, RequestContext

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
