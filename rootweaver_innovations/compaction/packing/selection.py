"""The selection contract every packer applies, and the record it hands off.

Before any policy runs, :func:`screen` turns the raw candidates into the eligible ones, in
rank order (relevance descending, then position, then input order):

1. the same id twice with identical content and provenance (``doc_id``, ``source``,
   ``version``) is merged: the first-ranked copy stays, the others are recorded as
   ``duplicate_id``; the same id with different text or provenance raises
   :class:`ConflictingCandidateError` (no guessing which copy is right);
2. a source (``source``, else ``doc_id``) carrying two or more version labels among the
   candidates is blocked: all its candidates are recorded as ``version_conflict`` with the
   sorted labels (no guessing which version is newer);
3. exact duplicate text under different ids keeps the first-ranked copy; the others are
   recorded as ``duplicate_text`` with the id of the copy kept.

Packers then skip (never truncate) what does not fit and go on trying smaller ones; the
candidates they leave out are recorded by :func:`account` as ``budget`` (did not fit in
what the packet left), ``snippet_cap`` (the packet already held ``max_snippets``) or
``not_selected`` (fitted, but the policy did not take it). A :class:`PackResult` keeps the
packet apart from every omission and its reason; every input candidate appears exactly
once in one or the other. No evaluation label is an input to any of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rootweaver_innovations.compaction.packing.candidates import Candidate, Header, rank_order

__all__ = [
    "REASONS",
    "REASON_BUDGET",
    "REASON_DUPLICATE_ID",
    "REASON_DUPLICATE_TEXT",
    "REASON_NOT_SELECTED",
    "REASON_SNIPPET_CAP",
    "REASON_VERSION_CONFLICT",
    "ConflictingCandidateError",
    "Omission",
    "PackResult",
    "Packed",
    "Screened",
    "account",
    "screen",
]

REASON_DUPLICATE_ID = "duplicate_id"
REASON_VERSION_CONFLICT = "version_conflict"
REASON_DUPLICATE_TEXT = "duplicate_text"
REASON_BUDGET = "budget"
REASON_SNIPPET_CAP = "snippet_cap"
REASON_NOT_SELECTED = "not_selected"
REASONS = (
    REASON_DUPLICATE_ID,
    REASON_VERSION_CONFLICT,
    REASON_DUPLICATE_TEXT,
    REASON_BUDGET,
    REASON_SNIPPET_CAP,
    REASON_NOT_SELECTED,
)


class ConflictingCandidateError(ValueError):
    """One candidate id arrived with two different texts or provenances."""


class Omission(NamedTuple):
    """A candidate left out of the packet, why (one of :data:`REASONS`), and details.

    ``detail``: for ``duplicate_id`` and ``duplicate_text`` the id of the copy kept; for
    ``version_conflict`` the conflicting version labels, sorted; otherwise empty. An
    immutable tuple: most of a compaction's candidates end up as one.
    """

    candidate: Candidate
    reason: str
    detail: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.candidate.id


@dataclass(frozen=True, slots=True)
class Packed:
    """A candidate in the packet: ``step`` is its 0-based pick order, ``gain`` what the
    policy scored it at when it was picked (marginal F gain for submodular, relevance for
    naive, new query terms for focused, the MMR score for MMR)."""

    candidate: Candidate
    step: int
    gain: float


@dataclass(frozen=True, slots=True)
class Screened:
    """Eligible candidates in rank order, their indices in the input, and the omissions so far."""

    eligible: tuple[Candidate, ...]
    indices: tuple[int, ...]
    omissions: tuple[Omission, ...]


@dataclass(frozen=True, slots=True)
class PackResult:
    """The hand-off record of one packing run.

    ``text`` is the packet as the reader sees it: kept candidates and their headers in
    position order, joined by the budget's separator. ``packet`` is in the same order.
    ``used`` is the real size of ``text`` in ``unit`` (<= ``limit``); ``chars`` its
    length; ``tokens`` its real token count for a token budget (else ``None``).
    ``objective`` is F(packet) under the submodular objective and ``similarity`` which
    similarity fed the policy (``"tfidf"`` or ``"dense"``), both ``None`` for a policy that
    used neither (``naive``, ``focused``, ``evidence``);
    ``fallback`` whether the best-singleton fallback replaced the greedy set.
    """

    policy: str
    text: str
    packet: tuple[Packed, ...]
    headers: tuple[Header, ...]
    omissions: tuple[Omission, ...]
    unit: str
    limit: int
    used: int
    chars: int
    tokens: int | None
    objective: float | None
    similarity: str | None
    fallback: bool

    @property
    def ids(self) -> tuple[str, ...]:
        """Ids of the packet's candidates, in packet order."""
        return tuple(p.candidate.id for p in self.packet)

    def omitted(self, reason: str) -> tuple[str, ...]:
        """Ids omitted for ``reason``."""
        return tuple(o.id for o in self.omissions if o.reason == reason)


