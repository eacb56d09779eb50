"""Sources and days a question names, and the hop that keeps to them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rootweaver_innovations.documents.corpus import DocumentMeta, Passage, Source
from rootweaver_innovations.loop.hops import REASON_FILL, REASON_FILL_NAMED
from rootweaver_innovations.loop.multihop import MultiHopRAG, _in_turn
from rootweaver_innovations.retrieval.facets import NO_DAY, Facets, day_number
from rootweaver_innovations.retrieval.index import build_index, open_index
from rootweaver_innovations.retrieval.retrievers import BM25Retriever


def _article(i: int, source: str | None, published: str | None, text: str) -> Passage:
    meta = DocumentMeta(title=f"Story {i}", source=source, published=published)
    return Passage(f"a{i}.md#0", f"Story {i}", (text,), source=Source(f"a{i}.md", meta=meta))


PASSAGES = [
    _article(0, "TechCrunch", "2023-10-02T13:11:07+00:00", "The exchange founder spoke about wealth and giving."),
    _article(1, "The Verge", "2023-10-31T19:52:07+00:00", "The exchange founder said growth was hard to manage."),
    _article(2, "The Roar | Sports Writers Blog", "2023-10-18", "The coach values past tournaments."),
    _article(3, "Fortune", None, "The exchange founder faces a trial over customer funds."),
    Passage("plain", "Plain", ("The exchange founder appears in a plain record.",)),
]


def test_facets_read_source_and_day_by_row():
    f = Facets.of_passages(PASSAGES)
    assert f.sources == ("TechCrunch", "The Verge", "The Roar | Sports Writers Blog", "Fortune")
    assert f.source_rows.tolist() == [0, 1, 2, 3, -1]
    assert f.days[0] == day_number("2023-10-02") and f.days[3] == NO_DAY and f.days[4] == NO_DAY
    assert bool(f) and not Facets.of_passages(PASSAGES[4:])


def test_a_question_names_sources_and_days_in_order():
    f = Facets.of_passages(PASSAGES)
    named = f.named("Did The Roar and TechCrunch (published on October 2, 2023) agree, as The Verge reported?")
    assert [(n.kind, n.label, n.rows.tolist()) for n in named] == [
        ("source", "The Roar", [2]), ("source", "TechCrunch", [0]), ("day", "October 2, 2023", [0]),
        ("source", "The Verge", [1])]
    assert f.named("He made a fortune on 2023-10-31.")[0].label == "2023-10-31"  # lowercase: not the source
    assert [n.label for n in f.named("The Roar | Sports Writers Blog says")] == ["The Roar | Sports Writers Blog"]
    assert f.named("On February 30, 2023 nothing happened.") == []


def test_a_day_named_beside_sources_keeps_to_those_sources_documents_of_that_day():
    same_day = [*PASSAGES, _article(5, "Fortune", "2023-10-02T08:00:00+00:00", "Another story that day.")]
    f = Facets.of_passages(same_day)
    named = f.named("Did TechCrunch report on October 2, 2023 that he gave?")
    assert [n.rows.tolist() for n in named] == [[0], [0]]  # TechCrunch, then its story of that day
    assert [n.rows.tolist() for n in f.named("What was reported on October 2, 2023?")] == [[0, 5]]
    # the named source has no document that day: the day keeps all of its documents
    assert [n.rows.tolist() for n in f.named("Did The Verge report it on October 2, 2023?")] == [[1], [0, 5]]


@given(st.text(max_size=80))
def test_named_rows_always_carry_what_was_named(question):
    f = Facets.of_passages(PASSAGES)
    for n in f.named(question):
        assert n.rows.size and n.label.lower() in question.lower()
        if n.kind == "source":
            assert all(n.label.lower() in f.sources[f.source_rows[r]].lower() for r in n.rows)


def test_the_loop_reads_the_named_source_and_says_why():
    loop = MultiHopRAG(BM25Retriever(PASSAGES), max_passages=3)
    hops = loop.multi_hop_search("What did Fortune report about the exchange founder?").hops
    named = [h for h in hops if h.reason == "question names the source 'Fortune'"]
    assert all(h.retrieved_ids == ("a3.md#0",) for h in named)
    assert any("a3.md#0" in h.retrieved_ids for h in hops)
    assert named or "a3.md#0" in hops[0].retrieved_ids  # read by hop 1, or by the hop that keeps to Fortune


def test_the_fill_takes_in_turn_from_the_named_source_and_from_all():
    others = [_article(10 + i, "Daily", None, f"The exchange founder spoke, exchange founder story {i}.") for i in range(8)]
    fortune = [_article(20 + i, "Fortune", None, f"Markets moved on day {i} for the founder.") for i in range(4)]
    loop = MultiHopRAG(BM25Retriever(others + fortune), max_passages=8)
    hops = loop.multi_hop_search("What did Fortune report about the exchange founder?").hops
    fill = [h for h in hops if h.reason == REASON_FILL_NAMED]
    assert len(fill) == 1 and REASON_FILL not in {h.reason for h in hops}
    from_fortune = [i.startswith("a2") for i in fill[0].retrieved_ids]
    assert from_fortune[0] and sum(from_fortune) >= len(from_fortune) // 2  # Fortune leads, then every other one
    plain = MultiHopRAG(BM25Retriever(others + fortune), max_passages=8).multi_hop_search(
        "What did they report about the exchange founder?").hops
    assert plain[-1].reason == REASON_FILL and not any(i.startswith("a2") for i in plain[-1].retrieved_ids)


@given(st.lists(st.integers(0, 9), max_size=8), st.lists(st.integers(0, 9), max_size=8), st.integers(0, 12))
def test_in_turn_takes_each_passage_once_best_first_from_either_list(first, second, k):
    def pairs(ids):
        return [(i, Passage(f"p{i}", "T", ("x",))) for i in dict.fromkeys(ids)]
    out = [row for row, _ in _in_turn(pairs(first), pairs(second), k)]
    union = list(dict.fromkeys(first + second))
    assert len(out) == len(set(out)) == min(k, len(union)) and set(out) <= set(union)
    for at, row in enumerate(out):  # each one the best not yet taken of one list or the other
        assert row in [next((i for i in ids if i not in out[:at]), None) for ids in (first, second)]
    if first and k:
        assert out[0] == first[0]


def test_a_retriever_ranks_only_within_the_rows_given():
    r = BM25Retriever(PASSAGES)
    rows, scores = r.top_rows("exchange founder", 5, np.array([1, 3]))
    assert set(rows) <= {1, 3} and len(rows) == 2 and scores == sorted(scores, reverse=True)
    assert r.top_rows("exchange founder", 5, np.array([2], dtype=np.intp)) == ([], [])
    with pytest.raises(ValueError, match="k must be >= 1"):
        r.top_rows("exchange founder", 0, np.array([1]))


def test_a_saved_index_of_articles_carries_its_facets(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"r{i}", "title": t, "text": x, "source": s, "published_at": d}) + "\n"
                              for i, (t, x, s, d) in enumerate([("A", "Rates rose again.", "CNBC", "2023-10-06"),
                                                                ("B", "Rates fell.", "Fortune", "2023-11-01")])),
                      encoding="utf-8")
    build_index(corpus, tmp_path / "idx")
    facets = open_index(tmp_path / "idx").retriever().facets
    assert facets.sources == ("CNBC", "Fortune") and [n.label for n in facets.named("Did CNBC say rates rose?")] == ["CNBC"]
