"""Bounded-memory packing: the sparse, on-demand TF-IDF similarity packs
exactly as the dense matrix it replaced; the block-wise objective path equals the held
matrix path; the compactors' input cap refuses oversized contexts with a one-line error.

Peak memory itself is measured by ``benchmarks/bench_memory.py`` (docs/results.md), not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.line import CompactionRequest
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.compaction.packing import Budget, Similarity, pack, tfidf_similarity
from rootweaver_innovations.compaction.packing import objective as objective_module
from rootweaver_innovations.compaction.packing import policies as policies_module
from rootweaver_innovations.compaction.packing import similarity as similarity_module
from rootweaver_innovations.text import bm25_tokenize
from rootweaver_innovations.records import Fact
from rootweaver_innovations.compaction.strategies import InputCap, InputTooLargeError, make_compactor, strategy_names

from strategies import budgets, candidate_lists, compaction_requests, queries, words

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
POLICIES = ("naive", "focused", "mmr", "submodular", "evidence")


def dense_reference(texts: list[str]) -> np.ndarray:
    """The dense TF-IDF cosine a dense packer would use (n x vocabulary counts), the reference."""
    docs = [bm25_tokenize(t) for t in texts]
    vocab: dict[str, int] = {}
    for doc in docs:
        for tok in doc:
            vocab.setdefault(tok, len(vocab))
    counts = np.zeros((len(docs), len(vocab)))
    for i, doc in enumerate(docs):
        for tok in doc:
            counts[i, vocab[tok]] += 1.0
    idf = np.log((1.0 + len(docs)) / (1.0 + (counts > 0).sum(axis=0))) + 1.0
    vectors = counts * idf
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors / np.where(norms > 0, norms, 1.0)[:, None]
    sim = np.clip(unit @ unit.T, 0.0, 1.0)
    np.fill_diagonal(sim, norms > 0)
    return sim


def summary(res):
    """What a packing decided: text, picks with their step, omissions, fallback."""
    return (res.text, [(p.candidate.id, p.step) for p in res.packet], res.omissions, res.fallback)


@SETTINGS
@given(texts=st.lists(words, max_size=25))
def test_sparse_tfidf_equals_the_dense_computation(texts):
    got = tfidf_similarity(texts).matrix
    want = dense_reference(texts)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert np.array_equal(got, got.T)  # summed in token order from both sides: exactly symmetric
    assert np.array_equal(objective_module.quantise(got), objective_module.quantise(want))


@SETTINGS
@given(cands=candidate_lists(max_size=12), query=queries, budget=budgets, policy=st.sampled_from(POLICIES))
def test_packing_results_are_identical_to_the_dense_similarity(monkeypatch, cands, query, budget, policy):
    new = pack(policy, cands, query, budget)
    with monkeypatch.context() as m:
        m.setattr(policies_module, "tfidf_similarity", lambda texts: Similarity(dense_reference(texts), "tfidf"))
        old = pack(policy, cands, query, budget)
    assert summary(new) == summary(old)
    assert (new.objective is None) == (old.objective is None)  # only the policies that read F build it
    if new.objective is not None:
        assert new.objective == pytest.approx(old.objective, rel=1e-9, abs=1e-12)
    assert [p.gain for p in new.packet] == pytest.approx([p.gain for p in old.packet], rel=1e-9, abs=1e-12)


def _tiny_blocks(m, on_demand: bool) -> None:
    """Many tiny blocks per pass; ``on_demand``: columns recomputed instead of a held matrix."""
    if on_demand:
        m.setattr(objective_module, "DENSE_LIMIT", 0)
    m.setattr(similarity_module, "BLOCK_ENTRIES", 7)
    m.setattr(similarity_module, "BLOCK_PRODUCTS", 5)


@SETTINGS
@given(cands=candidate_lists(max_size=14), query=queries, budget=budgets,
       policy=st.sampled_from(("mmr", "submodular", "evidence")), on_demand=st.booleans())
def test_block_sizes_and_on_demand_columns_pack_exactly_as_one_block(monkeypatch, cands, query, budget, policy,
                                                                      on_demand):
    whole = pack(policy, cands, query, budget)
    with monkeypatch.context() as m:
        _tiny_blocks(m, on_demand)
        assert pack(policy, cands, query, budget) == whole


@SETTINGS
@given(request_=compaction_requests(), strategy=st.sampled_from(strategy_names()), on_demand=st.booleans())
def test_the_compactors_are_unchanged_by_block_sizes_and_on_demand_columns(monkeypatch, request_, strategy, on_demand):
    compact = make_compactor(strategy)
    whole = compact(request_)
    with monkeypatch.context() as m:
        _tiny_blocks(m, on_demand)
        assert compact(request_) == whole


def test_subset_of_a_tfidf_similarity_keeps_its_cells():
    texts = ["red apple pie", "red apple", "blue sky", "apple sky", "pie"]
    sim = tfidf_similarity(texts)
    idx = [3, 0, 4]
    assert np.array_equal(sim.subset(idx).matrix, sim.matrix[np.ix_(idx, idx)])


def test_a_large_tfidf_similarity_holds_no_matrix_and_reads_in_bounded_blocks():
    texts = [f"shared word{i} word{i % 7} common" for i in range(3000)]
    sim = tfidf_similarity(texts)
    assert sim.n == 3000
    assert all(getattr(sim._rows, f).size <= 3000 * 8 for f in ("terms", "weights", "post_rows"))
    spans = list(sim.column_blocks(np.arange(3000)))
    assert all(block.size <= similarity_module.BLOCK_ENTRIES for _, block in spans)
    assert sum(block.shape[1] for _, block in spans) == 3000
    col = sim.columns([5])[:, 0]
    assert col[5] == 1.0 and np.all(col > 0)  # every text shares "shared" and "common"


def _request(*sentences: str) -> CompactionRequest:
    facts = tuple(Fact(f"p{i}", "T", s, 0, 0, "q") for i, s in enumerate(sentences))
    return CompactionRequest("fact", SynthContext(facts, ("q",)), (), Budget.chars(100))


@pytest.mark.parametrize("strategy", strategy_names())
def test_the_input_cap_refuses_oversized_contexts_with_one_line(strategy):
    compact = make_compactor(strategy, max_input_chars=50, max_input_lines=3)
    assert compact(_request("one fact", "another")).text  # "From query: q\nT | one fact\nT | another": 35 chars
    with pytest.raises(InputTooLargeError, match=r"^context of 53 chars is over .*compaction\.max_input_chars = 50\)$"):
        compact(_request("x" * 35))
    with pytest.raises(InputTooLargeError, match=r"^context of 4 lines is over .*compaction\.max_input_lines = 3\)$"):
        compact(_request("a", "b", "c"))


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_the_input_cap_validates_its_knobs(bad):
    with pytest.raises(ValueError, match="max_input_chars must be a positive int"):
        InputCap(make_compactor("line").compactor, max_input_chars=bad)


def test_the_capability_applies_the_configured_input_cap():
    from rootweaver_capabilities.config import MultiHopConfig
    from rootweaver_capabilities.capability import MultiHopCapability, RequestContext

    question = "Between Harvey Pekar and Denise Levertov who was born earlier?"
    capped = MultiHopCapability(MultiHopConfig.from_mapping(
        {"compaction": {"enabled": True, "strategy": "submodular", "max_input_chars": 100}}))
    with pytest.raises(InputTooLargeError, match=r"compaction\.max_input_chars = 100\)$"):
        capped.execute(RequestContext(query=question))
    roomy = MultiHopCapability(MultiHopConfig.from_mapping({"compaction": {"enabled": True, "strategy": "submodular"}}))
    ctx = RequestContext(query=question)
    roomy.execute(ctx)
    assert ctx.metadata["multi_hop"]["strategy"] == "submodular"
