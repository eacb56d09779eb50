"""The eval layouts: windows cover their paragraphs, and "found the gold" means what it says."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.datasets import build_open_pool
from evals.layouts import LAYOUTS, WINDOW_STRIDE, WINDOW_WORDS, lay_out, window_records
from evals.qa_rows import load_qa_rows
from rootweaver_innovations.documents.corpus import Passage

WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "Ebla", "vizier", "1838", "."]),
                 min_size=1, max_size=200)


@given(WORDS)
@settings(max_examples=60, deadline=None)
def test_windows_cover_every_word_in_order_and_overlap_by_ten(words):
    p = Passage("p1", "Title", (" ".join(words),))
    windows = [r for _, r in window_records([p])]
    assert all(len(r["text"].split()) <= WINDOW_WORDS for r in windows)
    rebuilt = windows[0]["text"].split()
    for r in windows[1:]:
        assert r["text"].split()[: WINDOW_WORDS - WINDOW_STRIDE] == rebuilt[-(WINDOW_WORDS - WINDOW_STRIDE):]
        rebuilt += r["text"].split()[WINDOW_WORDS - WINDOW_STRIDE:]
    assert rebuilt == words
    assert len({r["title"] for r in windows}) == 1 and windows[0]["title"].startswith("doc-")


@pytest.fixture(scope="module")
def hotpot(bundled_data):
    rows = load_qa_rows(bundled_data / "hotpotqa.jsonl.gz", limit=8)
    return rows, build_open_pool(rows)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reading_every_passage_finds_the_gold_and_reading_none_does_not(hotpot, layout):
    rows, pool = hotpot
    laid = lay_out(rows, pool, layout)
    everything = [p.id for p in laid.passages]
    for i in range(len(rows)):
        assert laid.found(i, everything) == 1.0 and laid.found(i, []) == 0.0
        gold_only = [p.id for p in laid.passages if laid.paragraph[p.id] in laid.gold[i]]
        assert laid.found(i, gold_only) == 1.0
    assert set(laid.paragraph.values()) == {p.id for p in pool.passages}


def test_a_chunk_of_each_gold_paragraph_is_not_enough_when_a_supporting_sentence_is_elsewhere(hotpot):
    rows, pool = hotpot
    laid = lay_out(rows, pool, "chunks")
    misses = 0
    for i in range(len(rows)):
        first = {}  # the first window of each gold paragraph only
        for p in laid.passages:
            first.setdefault(laid.paragraph[p.id], p.id)
        ids = [first[g] for g in laid.gold[i]]
        assert laid.paragraphs(ids) == laid.gold[i]
        misses += laid.found(i, ids) == 0.0
    assert misses > 0  # some supporting sentence lies past a paragraph's first 40 words


def test_an_unknown_layout_is_refused(hotpot):
    with pytest.raises(ValueError, match="layout must be one of"):
        lay_out(*hotpot, "pages")
