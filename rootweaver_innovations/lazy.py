"""A package's public names, imported from their submodules on first use (PEP 562).

So importing one light submodule of a package does not import every other one (numpy, the
packers, the capability): ``rootweaver --help`` starts in about twice a bare Python start.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(package: str, submodule_of: Mapping[str, str], namespace: dict[str, object]
               ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``): ``__getattr__(name)``
    imports ``name`` from the submodule ``submodule_of[name]`` and keeps it in ``namespace``
    (the package's globals), so it is imported once; any other name raises
    ``AttributeError``. ``__dir__`` lists ``namespace`` and every public name."""

    def __getattr__(name: str) -> object:
        if name not in submodule_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(f".{submodule_of[name]}", package), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *submodule_of})

    return __getattr__, __dir__
