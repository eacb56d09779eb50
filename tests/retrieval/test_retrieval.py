"""BM25 backends, tokenisation, fusion; dense retrieval on the real MiniLM model (slow tier)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.retrieval.bm25_matrix import (IDFS, Vocabulary, build_matrix, count_chunk, merge_terms,
                                                          save_columns, update_postings, write_bm25)
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, rrf_fuse, top_k_indices
from rootweaver_innovations.text import bm25_tokenize


def test_tokenize_lowercases_drops_stop_words_and_punctuation():
    assert bm25_tokenize("The Réserve, of Lomako-Yokokala!") == ["réserve", "lomako", "yokokala"]


def test_top_k_ties_break_by_index():
    assert top_k_indices(np.array([1.0, 2.0, 2.0, 0.5]), 3).tolist() == [1, 2, 0]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([-1.5, 0.0, 0.0, 0.0, 0.5, 1.0, 2.0, 2.0]), min_size=1, max_size=40),
       st.integers(0, 50))
def test_top_k_is_the_head_of_the_full_stable_sort(scores, k):
    s = np.array(scores)
    assert top_k_indices(s, k).tolist() == np.lexsort((np.arange(s.size), -s))[:k].tolist()


def test_rrf_fuse_worked_example():
    # a: 1/61 + 1/62; b: 1/62 + 1/61; c: 1/63 -> a and b tie, a seen first
    fused = rrf_fuse([["a", "b", "c"], ["b", "a"]])
    assert [pid for pid, _ in fused] == ["a", "b", "c"]
    assert fused[2][1] == pytest.approx(1 / 63)


def test_unknown_backend_and_bad_k():
    p = [Passage("1", "T", ("text",))]
    with pytest.raises(ValueError, match="backend"):
        BM25Retriever(p, backend="nope")
    with pytest.raises(ValueError, match="k must be"):
        BM25Retriever(p).search("text", 0)
    with pytest.raises(ValueError, match="empty"):
        BM25Retriever([])


def test_query_with_no_known_terms_returns_nothing(demo_retriever):
    assert demo_retriever.search("zzzqqq the of", 5) == []


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_a_query_of_terms_common_to_most_passages_still_ranks(backend):
    # "acme" and "launch" occur in 3 of 4 passages: Robertson idf <= 0 scores every passage 0
    p = [
        Passage("1", "Acme", ("Acme announced a rocket launch.", "Acme launch details followed.")),
        Passage("2", "Acme news", ("Acme opened a plant.", "The launch was delayed.")),
        Passage("3", "Launch", ("Acme moved the launch date.",)),
        Passage("4", "Weather", ("Rain in the north.",)),
    ]
    hits = BM25Retriever(p, backend=backend).search("When did Acme launch?", 4)
    assert [h.passage.id for h in hits][:1] == ["1"]  # both terms, twice each
    assert {h.passage.id for h in hits} == {"1", "2", "3"} and all(h.score > 0 for h in hits)


@pytest.mark.slow
def test_backends_rank_alike_on_demo_corpus(demo_passages, golden_questions):
    """Comparison tier: bm25s (robertson idf) against the rank_bm25 reference."""
    fast = BM25Retriever(demo_passages, backend="bm25s")
    ref = BM25Retriever(demo_passages, backend="rank_bm25")
    overlaps, top1 = [], 0
    for q in golden_questions:
        a = [h.passage.id for h in fast.search(q.question, 10)]
        b = [h.passage.id for h in ref.search(q.question, 10)]
        overlaps.append(len(set(a) & set(b)) / 10)
        top1 += a[0] == b[0]
        corr = np.corrcoef(fast.scores(q.question), ref.scores(q.question))[0, 1]
        assert corr > 0.99
    assert np.mean(overlaps) >= 0.95 and top1 >= 0.95 * len(golden_questions)


@pytest.mark.slow
def test_dense_and_hybrid_retrieval_find_gold(demo_passages, golden_questions):
    pytest.importorskip("sentence_transformers")
    from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder
    from rootweaver_innovations.retrieval.retrievers import DenseRetriever, HybridRetriever

    emb = MiniLMEmbedder()
    small = [p for p in demo_passages][:200]
    titles = {p.title for p in small}
    qs = [q for q in golden_questions if set(q.supporting_titles) <= titles][:10]
    dense = DenseRetriever(small, emb)
    hybrid = HybridRetriever([BM25Retriever(small), dense])
    for retriever in (dense, hybrid):
        hits = sum(
            any(h.passage.title in q.supporting_titles for h in retriever.search(q.question, 5)) for q in qs
        )
        assert hits >= 0.8 * len(qs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=12), min_size=1, max_size=25),
       st.lists(st.sampled_from("abcdefghz"), max_size=10), st.lists(st.integers(0, 24), max_size=30))
def test_row_scores_are_the_full_scores_at_those_rows_bit_for_bit(docs, query, rows):
    # repeats in the query count again; rows repeat and come in any order; "z" is unknown
    matrix = build_matrix(docs, 1.5, 0.75)
    ids = [matrix.vocab[t] for t in query if t in matrix.vocab]
    rows = [r % len(docs) for r in rows]
    for idf in IDFS:
        assert matrix.row_scores(ids, rows, idf).tobytes() == matrix.scores(ids, idf)[rows].tobytes()


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_retriever_row_scores_equal_its_scores_with_the_lucene_fallback(backend, demo_passages):
    common = [Passage(str(i), "Acme", ("Acme launch.",) if i % 4 else ("Rain.",)) for i in range(8)]
    for passages, query in [(demo_passages, "Who was the vizier of Ebla after Ibrium"),
                            (common, "acme launch"),  # Robertson idf 0 for both terms: Lucene
                            (demo_passages, "zzzqqq")]:
        r = BM25Retriever(passages, backend=backend)
        rows = [len(passages) - 1, 0, 3, 3]
        assert r.row_scores(query, rows) == r.scores(query)[rows].tolist()
    assert any(BM25Retriever(common, backend=backend).row_scores("acme launch", range(8)))


@st.composite
def _column_edit(draw):
    """Old CSC postings over ``n`` passages, which passages stay (renumbered, kept in order or
    not), the merged term list and new postings for the new passages."""
    n = draw(st.integers(1, 8))
    old_terms = sorted(draw(st.sets(st.sampled_from("bdfhjlnp"), max_size=6)))
    cols = [sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))) for _ in old_terms]
    stay = [p for p in range(n) if draw(st.booleans())]
    new_count = draw(st.integers(0, 3))
    order = draw(st.permutations(range(len(stay) + new_count)))  # every row of the edited corpus
    new_row = np.full(n, -1, dtype=np.int64)
    new_row[stay] = order[:len(stay)]
    fresh = order[len(stay):]
    new_terms = sorted(draw(st.sets(st.sampled_from("acegikmo"), max_size=3)))
    terms = sorted(old_terms + new_terms)
    triples = set()
    for p in fresh if terms else ():
        triples |= {(draw(st.sampled_from(terms)), p) for _ in range(draw(st.integers(1, 3)))}
    return old_terms, new_terms, cols, new_row, sorted(triples), terms


@given(_column_edit())
@settings(max_examples=200, deadline=None)
def test_an_edit_of_the_columns_equals_sorting_every_posting_again(edit):
    old_terms, new_terms, cols, new_row, triples, terms = edit
    merged, old_place, new_place = merge_terms(old_terms, new_terms)
    assert merged == terms
    assert [merged[i] for i in old_place] == old_terms and [merged[i] for i in new_place] == new_terms
    indptr = np.cumsum([0, *map(len, cols)]).astype(np.int64)
    indices = np.array([p for c in cols for p in c], dtype=np.int32)
    tf = np.arange(1, len(indices) + 1, dtype=np.int32)  # a distinct count per posting, to follow it
    at = {t: i for i, t in enumerate(terms)}
    place = np.array([at[t] for t, _ in triples], dtype=np.int64)
    docs = np.array([p for _, p in triples], dtype=np.int64)
    new_tf = np.arange(1000, 1000 + len(triples), dtype=np.int32)
    df, got_docs, got_tf = update_postings(indptr, indices, tf, new_row, old_place, len(terms), place[::-1],
                                           docs[::-1], new_tf[::-1])
    want = sorted([(int(old_place[c]), int(new_row[p]), int(tf[indptr[c] + k]))
                   for c, col in enumerate(cols) for k, p in enumerate(col) if new_row[p] >= 0]
                  + [(int(t), int(d), int(f)) for t, d, f in zip(place, docs, new_tf)])
    assert [(d, f) for _, d, f in want] == list(zip(got_docs.tolist(), got_tf.tolist()))
    assert df.tolist() == [sum(1 for t, _, _ in want if t == i) for i in range(len(terms))]


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=9), min_size=1, max_size=12),
       st.integers(1, 9))
@settings(max_examples=60, deadline=None)
def test_columns_saved_in_blocks_are_the_bytes_a_build_writes(docs, block):
    vocab = Vocabulary()
    term, doc, tf, lengths = count_chunk(docs, vocab, 0)
    df = np.bincount(term, minlength=len(vocab))
    with tempfile.TemporaryDirectory() as tmp:
        built, saved = Path(tmp, "built"), Path(tmp, "saved")
        built.mkdir(), saved.mkdir()
        write_bm25(built, [(term, doc, tf)], df, lengths, list(vocab), 1.5, 0.75)
        indptr = np.load(built / "indptr.npy")
        save_columns(saved, sorted(vocab), np.diff(indptr), np.load(built / "indices.npy"), np.load(built / "tf.npy"),
                     lengths, 1.5, 0.75, block=block)
        for f in sorted(p.name for p in built.iterdir()):
            assert (built / f).read_bytes() == (saved / f).read_bytes(), f
