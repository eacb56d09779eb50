"""Facts from records: a run of records read one after the other from one file is read as one text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.documents.corpus import Passage, split_sentences
from rootweaver_innovations.records import MIN_OVERLAP_WORDS, Fact, facts_from_passages, join_records, with_subjects


def _windows(words: list[str], size: int, stride: int, name: str = "f.txt") -> list[Passage]:
    """``words`` cut as a chunker cuts a file: ``size`` words every ``stride`` (the last window may be short)."""
    starts = range(0, max(len(words) - size, 0) + stride, stride)
    return [Passage(f"{name}#{k}", name, split_sentences(" ".join(words[s:s + size]), abbreviations=True))
            for k, s in enumerate(starts) if words[s:s + size]]


@st.composite
def _files(draw):
    lengths = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8))
    words, n = [], 0
    for length in lengths:  # unique words: no overlap can be found by coincidence
        sentence = [f"w{n + i}" for i in range(length)]
        sentence[0], sentence[-1] = sentence[0].capitalize(), sentence[-1] + "."
        words += sentence
        n += length
    size = draw(st.integers(2, 20))
    overlap = draw(st.sampled_from([0, *range(MIN_OVERLAP_WORDS, size)]))
    return words, size, size - overlap


@settings(max_examples=200, deadline=None)
@given(_files(), st.randoms(use_true_random=False))
def test_a_file_read_window_by_window_gives_the_sentences_of_the_file(file, rnd):
    words, size, stride = file
    windows = _windows(words, size, stride)
    order = list(windows)
    rnd.shuffle(order)  # the loop reads them in any order, over several hops
    facts = [f for hop, w in enumerate(order) for f in facts_from_passages([w], hop=hop, sub_query=f"q{hop}")]
    after = {a.id: b.id for a, b in zip(windows, windows[1:])}
    joined = join_records(facts, after)
    assert [f.sentence for f in joined] == list(split_sentences(" ".join(words), abbreviations=True))
    assert {f.passage_id for f in joined} == {windows[0].id}  # cited by the file's first window
    assert {(f.hop, f.sub_query) for f in joined} == {(facts[0].hop, facts[0].sub_query)}  # the first read
    assert [f.sentence_index for f in joined] == list(range(len(joined)))


def test_records_not_read_one_after_the_other_keep_their_own_facts():
    a = Passage("a#0", "a.txt", ("Ada Lovelace was a mathematician", ))
    b = Passage("a#1", "a.txt", ("mathematician and writer.", "She wrote notes."))
    c = Passage("c#0", "c.txt", ("Charles Babbage built engines.",))
    facts = facts_from_passages([c, a, b])
    assert join_records(facts, {}) == facts
    assert join_records(facts, {"a#1": "a#9"}) == facts  # a successor that was not read
    joined = join_records(facts, {"a#0": "a#1"})
    assert [f.sentence for f in joined] == ["Charles Babbage built engines.",
                                            "Ada Lovelace was a mathematician mathematician and writer.",
                                            "She wrote notes."]  # one repeated word is no overlap
    assert joined[0] == facts[0] and [f.rank for f in joined[1:]] == [1, 1]


def test_a_subject_labels_the_lines_of_an_id_titled_file_that_do_not_name_it():
    window = Passage("c.txt#1", "c.txt", ("He won the 1921 Nobel Prize.", "Albert Einstein moved to Princeton."))
    titled = Passage("Einstein#1", "Albert Einstein", ("He won the 1921 Nobel Prize.",))
    facts = facts_from_passages([window]) + facts_from_passages([titled])
    assert [f.line for f in facts] == ["He won the 1921 Nobel Prize.", "Albert Einstein moved to Princeton.",
                                       "Albert Einstein | He won the 1921 Nobel Prize."]
    labelled = with_subjects(facts, {"c.txt": "Albert Einstein", "Albert Einstein": "Somebody Else"})
    assert [f.line for f in labelled] == ["Albert Einstein | He won the 1921 Nobel Prize.",
                                          "Albert Einstein moved to Princeton.",  # names it in its first words
                                          "Albert Einstein | He won the 1921 Nobel Prize."]  # a real title stays
    assert labelled == facts and labelled[2] is facts[2]  # the same facts: only the line changes
    assert with_subjects(facts, {}) == facts and [f.line for f in with_subjects(facts, {"c.txt": ""})][0] == facts[0].line
    with pytest.raises(ValueError, match="subject"):
        Fact("p", "t.txt", "x", 0, id_title=True, subject=3)


def test_a_document_with_front_matter_tells_the_reader_its_source_and_date():
    from rootweaver_innovations.documents.corpus import DocumentMeta, Source
    from rootweaver_innovations.records import source_tag

    meta = DocumentMeta(title="Sellers sound off", source="CNBC", published="2023-10-06T21:31:00+00:00")
    fact = Fact("a.md#0", "Sellers sound off", "Zapolsky said so.", 0, source=Source("a.md", (), 0, None, None, meta))
    assert fact.line == "Sellers sound off [CNBC, 2023-10-06] | Zapolsky said so."
    assert source_tag(DocumentMeta(source="The Verge")) == " [The Verge]"
    assert source_tag(DocumentMeta(author="Ann")) == "" and source_tag(None) == ""
    record = Fact("r1", "Sellers", "Zapolsky said so.", 0, meta=DocumentMeta(published="2023-10-06"))
    assert record.line == "Sellers [2023-10-06] | Zapolsky said so." and record.source is None
