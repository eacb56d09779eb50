"""The registry of conventions, by config name (``conventions: wikipedia|plain``).

A new member is one package or module with a class satisfying
:class:`~rootweaver_innovations.conventions.base.Conventions` and one
:func:`register_conventions` call. Built in: ``wikipedia`` and ``plain``.
"""

from __future__ import annotations

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.plain import Plain
from rootweaver_innovations.conventions.wikipedia import Wikipedia
from rootweaver_innovations.defaults import DEFAULT_CONVENTIONS
from rootweaver_innovations.registry import register

__all__ = ["CONVENTIONS", "DEFAULT_CONVENTIONS", "conventions_names", "default_conventions", "get_conventions",
           "register_conventions"]

CONVENTIONS: dict[str, Conventions] = {}


def register_conventions(member: Conventions) -> Conventions:
    """Add ``member`` under its ``name`` (``ValueError`` for an empty or taken name, or for an
    object that is not a :class:`Conventions`)."""
    if not isinstance(member, Conventions):
        raise ValueError(f"conventions must provide {sorted(_METHODS)}, got {type(member).__name__}")
    return register(CONVENTIONS, "conventions", member.name, member)


def conventions_names() -> tuple[str, ...]:
    """Registered names, in registration order."""
    return tuple(CONVENTIONS)


def get_conventions(name: str) -> Conventions:
    """The member registered as ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in CONVENTIONS:
        raise ValueError(f"unknown conventions {name!r}; choose from {sorted(CONVENTIONS)}")
    return CONVENTIONS[name]


def default_conventions() -> Conventions:
    """The member named by :data:`~rootweaver_innovations.defaults.DEFAULT_CONVENTIONS`."""
    return get_conventions(DEFAULT_CONVENTIONS)


_METHODS = ("name", "lead_subject", "subject_names", "usual_name", "compared_entities", "choice_options",
            "fingerprint")

register_conventions(Wikipedia())
register_conventions(Plain())
