"""Who names whom among a problem's documents: which sentences hold a name (Aho-Corasick over the
joined sentences), the document-to-document link matrix, and which query terms each text holds.

Pure numpy and ahocorasick over plain strings; used by the evidence features.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import accumulate

import ahocorasick
import numpy as np


__all__ = ["Sentences", "holders", "link_matrix", "term_incidence"]


def holders(names: Collection[str], joined: str, ends: list[int]) -> dict[str, list[int]]:
    """For each distinct non-empty name, the texts of ``joined`` (``"\n"``-joined, text ``i``
    ending before ``ends[i]``) that contain it as a substring, in order; one Aho-Corasick pass
    over ``joined`` for all names. An empty name is held by no text."""
    found: dict[str, list[int]] = {name: [] for name in names}
    automaton = ahocorasick.Automaton()
    for name in found:
        if name:
            automaton.add_word(name, (name, len(name) - 1))
    if not len(automaton):
        return found
    automaton.make_automaton()
    for end, (name, width) in automaton.iter(joined):
        i = bisect_right(ends, end - width)
        if end + 1 < ends[i]:  # inside text i (a name holding "\n" may span two texts: it is in neither)
            held = found[name]
            if not held or held[-1] != i:
                held.append(i)
    return found


@dataclass(frozen=True, slots=True, eq=False)
class Sentences:
    """A problem's lowercased sentences and which of them hold each of a fixed set of names."""

    lowered: list[str]  # per sentence: lowercased text
    found: dict[str, list[int]]  # name -> the sentences containing it, in order

    @classmethod
    def of(cls, texts: list[str], names: Collection[str]) -> Sentences:
        """``texts`` lowercased and searched for every name of ``names`` (lowercase) at once."""
        lowered = [t.lower() for t in texts]  # lowercasing may change lengths: offsets from these
        return cls(lowered, holders(names, "\n".join(lowered), list(accumulate(len(t) + 1 for t in lowered))))

    def holding(self, name: str) -> list[int]:
        """The sentences containing ``name``, in order; ``name`` must be one searched by :meth:`of`."""
        return self.found[name]


def link_matrix(names: list[str], doc: np.ndarray, rel: np.ndarray, sentences: Sentences
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(links, out, named_rel)``: ``links[j, k]`` when a sentence of document j contains
    document k's name (never ``j == k``); ``out[i]`` when sentence i contains another
    document's name; ``named_rel[k]`` the highest ``rel`` of a sentence of another document
    containing document k's name (``-inf`` when none). A sentence contains a name as a
    substring (:meth:`Sentences.holding`); ``doc`` is each sentence's document.

    Memory is bounded by the input, not by the (sentence, named document) pairs: documents
    sharing one name (a lead entity every line repeats) are handled as one group, so
    4,558 lines naming one entity cost the ``links`` matrix and O(lines) arrays, not 20
    million pairs.
    """
    n_doc = len(names)
    links = np.zeros((n_doc, n_doc), dtype=bool)
    out = np.zeros(len(doc))
    named_rel = np.full(n_doc, -np.inf)
    groups: dict[str, list[int]] = {}
    for d, name in enumerate(names):
        groups.setdefault(name, []).append(d)
    for name, members in groups.items():
        held = np.asarray(sentences.holding(name), dtype=np.int64)
        if not held.size:
            continue
        group = np.asarray(members, dtype=np.int64)
        held_doc = doc[held]
        links[np.ix_(np.unique(held_doc), group)] = True  # the diagonal is cleared below
        others = held if len(group) > 1 else held[held_doc != group[0]]
        out[others] = 1.0
        best = int(held[np.argmax(rel[held])])  # the best sentence, then the best of another document
        rest = held[held_doc != doc[best]]
        second = float(rel[rest].max()) if rest.size else -np.inf
        named_rel[group] = np.where(group == doc[best], second, rel[best])
    np.fill_diagonal(links, False)
    return links, out, named_rel


def term_incidence(terms: Sequence[str], lowered: Sequence[str]) -> np.ndarray:
    """``bool[n, T]``: whether ``terms[k]`` (a run of ``\\w`` characters) occurs in the
    already lowercased text ``lowered[i]`` bounded by non-word characters or the text's ends,
    i.e. is one of its ``\\w+`` tokens.

    Each term is searched once in all texts joined; a text holding it is passed at once, and
    an unbounded occurrence is skipped whole (an occurrence starting inside it follows a word
    character).
    """
    inc = np.zeros((len(lowered), len(terms)), dtype=bool)
    if not terms or not lowered:
        return inc
    joined = "\n" + "\n".join(lowered) + "\n"  # "\n" is not a word character
    starts = list(accumulate((len(t) + 1 for t in lowered), initial=1))  # text i: joined[starts[i]:starts[i + 1] - 1]
    find = joined.find
    rows: list[int] = []
    cols: list[int] = []
    for k, term in enumerate(terms):
        width = len(term)
        at = find(term)
        while at >= 0:
            before, after = joined[at - 1], joined[at + width]
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):  # re's \w
                i = bisect_right(starts, at) - 1
                rows.append(i)
                cols.append(k)
                at = find(term, starts[i + 1])
            else:
                at = find(term, at + width)
    inc[rows, cols] = True
    return inc
