"""The typed records that flow from retrieval through the loop to compaction.

A :class:`Fact` is one sentence of a retrieved passage with its provenance, and its one
context line (:func:`format_fact`). Contexts are laid out from facts in
:mod:`rootweaver_innovations.compaction.synth_context`; nothing parses a rendered context back into facts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rootweaver_innovations.documents.corpus import Passage, Source, split_sentences
from rootweaver_innovations.documents.metadata import DocumentMeta
from rootweaver_innovations.text import fold_whitespace
from rootweaver_innovations.retrieval.titles import id_titled

__all__ = ["FACT_SEPARATOR", "MIN_OVERLAP_WORDS", "Fact", "facts_from_passages", "format_fact", "join_records", "source_tag",
           "with_subjects"]

FACT_SEPARATOR = " | "
MIN_OVERLAP_WORDS = 3  # fewer shared words at a record boundary are a coincidence ("the"), not a chunker's overlap


def format_fact(title: str, sentence: str) -> str:
    """One fact line, ``"<title> | <sentence>"``; whitespace runs (newlines too) folded to a space."""
    return f"{fold_whitespace(title)}{FACT_SEPARATOR}{fold_whitespace(sentence)}"


def source_tag(meta: DocumentMeta | None) -> str:
    """What a reader is told of a document's origin on each of its lines: ``" [<source>,
    <published date>]"`` from its metadata ``meta`` (either part alone when the other is
    missing; the date as ``YYYY-MM-DD``), ``""`` when it has neither."""
    if meta is None:
        return ""
    parts = [p for p in (meta.source, meta.published[:10] if meta.published else None) if p]
    return f" [{', '.join(parts)}]" if parts else ""


@dataclass(frozen=True, slots=True)
class Fact:
    """One sentence of a retrieved passage.

    ``passage_id`` and ``title`` name the passage, ``sentence`` is its ``sentence_index``-th
    sentence (0-based) as stored (in a run of records read whole, :func:`join_records`, of the
    run's joined text), ``hop`` the 0-based loop iteration that retrieved it,
    ``sub_query`` the query that hop issued, ``rank`` the passage's 0-based place among the
    hop's new passages and ``score`` the retriever's score for it. ``source`` is the passage's
    provenance when it is a chunk of a document (not compared); ``meta`` the metadata of its
    document or record (a chunk's, when not given, its source's; not compared). ``id_title``: the title is an
    id that names nothing (:func:`~rootweaver_innovations.retrieval.titles.id_titled`; not compared);
    ``subject``: then the name its file is about, when known (:func:`with_subjects`; not compared).

    Derived once at construction (not compared, not in ``repr``): ``body``, the sentence with
    whitespace runs folded to one space, and ``line``, the fact as one context line,
    ``"<title> | <body>"`` (:func:`format_fact`; a document's title followed by its
:func:`source_tag`, e.g. ``"Amazon sellers sound off ... [CNBC, 2023-10-06] | <body>"``). Under an id title (a reader gains nothing from
    ``doc-3f2a.txt`` and the budget would pay for it on every line) it is ``"<subject> | <body>"``,
    or ``body`` alone when there is no subject or the sentence names it in its first words.
    A field of the wrong type, a negative index, hop or rank, or a score that is not a finite
    number raises ``ValueError`` naming the passage and the field.
    """

    passage_id: str
    title: str
    sentence: str
    sentence_index: int
    hop: int = 0
    sub_query: str = ""
    rank: int = 0
    score: float = 0.0
    source: Source | None = field(default=None, repr=False, compare=False)
    id_title: bool = field(default=False, repr=False, compare=False)
    subject: str = field(default="", repr=False, compare=False)
    meta: DocumentMeta | None = field(default=None, repr=False, compare=False)
    body: str = field(init=False, repr=False, compare=False)
    line: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.passage_id, str) and isinstance(self.title, str) and isinstance(self.sentence, str)
                and isinstance(self.sub_query, str) and isinstance(self.subject, str)
                and _index(self.sentence_index) and _index(self.hop)
                and _index(self.rank) and _finite(self.score)):
            self._refuse()
        body = fold_whitespace(self.sentence)
        object.__setattr__(self, "body", body)
        if self.meta is None and self.source is not None:
            object.__setattr__(self, "meta", self.source.meta)
        if not self.id_title:
            line = format_fact(self.title + source_tag(self.meta), body)
        elif self.subject and self.subject.lower() not in body[: len(self.subject) + 20].lower():
            line = format_fact(self.subject, body)
        else:
            line = body
        object.__setattr__(self, "line", line)

    def _refuse(self) -> None:
        """Raise ``ValueError`` for the first bad field (the check above found one)."""
        where = f"fact of passage {self.passage_id!r}"
        for name in ("passage_id", "title", "sentence", "sub_query", "subject"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{where}: {name} must be a str, got {getattr(self, name)!r}")
        for name in ("sentence_index", "hop", "rank"):
            if not _index(getattr(self, name)):
                raise ValueError(f"{where}: {name} must be an int >= 0, got {getattr(self, name)!r}")
        raise ValueError(f"{where}: score must be a finite number, got {self.score!r}")


def _index(value: object) -> bool:
    """``value`` is an int >= 0 (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _finite(value: object) -> bool:
    """``value`` is a finite int or float (``bool`` excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def facts_from_passages(
    passages: Sequence[Passage], *, hop: int = 0, sub_query: str = "", scores: Iterable[float] | None = None
) -> list[Fact]:
    """Every non-blank sentence of ``passages`` as facts, in passage order then sentence order.

    ``rank`` is the passage's index in ``passages``; ``scores`` (one per passage) default to 0.
    A passage titled by an id (:func:`~rootweaver_innovations.retrieval.titles.id_titled`) gives facts
    with ``id_title`` set.
    """
    score_list = list(scores) if scores is not None else [0.0] * len(passages)
    if len(score_list) != len(passages):
        raise ValueError(f"got {len(score_list)} scores for {len(passages)} passages")
    return [
        Fact(p.id, p.title, s, j, hop, sub_query, rank, float(score), p.source, id_title, meta=p.meta)
        for rank, (p, score) in enumerate(zip(passages, score_list))
        for id_title in (id_titled(p),)
        for j, s in enumerate(p.sentences)
        if s.strip()
    ]


def join_records(facts: Sequence[Fact], after: Mapping[str, str]) -> list[Fact]:
    """``facts`` with each run of records read one after the other from one file as one text.

    ``after`` maps a passage id to the id of the record that follows it in its file, for pairs
    of passages that both have facts in ``facts``. A run's text is its records' sentences
    joined, the words a record repeats from the end of the one before (an overlapping
    chunker's, at least :data:`MIN_OVERLAP_WORDS`) kept once, split again as a record's text
    is: a sentence cut at a record boundary is whole again and none is read twice. The run's
    facts take the place of its first fact in ``facts`` and that fact's hop, sub-query, rank
    and score; ``passage_id``, ``title`` and ``source`` are the run's first record's (file
    order), ``sentence_index`` a place in the joined text. Other facts are kept as they are;
    an empty ``after`` returns ``facts`` unchanged (as a new list).
    """
    if not after:
        return list(facts)
    own: dict[str, list[Fact]] = {}
    for f in facts:
        own.setdefault(f.passage_id, []).append(f)
    follows = {b: a for a, b in after.items() if a in own and b in own and a != b}
    runs: dict[str, list[str]] = {}  # any member's id -> its run, first record first
    for head in own:
        if head in follows or head not in after:
            continue
        run = [head]
        while (nxt := after.get(run[-1])) in own and nxt not in run:
            run.append(nxt)
        if len(run) > 1:
            for member in run:
                runs[member] = run
    out: list[Fact] = []
    done: set[str] = set()
    for f in facts:
        run = runs.get(f.passage_id)
        if run is None:
            out.append(f)
        elif run[0] not in done:
            done.add(run[0])
            first = own[run[0]][0]
            out.extend(Fact(first.passage_id, first.title, s, j, f.hop, f.sub_query, f.rank, f.score, first.source,
                            first.id_title, meta=first.meta)
                       for j, s in enumerate(split_sentences(_joined(own[m] for m in run), abbreviations=True)))
    return out


def _joined(runs: Iterable[Sequence[Fact]]) -> str:
    """The words of each record's facts in turn, a record's opening words dropped when they
    repeat at least :data:`MIN_OVERLAP_WORDS` closing words of the text so far."""
    words: list[str] = []
    for record in runs:
        more = " ".join(f.sentence for f in record).split()
        n = next((n for n in range(min(len(words), len(more)), MIN_OVERLAP_WORDS - 1, -1)
                  if words[-n:] == more[:n]), 0)
        words += more[n:]
    return " ".join(words)


def with_subjects(facts: Sequence[Fact], subjects: Mapping[str, str]) -> list[Fact]:
    """``facts`` with each fact of a record titled by an id (``id_title``) whose title is in
    ``subjects`` given that title's subject: the name the file's first record opens with,
    which a reader of a window in the middle of the file has no other way to know ("He won
    the 1921 Nobel Prize"). Only the line changes (see :class:`Fact`); other facts are kept."""
    return [Fact(f.passage_id, f.title, f.sentence, f.sentence_index, f.hop, f.sub_query, f.rank, f.score, f.source,
                 True, subject, f.meta)
            if f.id_title and (subject := subjects.get(f.title, "")) else f
            for f in facts]
