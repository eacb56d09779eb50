"""Every registered compaction strategy keeps the compaction contract on the loop's facts."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.line import REASON_BLANK, REASON_HOP_HEADER, CompactionRequest, LineCompactor
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.compaction.packing import Budget, SubmodularWeights, fact_candidates, pack
from rootweaver_innovations.compaction.packing.compactor import PackingCompactor
from rootweaver_innovations.records import Fact
from rootweaver_innovations.compaction.strategies import make_compactor, register_strategy, strategy_names
from strategies import compaction_requests


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(strategy_names()), compaction_requests())
def test_contract_budget_verbatim_accounted_deterministic(strategy, request_):
    compact = make_compactor(strategy)
    res = compact(request_)
    full = request_.context.rendering
    budget = request_.budget
    # hard budget in its own unit, measured on the real text
    assert res.used == budget.measure(res.text) <= budget.limit
    assert (res.budget, res.strategy, res.source) == (budget, strategy, request_.context)
    # whole facts of the full context, in its order
    index = {f: i for i, f in enumerate(request_.facts)}
    positions = [full.fact_lines[index[f]] for f in res.kept_facts]
    assert positions == sorted(positions)
    # every fact accounted for exactly once, every drop with a reason
    assert sorted([index[f] for f in res.kept_facts] + [d.index for d in res.dropped]) == list(range(len(index)))
    assert all(d.reason and request_.facts[d.index] == d.fact for d in res.dropped)
    assert compact(request_) == res


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["submodular", "evidence"]), compaction_requests())
def test_packers_render_facts_only_and_are_idempotent(policy, request_):
    res = make_compactor(policy)(request_)
    assert res.context.layout == "facts" and res.text == "\n".join(f.line for f in res.kept_facts)
    headers = set(request_.context.rendering.header_lines)
    assert all(d.reason == REASON_HOP_HEADER for d in res.dropped_lines() if d.position in headers)
    again = make_compactor(policy)(dataclasses.replace(request_, context=request_.context.with_facts(res.kept_facts, "full")))
    assert again.text == res.text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["submodular", "evidence"]), compaction_requests())
def test_the_packing_compactor_is_the_harness_on_the_same_facts(policy, request_):
    """No loss at the seam: the product compactor's synth context, rendered from its kept facts,
    is the text ``pack`` renders over ``fact_candidates``."""
    res = make_compactor(policy)(request_)
    harness = pack(policy, fact_candidates(request_.question, request_.facts), request_.question, request_.budget)
    assert res.text == harness.text


def test_line_under_a_token_budget_takes_the_largest_char_budget_that_fits():
    facts = tuple(Fact(f"p{i}", f"T{i}", f"alpha fact number {i} about the river", 0, 0, "q") for i in range(8))
    req = CompactionRequest("alpha river", SynthContext(facts, ("alpha river",)), (), Budget.tokens(40))
    res = LineCompactor()(req)
    assert res.used <= 40 and res.budget.unit == "tokens"
    more = LineCompactor()(dataclasses.replace(req, budget=Budget.tokens(80)))
    assert len(more.kept_facts) > len(res.kept_facts)


def test_worked_example_evidence_keeps_the_answer_and_its_bridge_once_it_fits():
    facts = (
        Fact("a", "Jaws (film)", "Jaws is a 1975 film directed by Steven Spielberg.", 0, 0, "q", 0),
        Fact("a", "Jaws (film)", "It was based on a novel by Peter Benchley.", 1, 0, "q", 0),
        Fact("b", "Steven Spielberg", "Steven Spielberg (born December 18, 1946) is an American director.", 0, 1, "b", 0),
        Fact("b", "Steven Spielberg", "Spielberg was born in Cincinnati, Ohio.", 1, 1, "b", 0),
        Fact("c", "Shark Tale", "Shark Tale is a 2004 animated film.", 0, 1, "b", 1),
    )
    req = CompactionRequest("Where was the director of Jaws born?", SynthContext(facts, ("q", "b")), (), Budget.tokens(40))
    res = make_compactor("evidence")(req)
    # At 40 tokens the answer and one more sentence fit: the bridge document's bonus
    # (coverage * q_d, at most coverage) does not outbid the answer document's lead, whose
    # birth bracket the model rates likelier to hold the answer of a where-born question.
    assert "Cincinnati" in res.text and res.used <= 40
    assert {d.reason for d in res.dropped_lines()} >= {REASON_HOP_HEADER, REASON_BLANK}
    wider = make_compactor("evidence")(dataclasses.replace(req, budget=Budget.tokens(60)))
    assert "Cincinnati" in wider.text and "Jaws" in wider.text and "Shark" not in wider.text and wider.used <= 60


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
@given(compaction_requests())
def test_dense_similarity_from_an_injected_embedder_keeps_the_budget(request_):
    dense = PackingCompactor("submodular", weights=SubmodularWeights(w_cov=1.0), embedder=_HashEmbedder())
    res = dense(request_)
    assert res.used <= request_.budget.limit
    assert dense(dataclasses.replace(request_, context=request_.context.with_facts(res.kept_facts, "full"))).text == res.text


def test_snippet_cap_limits_kept_facts():
    facts = tuple(Fact(f"p{i}", f"T{i}", f"fact number {i} about alpha", 0, 0, "q") for i in range(6))
    res = PackingCompactor("submodular", max_snippets=2)(CompactionRequest("alpha", SynthContext(facts, ("q",)), (),
                                                                           Budget.chars(400)))
    assert len(res.kept_facts) == 2 and sum(d.reason == "snippet_cap" for d in res.dropped) >= 1


def test_registry_rejects_duplicates_and_off_and_names_choices():
    with pytest.raises(ValueError, match="already registered"):
        register_strategy("line", LineCompactor)
    with pytest.raises(ValueError, match="other than 'off'"):
        register_strategy("off", LineCompactor)
    with pytest.raises(ValueError, match="choose one of"):
        make_compactor("greedy")
    assert strategy_names()[:3] == ("line", "submodular", "evidence")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["alpha", "beta", "gamma", "river", "film", "born"]), min_size=1, max_size=6),
                min_size=1, max_size=8),
       st.lists(st.sampled_from(["alpha", "beta", "river", "zeta"]), max_size=4))
def test_relevance_reproduces_rank_bm25(docs, query):
    from rank_bm25 import BM25Okapi

    from rootweaver_innovations.compaction.packing.candidates import _DocTerms, _okapi

    counted = [_DocTerms(len(d), Counter(d)) for d in docs]
    assert _okapi(counted, query) == pytest.approx(list(BM25Okapi(docs).get_scores(query)), abs=1e-9)


@pytest.mark.parametrize(
    ("field", "value"),
    [("passage_id", 7), ("title", None), ("sentence", b"x"), ("sub_query", None), ("sentence_index", -1),
     ("hop", True), ("rank", 1.0), ("score", float("nan")), ("score", "1")],
)
def test_a_fact_with_a_bad_field_is_a_value_error_naming_the_field(field, value):
    fields = {"passage_id": "p1", "title": "T", "sentence": "S.", "sentence_index": 0, "hop": 0, "sub_query": "q",
              "rank": 0, "score": 1.0}
    with pytest.raises(ValueError, match=f"fact of passage .*: {field} must be"):
        Fact(**{**fields, field: value})
    assert Fact(**fields).line == "T | S."
    assert Fact(**{**fields, "passage_id": np.str_("p1"), "score": np.float64(2.0)}).passage_id == "p1"  # subclasses pass
