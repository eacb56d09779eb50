"""The title index: array form equals its specification, in memory and saved, for any batching."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.assembly import build_retriever
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_innovations.retrieval import titles as titles_module
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.documents.demo import DEMO_CORPUS
from rootweaver_innovations.retrieval.index import IndexFormatError, build_index, open_index
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.conventions.registry import get_conventions
from rootweaver_innovations.retrieval.titles import (
    TITLE_FILES,
    TitleArrays,
    TitleBatch,
    TitleHashCollision,
    TitleIndex,
    file_subjects,
    id_titled,
    last_file_subject,
    passage_keys,
    title_keys,
)

NAMES = ("Ernst", "Mach", "Prague", "Charles", "University", "The", "Who", "of", "Río", "1923", "(film)", ",")
titles = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map(" ".join)
texts = st.lists(st.sampled_from((*NAMES, "ernst", "mach", "taught", "in", ".")), max_size=25).map(" ".join)

WIKIPEDIA = get_conventions("wikipedia")


def _passages(names: list[str]) -> list[Passage]:
    return [Passage(f"p{i}", name, (f"{name} text.",)) for i, name in enumerate(names)]


def _arrays_equal(a: TitleArrays, b: TitleArrays) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a._arrays(), b._arrays()))


@given(st.lists(titles, min_size=1, max_size=30), st.lists(texts, max_size=5))
@settings(max_examples=60, deadline=None)
def test_pages_are_every_passage_with_the_key_and_mentions_are_keys(names, samples):
    passages = _passages(names)
    index = TitleIndex(passages)
    keys = {k for p in passages for k in title_keys(p.title)}
    assert len(index) == len(keys)
    for key in keys:  # the specification: every passage holding the key, in corpus order
        assert [p.id for p in index.pages(key)] == [p.id for p in passages if key in title_keys(p.title)]
    for text in samples:
        for proper in (True, False):
            found = index.mentions(text, proper_only=proper)
            assert all(m.key in keys and " ".join(m.surface.lower().split()) for m in found)
            assert len({m.key for m in found}) == len(found)


@given(st.lists(titles, min_size=1, max_size=30), st.lists(st.integers(1, 5), min_size=1, max_size=10))
@settings(max_examples=60, deadline=None)
def test_merged_batches_do_not_depend_on_how_the_passages_were_batched(names, cuts):
    keys = [title_keys(n) for n in names]
    whole = TitleArrays.merge([TitleBatch.from_keys(keys, 0)])
    batches, start = [], 0
    for size in cuts * len(names):
        if start >= len(names):
            break
        batches.append(TitleBatch.from_keys(keys[start : start + size], start))
        start += size
    assert _arrays_equal(TitleArrays.merge(batches), whole)


def test_an_empty_corpus_and_titles_of_stop_words_have_no_keys():
    index = TitleIndex(_passages(["doc-1.txt", "It", "The Who"]))
    assert len(index) == 1 and [p.id for p in index.pages("doc 1 txt")] == ["p0"]
    assert index.mentions("The Who said it: Doc 1 is here.") == []
    assert TitleIndex([]).mentions("Ernst Mach") == [] and TitleIndex([]).pages("ernst mach") == ()


@given(titles, st.lists(st.sampled_from(("Ernst Mach (born 1838) taught.", "Prague is a city.", "it rained.")),
                        min_size=1, max_size=3))
@settings(max_examples=80, deadline=None)
def test_a_record_keeps_its_title_keys_first_and_only_an_id_title_gains_names(title, sentences):
    p = Passage("p0", title, tuple(sentences))
    keys = passage_keys(p, WIKIPEDIA)
    assert keys[: len(title_keys(title))] == title_keys(title) and len(set(keys)) == len(keys)
    if " " in title.strip() or not any(c.isdigit() or c in "._-/:#" for c in title):
        assert keys == title_keys(title)  # a real title (several words, or no digit or separator)


def test_a_person_titled_by_an_id_is_also_indexed_under_the_nicknames_of_the_first_name():
    mick = Passage("p1", "doc-p1", ("Michael Kevin Taylor (born 17 January 1949) is an English musician.",))
    titled = Passage("p2", "Michael Kevin Taylor", ("Michael Kevin Taylor (born 17 January 1949) is a musician.",))
    keys = passage_keys(mick, WIKIPEDIA)
    assert keys[:4] == ("doc p1", "michael taylor", "michael kevin taylor", "michael k taylor")
    assert {"mick taylor", "mike taylor"} <= set(keys) and not any(k.startswith("bill") for k in keys)
    assert [p.id for p in TitleIndex([mick, titled]).pages("mick taylor")] == ["p1"]  # a real title is kept alone
    assert passage_keys(Passage("p3", "doc-p3", ("Life University is a private university.",)), WIKIPEDIA) == (
        "doc p3", "life university")  # no nickname of "Life" starts with an l


def test_an_id_title_the_text_does_not_repeat_is_indexed_under_the_lead_subject_names():
    from rootweaver_innovations.documents.corpus import Source

    passages = [Passage("p1", "doc-p1", ("Ernst Waldfried Josef Mach (18 February 1838 - 1916) taught in Prague.",)),
                Passage("p2", "doc-p2", ("Prague is a city.",)),
                Passage("p3", "Vienna", ("Prague is a city too.",)),  # a real title: never renamed
                Passage("p4", "notes.txt", ("These notes are Prague's.",)),  # the text repeats a title word
                Passage("p5", "doc-p5", ("Prague is old.",), Source("a.txt", (), 0, None, None))]  # a chunk
    index = TitleIndex(passages)
    assert passage_keys(passages[0], WIKIPEDIA) == ("doc p1", "ernst mach", "ernst waldfried josef mach", "ernst w j mach")
    assert [p.id for p in index.pages("prague")] == ["p2"]
    assert [m.key for m in index.mentions("Ernst Mach taught in Prague.")] == ["ernst mach", "prague"]
    assert [p.id for p in index.pages("vienna")] == ["p3"] and passage_keys(passages[3], WIKIPEDIA) == ("notes txt",)


def test_an_id_title_is_left_out_of_the_fact_line_and_its_records_are_one_document():
    from rootweaver_innovations.documents.corpus import Source
    from rootweaver_innovations.compaction.packing import fact_candidates
    from rootweaver_innovations.records import facts_from_passages

    passages = [Passage("w0", "doc-9f.txt", ("Ibrium was the vizier of Ebla.", "He served")),
                Passage("w1", "doc-9f.txt", ("served Ishar Damu for 17 years.",)),
                Passage("p2", "AC/DC", ("AC/DC are a rock band.",)),  # an id-shaped title its text says
                Passage("p3", "", ("An untitled record.",)),
                Passage("p4", "", ("Another untitled record.",)),
                Passage("c5", "doc-7", ("A chunk.",), Source("a.txt", (), 0, None, None))]
    assert [id_titled(p) for p in passages] == [True, True, False, True, True, False]
    facts = facts_from_passages(passages)
    assert [f.line for f in facts] == ["Ibrium was the vizier of Ebla.", "He served", "served Ishar Damu for 17 years.",
                                       "AC/DC | AC/DC are a rock band.", "An untitled record.",
                                       "Another untitled record.", "doc-7 | A chunk."]
    docs = [c.doc_id for c in fact_candidates("Who was the vizier of Ebla?", facts)]
    assert docs[0] == docs[1] == docs[2] and len(set(docs[2:])) == 5  # one file's records; "" groups nothing


def test_two_keys_with_one_hash_are_refused_and_a_text_hash_never_matches_a_wrong_key(monkeypatch):
    monkeypatch.setattr(titles_module, "_hash", lambda text: 7)  # the fault no real 64-bit hash shows here
    with pytest.raises(TitleHashCollision, match="title keys 'ernst mach' and 'charles university' share a 64-bit hash"):
        TitleArrays.merge([TitleBatch.from_keys([("ernst mach",), ("charles university",)], 0)])
    index = TitleIndex(_passages(["Ernst Mach"]))
    assert [m.key for m in index.mentions("Charles University met Ernst Mach")] == ["ernst mach"]
    assert index.pages("charles university") == ()


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    out = tmp_path_factory.mktemp("titles") / "demo"
    build_index(DEMO_CORPUS, out, chunk_size=97)
    return out


def test_the_saved_title_index_is_the_in_memory_one(demo_index, demo_passages):
    saved, memory = open_index(demo_index).titles, TitleIndex(demo_passages)
    assert _arrays_equal(saved._a, memory._a)
    for p in demo_passages[:200]:
        assert saved.mentions(p.text) == memory.mentions(p.text)
        for m in saved.mentions(p.text):
            assert saved.pages(m.key) == memory.pages(m.key)


def test_an_index_without_titles_still_answers_the_same_and_warns(demo_index, tmp_path, golden_questions, caplog):
    old = tmp_path / "old"
    shutil.copytree(demo_index, old)
    raw = json.loads((old / "manifest.json").read_text())
    del raw["components"]["titles"]
    for rel in TITLE_FILES:
        del raw["files"][rel]
    (old / "manifest.json").write_text(json.dumps(raw))
    shutil.rmtree(old / "titles")
    assert open_index(old).titles is None
    base = MultiHopConfig().retriever
    with caplog.at_level(logging.WARNING, logger="rootweaver.index"):
        build_retriever(dataclasses.replace(base, index=str(demo_index)))
        assert not caplog.records
        build_retriever(dataclasses.replace(base, index=str(old)))
    assert "has no title index" in caplog.text and "rootweaver index build" in caplog.text
    a, b = MultiHopRAG(open_index(old).retriever()), MultiHopRAG(open_index(demo_index).retriever())
    for q in golden_questions[:20]:
        assert a.multi_hop_search(q.question).trajectory() == b.multi_hop_search(q.question).trajectory()


@pytest.mark.parametrize("rel, fill, msg", [
    ("titles/page_rows.npy", 10_000, "passage rows outside"),
    ("titles/key_hash.npy", 0, "key hashes not strictly ascending"),
])
def test_a_damaged_title_file_is_refused_naming_it(demo_index, tmp_path, rel, fill, msg):
    copy = tmp_path / "copy"
    shutil.copytree(demo_index, copy)
    arr = np.load(copy / rel)
    arr[:2] = fill
    np.save(copy / rel, arr)
    with pytest.raises(IndexFormatError, match=f"{rel}: {msg}"):
        open_index(copy)


def test_a_retriever_without_titles_gets_one_built_by_the_loop(demo_passages):
    rag = MultiHopRAG(BM25Retriever(demo_passages))
    assert isinstance(rag.title_index, TitleIndex) and len(rag.title_index) > 0


@given(st.lists(st.tuples(st.sampled_from(("doc-1.txt", "doc-2.txt", "Prague", "")),
                          st.sampled_from(("Ernst Mach (born 1838) taught.", "Prague is a city.", "it rained.",
                                           "Doc 1 is a txt file."))),
                max_size=12), st.integers(0, 12))
@settings(max_examples=60, deadline=None)
def test_file_subjects_are_the_same_when_the_corpus_is_read_in_two_parts(rows, cut):
    passages = [Passage(f"p{i}", t, (s,)) for i, (t, s) in enumerate(rows)]
    whole = list(file_subjects(passages, WIKIPEDIA))
    head = list(file_subjects(passages[:cut], WIKIPEDIA))
    carry = last_file_subject(reversed(passages[:cut]), WIKIPEDIA)
    assert carry == (head[-1] if head else ("", ""))
    assert head + list(file_subjects(passages[cut:], WIKIPEDIA, carry)) == whole
    assert last_file_subject(reversed(passages[cut:]), WIKIPEDIA, carry) == (whole[-1] if whole else ("", ""))
    for p, (title, subject) in zip(passages, whole):
        assert title in ("", p.title) and (title or not subject)


def test_a_run_of_windows_takes_the_subject_of_its_first_and_a_titled_page_ends_it():
    rows = [("doc-1.txt", "Ernst Mach (born 1838) was a physicist."), ("doc-1.txt", "He taught in Prague."),
            ("Prague", "Prague is a city."), ("doc-1.txt", "it rained."), ("doc-2.txt", "Prague is a city.")]
    passages = [Passage(f"p{i}", t, (s,)) for i, (t, s) in enumerate(rows)]
    assert [s for _t, s in file_subjects(passages, WIKIPEDIA)] == ["Ernst Mach", "Ernst Mach", "", "", "Prague"]
