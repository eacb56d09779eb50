"""Records titled by an id read back as windows of their files, and named as readers know them.

A user who cut files into windows titled ``doc-17.txt`` gets, in the trajectory, each run of
read windows joined and labelled with the name the file is about, in the form the question
and the other read facts use (the title index's conventions decide both the subject and its
forms). Chunks of a folder whose title is their paragraph's lead name are renamed the same way.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.retrieval.titles import TitleIndex, title_keys
from rootweaver_innovations.records import Fact, join_records, with_subjects

__all__ = ["as_files"]


def as_files(index: TitleIndex, facts: list[Fact], rows: dict[str, int], question: str) -> list[Fact]:
    """``facts`` with the records titled by an id read as windows of their files: each run
    of records read one after the other joined (:func:`~rootweaver_innovations.records.join_records`),
    and every line given the name the file's first record opens with
    (:func:`~rootweaver_innovations.records.with_subjects`), in the form the question and
    the other files' read facts use most (:func:`_usual_name`: "Danja" rather than "Floyd
    Hills" when they say "produced by Danja"). ``rows`` maps each read passage id to its
    row of the title index. One row lookup and one record read per file; a file whose
    first-read record is outside the index gets no name. Then :func:`_usual_titles`."""
    files: dict[str, dict[str, int]] = {}  # id title -> {passage id: row}, in read order
    for f in facts:
        if f.id_title:
            files.setdefault(f.title, {})[f.passage_id] = rows[f.passage_id]
    after: dict[str, str] = {}
    subjects: dict[str, str] = {}
    read = "\n".join((question, *(f.sentence for f in facts)))
    for title, members in files.items():
        keys = title_keys(title)
        if not keys:
            continue
        file_rows = index.rows(keys[0])
        inside = file_rows and next(iter(members.values())) >= 0
        lead = index.passages[file_rows[0]].sentences[:1] if inside else ()
        if lead and (name := _usual_name(index.conventions, lead[0], title, facts, read)):
            subjects[title] = name
        ids = {row: pid for pid, row in members.items() if row >= 0}
        for row, pid in ids.items():
            at = bisect_left(file_rows, row)
            if at + 1 < len(file_rows) and file_rows[at] == row and file_rows[at + 1] in ids:
                after[pid] = ids[file_rows[at + 1]]
    return _usual_titles(index, with_subjects(join_records(facts, after), subjects), read)


def _usual_titles(index: TitleIndex, facts: list[Fact], read: str) -> list[Fact]:
    """``facts`` with each chunk of a document whose title is the name its paragraph's lead
    sentence opens with (:mod:`~rootweaver_innovations.documents.folders`: a file without headings)
    retitled by the form of that name the question and the other read facts use most
    (:func:`_usual_name`), as for windows titled by an id. The lead is the first sentence of
    the first passage the title index has under the title; a title it does not give (the
    file's name, a document title) is kept, as is any chunk with a heading path."""
    named: dict[str, str] = {}
    for f in facts:
        if f.source is None or f.source.headings or f.title in named:
            continue
        keys = title_keys(f.title)
        first = index.rows(keys[0])[:1] if keys else ()
        lead = index.passages[int(first[0])].sentences[0] if len(first) else ""
        named[f.title] = (_usual_name(index.conventions, lead, f.title, facts, read) or f.title
                          if index.conventions.lead_subject(lead) == f.title else f.title)
    renamed = {title: name for title, name in named.items() if name != title}
    return [dataclasses.replace(f, title=renamed[f.title]) if f.source is not None and f.title in renamed else f
            for f in facts]


def _usual_name(conventions: Conventions, lead: str, title: str, facts: list[Fact], read: str) -> str | None:
    """``conventions.usual_name`` of ``lead``, names counted in ``read``
    (the question and every read fact) less in the facts titled ``title`` (the file's own)."""
    own = "\n".join(f.sentence for f in facts if f.title == title)
    return conventions.usual_name(lead, lambda n: read.count(n) - own.count(n))
