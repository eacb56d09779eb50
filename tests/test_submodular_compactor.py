"""SubmodularCompactor obeys the line compactor's contract and plugs into MultiHopRAG."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction import (
    REASON_BLANK,
    REASON_BUDGET,
    REASON_DUPLICATE,
    REASON_ORPHAN_HEADER,
)
from rootweaver_innovations.multihop import MultiHopRAG
from rootweaver_innovations.packing import SubmodularCompactor, SubmodularWeights
from rootweaver_innovations.strategies import make_compactor
from strategies import WORDS, contexts

PROPS = settings(max_examples=500, deadline=None)
COMPACT = SubmodularCompactor()
budgets = st.integers(min_value=1, max_value=400)
terms = st.lists(st.sampled_from(WORDS), max_size=3)
questions = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)


@PROPS
@given(contexts(), budgets, terms, questions)
def test_contract_budget_verbatim_accounted_deterministic_idempotent(ctx, budget, open_terms, question):
    res = COMPACT(ctx, max_chars=budget, question=question, open_terms=open_terms)
    lines = ctx.split("\n")
    # hard budget, separators and headers included
    assert len(res.text) <= budget and res.output_chars == len(res.text)
    # whole input lines, in input order
    positions = [k.position for k in res.kept]
    assert positions == sorted(positions)
    assert [lines[p] for p in positions] == [k.text for k in res.kept]
    assert res.text == "\n".join(k.text for k in res.kept)
    # every input line accounted for exactly once
    assert sorted(positions + [d.position for d in res.dropped]) == list(range(len(lines)))
    assert res.strategy == "submodular" and res.input_chars == len(ctx) and res.max_chars == budget
    # deterministic and idempotent
    assert COMPACT(ctx, max_chars=budget, question=question, open_terms=open_terms) == res
    again = COMPACT(res.text, max_chars=budget, question=question, open_terms=open_terms)
    assert again.text == res.text


@PROPS
@given(contexts(), budgets)
def test_headers_only_with_facts_and_budget_drops_do_not_fit(ctx, budget):
    res = COMPACT(ctx, max_chars=budget, question="alpha river")
    lines = ctx.split("\n")
    kept = {k.position for k in res.kept}
    header_of = {}
    current = None
    for i, line in enumerate(lines):
        if line.startswith("From query:"):
            current = i
        elif current is not None:
            header_of[i] = current
    # a kept header is followed by at least one kept fact of its block
    for k in res.kept:
        if k.text.startswith("From query:"):
            assert any(header_of.get(p) == k.position for p in kept)
    # skip, never truncate: a line dropped for budget would not fit beside the output
    for d in res.dropped:
        if d.reason == REASON_BUDGET:
            cost = len(d.text) + (1 if res.text else 0)
            h = header_of.get(d.position)
            if h is not None and h not in kept:
                cost += len(lines[h]) + 1
            assert len(res.text) + cost > budget


def test_worked_example_keeps_answer_bearing_fact_with_its_header():
    ctx = "\n".join([
        "From query: who directed Jaws",                                  # 0 (29 chars)
        "Jaws | Jaws is a 1975 film directed by Steven Spielberg.",       # 1 (56)
        "",                                                               # 2
        "From query: where was Steven Spielberg born",                    # 3 (43)
        "Steven Spielberg | Spielberg was born in Cincinnati, Ohio.",     # 4 (58)
        "Steven Spielberg | He was raised in Arizona.",                   # 5 (44)
        "Jaws | Jaws is a 1975 film directed by Steven Spielberg.",       # 6 duplicate of 1
    ])
    # 110 chars: header 3 + line 4 take 43 + 1 + 58 = 102, so nothing else fits beside
    # them (line 5 needs 44 + 1, line 1 with its header 29 + 1 + 56 + 1). TF-IDF relevance
    # to the question: line 4 = 0.70 (the only "born"), line 5 = 0.27, line 1 = 0.20, so
    # line 4 wins the first pick per char as well; no two facts fit together at 110.
    res = COMPACT(ctx, max_chars=110, question="Where was Steven Spielberg born?")
    assert res.text == "From query: where was Steven Spielberg born\nSteven Spielberg | Spielberg was born in Cincinnati, Ohio."
    reasons = {d.position: d.reason for d in res.dropped}
    assert reasons == {0: REASON_ORPHAN_HEADER, 1: REASON_BUDGET, 2: REASON_BLANK, 5: REASON_BUDGET, 6: REASON_DUPLICATE}
    # the whole context fits: everything but the blank and the duplicate is kept verbatim
    roomy = COMPACT(ctx, max_chars=10_000, question="Where was Steven Spielberg born?")
    assert roomy.text == "\n".join(line for i, line in enumerate(ctx.split("\n")) if i not in (2, 6))


class _HashEmbedder:
    """A deterministic stand-in for the MiniLM embedder (bag of hashed words, L2-normalised)."""

    name = "hash"

    def encode(self, texts):
        out = np.zeros((len(texts), 16))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 16] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


@settings(max_examples=100, deadline=None)
@given(contexts(), budgets)
def test_dense_similarity_from_an_injected_embedder_keeps_the_contract(ctx, budget):
    dense = SubmodularCompactor(embedder=_HashEmbedder(), weights=SubmodularWeights(w_cov=1.0))
    res = dense(ctx, max_chars=budget, question="alpha river", open_terms=())
    assert len(res.text) <= budget
    assert dense(res.text, max_chars=budget, question="alpha river", open_terms=()).text == res.text


def test_snippet_cap_limits_kept_facts():
    ctx = "\n".join(f"T{i} | fact number {i} about alpha" for i in range(6))
    res = SubmodularCompactor(max_snippets=2)(ctx, max_chars=120, question="alpha")
    assert len(res.kept) == 2
    assert sum(d.reason == "snippet_cap" for d in res.dropped) >= 1


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, None])
def test_bad_budget_raises(bad):
    with pytest.raises(ValueError, match="max_chars"):
        COMPACT("A | x", max_chars=bad, question="", open_terms=())


def test_registered_strategy_and_multihop_trajectory_unchanged(demo_retriever, golden_questions):
    assert isinstance(make_compactor("submodular").compactor, SubmodularCompactor)
    off = MultiHopRAG(demo_retriever)
    for q in golden_questions[:8]:
        for budget in (120, 600):
            on = MultiHopRAG(
                demo_retriever, compaction_enabled=True, compaction_max_chars=budget, compactor=SubmodularCompactor()
            ).multi_hop_search(q.question)
            base = off.multi_hop_search(q.question)
            assert on.trajectory() == base.trajectory() and on.full_context == base.full_context
            assert on.context_chars <= budget and on.compaction.strategy == "submodular"
