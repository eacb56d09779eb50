"""Two-stage retrieval: BM25 pool, ordering, depth-limited second stage (fake scorers, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from rootweaver_innovations.documents.corpus import Passage
from evals.rerank import (
    BiEncoderScorer,
    BM25TermVectors,
    CrossEncoderScorer,
    TwoStageRetriever,
    passage_text,
)
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

WORDS = "river bridge castle mountain harbour forest valley tower island canal".split()


def _passages() -> list[Passage]:
    # d0..d11: "river" i+1 times and one other word; f0..f13: filler without "river" (so
    # "river" is in fewer than half the passages and keeps a positive BM25 idf)
    rivers = [Passage(f"d{i}", f"Title {i}", (f"{' '.join(['river'] * (i + 1))} {WORDS[i % 10]}.",)) for i in range(12)]
    return rivers + [Passage(f"f{i}", f"Filler {i}", ("quiet meadow grass.",)) for i in range(14)]


class HashEmbedder:
    """Deterministic bag-of-words vectors (one dimension per known word), L2-normalised."""

    name = "hash"

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), len(WORDS) + 1), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace(".", " ").split():
                out[i, WORDS.index(w) if w in WORDS else len(WORDS)] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1)


class RecordingScorer:
    """Scores a passage by the integer in its id (d7 -> 7) and records what it was asked."""

    def __init__(self):
        self.seen: list[list[str]] = []

    def score(self, query, passages):
        self.seen.append([p.id for p in passages])
        return np.array([float(p.id[1:]) for p in passages])


@pytest.fixture(scope="module")
def bm25():
    return BM25Retriever(_passages())


def test_only_the_first_depth_candidates_are_rescored(bm25):
    scorer = RecordingScorer()
    tsr = TwoStageRetriever(bm25, scorer, depth=4, pool_size=10)
    res = tsr.run("river", k=2)
    pool_ids = [c.passage.id for c in res.candidates]
    assert len(pool_ids) == 10
    assert scorer.seen == [pool_ids[:4]]  # first-stage order, first D
    assert res.depth == 4 and len(res.rerank_scores) == 4
    # best two of the head by the recording score, with those scores and ranks 0, 1
    expected = sorted(pool_ids[:4], key=lambda pid: -int(pid[1:]))[:2]
    assert [s.passage.id for s in res.top] == expected
    assert [s.rank for s in res.top] == [0, 1]
    assert [s.score for s in res.top] == [float(pid[1:]) for pid in expected]


@pytest.mark.parametrize("ordering", ["first_stage", "frontload", "mmr"])
def test_orderings_permute_the_pool_and_full_depth_ignores_order(bm25, ordering):
    tsr = TwoStageRetriever(bm25, RecordingScorer(), depth=10, pool_size=10, ordering=ordering)
    cands = tsr.candidates("river castle")
    order = tsr.order("river castle", cands)
    assert sorted(order) == list(range(len(cands)))
    # at D = pool size the second stage sees the same set whatever the order
    base = TwoStageRetriever(bm25, RecordingScorer(), depth=10, pool_size=10).run("river castle", k=3)
    got = tsr.rerank("river castle", cands, order, 10, 3)
    assert [s.passage.id for s in got.top] == [s.passage.id for s in base.top]


def test_search_meets_the_retriever_protocol(bm25):
    tsr = TwoStageRetriever(bm25, RecordingScorer(), depth=3, pool_size=8, ordering="frontload")
    hits = tsr.search("river tower", k=5)
    assert len(hits) == 3  # at most min(k, depth)
    assert [h.rank for h in hits] == [0, 1, 2]
    with pytest.raises(ValueError, match="k must be"):
        tsr.search("river", 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(ordering="random"), "unknown ordering"), (dict(depth=0), "depth"), (dict(dim_background=-1.0), "dim_background")],
)
def test_bad_configuration_raises(bm25, kwargs, message):
    with pytest.raises(ValueError, match=message):
        TwoStageRetriever(bm25, RecordingScorer(), **kwargs)


def test_bi_encoder_precomputed_equals_on_the_fly():
    passages = _passages()[:5]
    emb = HashEmbedder()
    vecs = emb.encode([passage_text(p) for p in passages])
    warm = BiEncoderScorer(emb, [p.id for p in passages], vecs)
    cold = BiEncoderScorer(emb)
    emb.calls.clear()
    got_warm = warm.score("river castle", passages)
    assert emb.calls == [["river castle"]]  # only the query was encoded
    got_cold = cold.score("river castle", passages)
    np.testing.assert_allclose(got_warm, got_cold, rtol=1e-6)
    # passage 2 ("river river river castle") shares the most with the query
    assert int(np.argmax(got_warm)) == 2
    with pytest.raises(ValueError, match="2 embeddings for 1 ids"):
        BiEncoderScorer(emb, ["a"], vecs[:2])


def test_cross_encoder_wrapper_passes_pairs():
    class FakeCrossEncoder:
        def predict(self, pairs, batch_size=32):
            self.pairs = pairs
            return [len(p[1]) for p in pairs]

    model = FakeCrossEncoder()
    passages = _passages()[:3]
    scores = CrossEncoderScorer(model).score("q", passages)
    assert model.pairs == [("q", passage_text(p)) for p in passages]
    assert scores.tolist() == [float(len(passage_text(p))) for p in passages]
    with pytest.raises(ValueError, match="predict"):
        CrossEncoderScorer(object())


def test_term_vectors_are_nonnegative_and_query_weights_sit_on_query_terms():
    passages = _passages()
    tv = BM25TermVectors(passages)
    x, u = tv.matrix("castle river unknownword", passages[:4])
    assert x.shape[0] == 4 and (x >= 0).all() and (u >= 0).all()
    # vocabulary order: query terms first (castle, river), then passage terms
    assert u[0] == pytest.approx(tv.idf["castle"]) and u[1] == pytest.approx(tv.idf["river"])
    assert (u[2:] == 0).all()
    # "river" occurs more often in passage 3 than in passage 0: larger weight (tf saturation)
    assert x[3, 1] > x[0, 1] > 0
    with pytest.raises(ValueError, match="not in the term-vector corpus"):
        tv.matrix("river", [Passage("zz", "t", ("x",))])
