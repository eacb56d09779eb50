"""Feature-flag providers: a static one (no server) and one backed by an Unleash server.

Contract shared by every provider (:class:`FlagProvider`): ``is_enabled(name, context)``
answers for one request and never raises. ``context`` is the request's Unleash context
(``{"userId": ..., "sessionId": ...}``), so percentage rollouts split users.

Fallback order of :class:`UnleashFlagProvider` when the server cannot be reached:
the last values fetched from the server (kept in memory, and on disk in ``cache_dir``
so a restarted process has them too), else the ``bootstrap_file``, else off. A flag
the provider has never heard of is off.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from rootweaver_capabilities.config import FlagsConfig, UnleashConfig

__all__ = [
    "FlagProvider",
    "StaticFlagProvider",
    "UnleashFlagProvider",
    "bootstrap_payload",
    "build_flag_provider",
]

log = logging.getLogger(__name__)


class FlagProvider(Protocol):
    """Answers whether flag ``name`` is on for one request; must never raise."""

    def is_enabled(self, name: str, context: Mapping[str, Any] | None = None) -> bool: ...


class StaticFlagProvider:
    """Fixed on/off values, the same for every request; unknown flags are off.

    Build it from a mapping ``{name: bool}`` or with :meth:`from_json_file`. Raises
    ``ValueError`` when a name is not a non-empty string or a value is not a bool.
    """

    def __init__(self, values: Mapping[str, bool]):
        for name, value in values.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"flag names must be non-empty strings, got {name!r}")
            if not isinstance(value, bool):
                raise ValueError(f"flag {name!r} must be true or false, got {value!r}")
        self._values = dict(values)

    @classmethod
    def from_json_file(cls, path: str | Path) -> StaticFlagProvider:
        """Load ``{"flag.name": true|false, ...}``; errors (``ValueError``, one line) name the file
        and, for bad bytes or JSON, the line."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"{path}: cannot read flag file ({exc.strerror})") from None
        try:
            raw = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ValueError(f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
        except RecursionError:
            raise ValueError(f"{path}: JSON nested too deeply") from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: expected a JSON object of flag name -> true/false")
        try:
            return cls(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def is_enabled(self, name: str, context: Mapping[str, Any] | None = None) -> bool:
        return self._values.get(name, False)

    def __repr__(self) -> str:
        return f"StaticFlagProvider({self._values!r})"


def bootstrap_payload(values: Mapping[str, bool]) -> dict[str, Any]:
    """An Unleash client-features document (``/api/client/features`` shape) for ``values``.

    Each flag gets the ``default`` strategy (on for everyone while enabled). Write it with
    ``json.dump`` and point ``flags.unleash.bootstrap_file`` at it.
    """
    return {
        "version": 2,
        "features": [
            {
                "name": name,
                "type": "release",
                "enabled": bool(on),
                "strategies": [{"name": "default", "parameters": {}, "constraints": []}],
                "variants": [],
            }
            for name, on in values.items()
        ],
    }


class UnleashFlagProvider:
    """Flags from an Unleash server through the ``UnleashClient`` SDK (extra ``flags``).

    Construction starts the SDK's background polling (every ``refresh_interval`` s) and
    never raises for an unreachable server: it logs a warning and evaluates from what it
    has (last values on disk in ``cache_dir``, else ``bootstrap_file``, else nothing, so
    all flags off). The backend token is read from the environment variable named by
    ``settings.token_env`` and only ever placed in the request header.

    ``client_options`` are passed through to ``UnleashClient`` (e.g. ``disable_metrics``).
    Call :meth:`close` to stop polling.
    """

    def __init__(self, settings: UnleashConfig, **client_options: Any):
        try:
            from UnleashClient import UnleashClient
            from UnleashClient.cache import FileCache
            from UnleashClient.constants import FEATURES_URL
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("UnleashFlagProvider needs the 'flags' extra: pip install 'rootweaver[flags]'") from exc
        if settings.url is None:
            raise ValueError("flags.unleash.url must be set for the Unleash provider")
        self.settings = settings
        cache = FileCache(settings.app_name, directory=settings.cache_dir)
        if cache.get(FEATURES_URL):
            cache.bootstrapped = True  # last values fetched by an earlier process: evaluate them first
            self.initial_source = "cache"
        elif settings.bootstrap_file is not None:
            cache.bootstrap_from_file(Path(settings.bootstrap_file))
            self.initial_source = "bootstrap"
        else:
            self.initial_source = "none"
        token = settings.token()
        if token is None and settings.token_env:
            log.warning("Unleash token variable %s is not set; the server will likely refuse the client",
                        settings.token_env)
        options: dict[str, Any] = {
            "url": settings.url,
            "app_name": settings.app_name,
            "environment": settings.environment,
            "instance_id": f"{settings.app_name}-{socket.gethostname()}-{os.getpid()}-{id(self):x}",
            "refresh_interval": settings.refresh_interval,
            "request_timeout": settings.request_timeout,
            "custom_headers": {"Authorization": token} if token else {},
            "cache": cache,
        }
        options.update(client_options)
        self._client = UnleashClient(**options)
        try:
            self._client.initialize_client()
        except Exception as exc:  # noqa: BLE001 - flags must never take the agent down
            log.warning("Unleash client did not start (%s); evaluating %s values", type(exc).__name__,
                        self.initial_source)

    def is_enabled(self, name: str, context: Mapping[str, Any] | None = None) -> bool:
        try:
            return bool(self._client.is_enabled(name, dict(context or {})))
        except Exception as exc:  # noqa: BLE001 - flags must never take the agent down
            log.warning("Unleash evaluation of %s failed (%s); treating it as off", name, type(exc).__name__)
            return False

    def close(self) -> None:
        """Stop background polling (idempotent); evaluation keeps the last values."""
        try:
            self._client.destroy()
        except Exception as exc:  # noqa: BLE001
            log.warning("Unleash client shutdown failed (%s)", type(exc).__name__)

    def __repr__(self) -> str:
        s = self.settings
        return f"UnleashFlagProvider(url={s.url!r}, app_name={s.app_name!r}, environment={s.environment!r})"


def build_flag_provider(flags: FlagsConfig) -> FlagProvider:
    """The provider ``flags.provider`` names, configured from ``flags``."""
    if flags.provider == "unleash":
        return UnleashFlagProvider(flags.unleash)
    if flags.static_file is not None:
        return StaticFlagProvider.from_json_file(flags.static_file)
    return StaticFlagProvider(flags.static_values)