def screen(candidates: Sequence[Candidate]) -> Screened:
    """Apply steps 1-3 of the contract (module docstring) to ``candidates``.

    Raises :class:`ConflictingCandidateError` for one id with different content or
    provenance, ``ValueError`` if an item is not a :class:`Candidate`.
    """
    for c in candidates:
        if not isinstance(c, Candidate):
            raise ValueError(f"expected Candidate items, got {type(c).__name__}")
    ranked = rank_order(candidates)
    omissions: list[Omission] = []

    first_by_id: dict[str, Candidate] = {}
    unique: list[int] = []
    for i in ranked:
        c = candidates[i]
        kept = first_by_id.get(c.id)
        if kept is None:
            first_by_id[c.id] = c
            unique.append(i)
        elif kept.text != c.text or kept.provenance != c.provenance:
            raise ConflictingCandidateError(
                f"candidate id {c.id!r} appears with different content or provenance: "
                f"(doc_id, source, version) {kept.provenance} vs {c.provenance}"
                + ("" if kept.text == c.text else "; texts differ")
            )
        else:
            omissions.append(Omission(c, REASON_DUPLICATE_ID, (kept.id,)))

    labels: dict[str, set[str]] = {}
    for i in unique:
        c = candidates[i]
        if c.version is not None:
            labels.setdefault(c.source_key, set()).add(c.version)
    blocked = {s: tuple(sorted(v)) for s, v in labels.items() if len(v) > 1}

    eligible: list[int] = []
    first_by_text: dict[str, str] = {}
    for i in unique:
        c = candidates[i]
        if c.source_key in blocked:
            omissions.append(Omission(c, REASON_VERSION_CONFLICT, blocked[c.source_key]))
        elif c.text in first_by_text:
            omissions.append(Omission(c, REASON_DUPLICATE_TEXT, (first_by_text[c.text],)))
        else:
            first_by_text[c.text] = c.id
            eligible.append(i)
    return Screened(tuple(candidates[i] for i in eligible), tuple(eligible), tuple(omissions))


def account(
    eligible: Sequence[Candidate],
    chosen: Sequence[int],
    fits: np.ndarray,
    max_snippets: int | None,
) -> tuple[Omission, ...]:
    """Omissions for the eligible candidates a policy did not choose.

    ``chosen`` are indices into ``eligible``; ``fits[i]`` says whether candidate ``i``
    would still fit next to the final packet. Not fitting is ``budget``; fitting when the
    packet is full by count is ``snippet_cap``; otherwise ``not_selected``.
    """
    taken = set(chosen)
    full = max_snippets is not None and len(taken) >= max_snippets
    out = []
    for i, (c, fit) in enumerate(zip(eligible, fits.tolist())):
        if i in taken:
            continue
        if not fit:
            out.append(Omission(c, REASON_BUDGET))
        elif full:
            out.append(Omission(c, REASON_SNIPPET_CAP))
        else:
            out.append(Omission(c, REASON_NOT_SELECTED))
    return tuple(out)
