"""What BM25 indexes for a passage: the one tokenizer of the index, and the settings that decide it.

:func:`passage_tokens` is :func:`~rootweaver_innovations.text.bm25_tokenize` over the passage's
file subject, title and text; :func:`corpus_tokens` gives each passage of a corpus its file's
subject under the corpus's conventions. :func:`tokenizer_settings` is recorded in an index's
manifest, and this module's code is part of the index fingerprint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.retrieval.titles import file_subjects
from rootweaver_innovations.text import STOP_WORDS, WORD, bm25_tokenize

__all__ = ["EMPTY_TOKEN", "corpus_tokens", "passage_tokens", "tokenizer_settings"]

EMPTY_TOKEN = "<empty>"


def passage_tokens(passage: Passage, subject: str = "") -> list[str]:
    """What BM25 indexes for ``passage``: the tokens of ``subject + " " + title + " " + text``,
    or ``[EMPTY_TOKEN]`` when there are none (so every passage has a length). ``subject`` is
    the name of the file a record titled by an id was cut from, as
    :func:`~rootweaver_innovations.retrieval.titles.file_subjects` gives it ("" for any other passage):
    the window "He received the Nobel Prize in 1921" of a file opening "Albert Einstein
    was ..." is found by a query naming Einstein, as a titled page would be."""
    return bm25_tokenize(f"{subject} {passage.title} {passage.text}") or [EMPTY_TOKEN]


def corpus_tokens(passages: Sequence[Passage], conventions: Conventions,
                  carry: tuple[str, str] = ("", "")) -> Iterator[list[str]]:
    """:func:`passage_tokens` of each of ``passages``, with its file's subject under ``conventions``;
    ``carry`` is the run of records the passages continue (as
    :func:`~rootweaver_innovations.retrieval.titles.file_subjects` takes it)."""
    for p, (_title, subject) in zip(passages, file_subjects(passages, conventions, carry)):
        yield passage_tokens(p, subject)


def tokenizer_settings() -> dict[str, object]:
    """Everything that decides :func:`passage_tokens`; a saved index records it and is
    refused when it differs from the running code's."""
    stop = hashlib.sha256("\n".join(sorted(STOP_WORDS)).encode()).hexdigest()
    return {"pattern": WORD.pattern, "lowercase": True, "stop_words_sha256": stop, "empty_token": EMPTY_TOKEN,
            "fields": "file subject (titles.file_subjects) + ' ' + title + ' ' + text"}
