"""The answer rule ``unknown_source``: a question that cites a publication no read document
comes from, and no read passage names, is answered ``insufficient information``.

A question cites a publication when an English phrase says a text came from it: "an article
from X", "a report by X", "a piece in X", "another from X", "the X article", "a recent X
report", "reported (published, covered, discussed, ...) by X", X a run of capitalised words
(with "of", "&" and "the" inside), quoted or not, a leading "The" dropped. X is a source of a
read document when one of their sources is X or starts with X followed by a non-word
character (``BBC News`` for ``BBC News - Entertainment & Arts``, ``CNBC`` for ``Cnbc | World
Business News Leader``), case aside, a leading "The" ignored on both. A read passage names X
when its sentence or title holds X as a whole phrase starting with a capital, case aside after
it: documents with no metadata often carry their source as text ("TechCrunch, October 5,
2023" under the headline), and a Wikipedia question's "written by X" names an author its
passages name too.

The rule settles nothing (``None``) when every cited publication is among the read documents'
sources or named by a read passage, or when the question cites none. Since the loop reads,
after its first hop, the best passage of each source the question names that the corpus
carries, a known source is among what was read unless the passage budget ran out first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rootweaver_innovations.loop.result import ABSTAINED, INSUFFICIENT_INFORMATION, Answer
from rootweaver_innovations.records import Fact

__all__ = ["cited_publications", "unknown_source_answer"]

_NAME = r"['\"\u2018\u201c]?(?P<name>[A-Z][\w&.\-]*(?:\s+(?:[A-Z][\w&.\-]*|of|&|the))*)['\"\u2019\u201d]?"
_TEXT = r"(?:article|report|piece|review|story|coverage|op-ed|column|feature|interview)s?"
_CITES = (
    re.compile(rf"\b{_TEXT}\s+(?:from|by|in)\s+(?:the\s+)?{_NAME}"),
    re.compile(rf"\b(?:an?|the|another|other)\s+(?:recent\s+|separate\s+|latest\s+)?{_NAME}\s+{_TEXT}\b"),
    re.compile(rf"\b(?:reported|published|covered|written|discussed|highlighted|mentioned|detailed)\s+by\s+"
               rf"(?:the\s+)?{_NAME}"),
    re.compile(rf"\banother\s+(?:from|by|in)\s+(?:the\s+)?{_NAME}"),
)
_LEADING_THE = re.compile(r"^the\s+", re.IGNORECASE)
_TRAILING_JOINERS = re.compile(r"(?:\s+(?:of|&|the))+$")


def cited_publications(question: str) -> list[str]:
    """The publications ``question`` cites, in the order of the patterns then of the text."""
    out = []
    for pattern in _CITES:
        for m in pattern.finditer(question):
            name = _TRAILING_JOINERS.sub("", _LEADING_THE.sub("", m.group("name").strip()))
            if name:
                out.append(name)
    return list(dict.fromkeys(out))


def _is_source(name: str, source: str) -> bool:
    name, source = _LEADING_THE.sub("", name.lower()), _LEADING_THE.sub("", source.lower())
    return re.match(rf"{re.escape(name)}(?!\w)", source) is not None


def _named(name: str, facts: Sequence[Fact]) -> bool:
    """Whether a fact's sentence or title holds ``name`` as a capitalised phrase, case aside
    after the first letter (``Cnbc`` for ``CNBC``; not ``variety`` for ``Variety``)."""
    pattern = re.compile(rf"(?<!\w){re.escape(_LEADING_THE.sub('', name))}(?!\w)", re.IGNORECASE)
    return any(m.group()[0].isupper() for f in facts for text in (f.sentence, f.title) for m in pattern.finditer(text))


def unknown_source_answer(question: str, facts: Sequence[Fact]) -> Answer | None:
    """``insufficient information`` (method ``abstained (...)`` naming the publication) when
    ``question`` cites a publication that no read fact's document comes from and no read fact
    names; else ``None``."""
    sources = {f.meta.source for f in facts if f.meta is not None and f.meta.source}
    for name in cited_publications(question):
        if not any(_is_source(name, s) for s in sources) and not _named(name, facts):
            return Answer(INSUFFICIENT_INFORMATION, (), f"{ABSTAINED} (no document read is from {name!r})")
    return None
