"""The four objective terms: normalised, monotone, diminishing returns, exact gain vectors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.packing.objective import (
    SCALE,
    DiversityTerm,
    QueryCoverageTerm,
    RelevanceTerm,
    RepresentativenessTerm,
    SubmodularObjective,
    SubmodularWeights,
    query_incidence,
)
from rootweaver_innovations.text import bm25_tokenize
from strategies import nested_sets, objective_inputs

PROPS = settings(max_examples=250, deadline=None)
ALPHAS = st.sampled_from([0.1, 0.3, 0.5, 1.0])
TERM_NAMES = ("rel", "qry", "cov", "div")


def make_term(name, inputs, alpha):
    rel, inc, sim, docs = inputs
    return {
        "rel": lambda: RelevanceTerm(rel),
        "qry": lambda: QueryCoverageTerm(inc),
        "cov": lambda: RepresentativenessTerm(sim, alpha),
        "div": lambda: DiversityTerm(docs, rel),
    }[name]()


def value(term, selected):
    term.reset(selected)
    return term.value()


def gain(term, selected, x):
    term.reset(selected)
    return float(term.gains([x])[0])


@pytest.mark.parametrize("name", TERM_NAMES)
@PROPS
@given(data=st.data(), inputs=objective_inputs(), alpha=ALPHAS)
def test_term_monotone_submodular_normalised(name, data, inputs, alpha):
    n = len(inputs[0])
    a, b, x = data.draw(nested_sets(n))
    term = make_term(name, inputs, alpha)
    # monotone: adding x never lowers the value
    assert value(term, b + [x]) >= value(term, b) - 1e-12
    # diminishing returns: gain of x to A >= gain of x to B for A subset of B
    assert gain(term, a, x) >= gain(term, b, x) - 1e-12
    assert gain(term, b, x) >= 0.0
    # normalised to [0, 1] by the value on the whole set (a term that is 0 there is 0)
    assert value(term, []) == 0.0
    full = value(term, list(range(n)))
    assert full == pytest.approx(1.0) or (full == 0.0 and term.norm == 0)
    assert 0.0 <= value(term, b) <= 1.0 + 1e-12
    # the gain vector is the value difference, and a candidate's gain does not depend on
    # which others are evaluated with it (bit-exact)
    term.reset(b)
    vector = term.gains()
    assert vector[x] == pytest.approx(value(term, b + [x]) - value(term, b), abs=1e-12)
    term.reset(b)
    assert float(term.gains([x])[0]) == float(vector[x])


@PROPS
@given(data=st.data(), inputs=objective_inputs(), alpha=ALPHAS)
def test_objective_is_the_weighted_sum_of_its_terms(data, inputs, alpha):
    n = len(inputs[0])
    _a, b, _x = data.draw(nested_sets(n))
    w = SubmodularWeights(alpha=alpha)
    obj = SubmodularObjective(*inputs, weights=w)
    expected = sum(
        weight * value(make_term(name, inputs, alpha), b)
        for weight, name in zip((w.w_rel, w.w_qry, w.w_cov, w.w_div), TERM_NAMES)
    )
    assert obj.evaluate(b) == pytest.approx(expected)


def test_repr_saturates_so_near_duplicates_add_nothing():
    # Two identical candidates (sim 1 everywhere), alpha 0.5: deg_i = 2, cap_i = 1 unit each,
    # norm = 2 units. One copy covers both rows up to the cap (value 1); the second adds 0.
    term = RepresentativenessTerm(np.ones((2, 2)), alpha=0.5)
    assert term.cap.tolist() == [SCALE, SCALE]
    assert value(term, [0]) == 1.0
    assert gain(term, [0], 1) == 0.0


def test_div_is_sqrt_of_relevance_mass_per_document():
    # Two candidates of one document with relevance 1 each: Div({0}) = sqrt(1)/sqrt(2).
    term = DiversityTerm(np.array([0, 0]), np.array([1.0, 1.0]))
    assert value(term, [0]) == pytest.approx(1 / math.sqrt(2))
    # The same two in different documents: each is sqrt(1) of a total sqrt(1)+sqrt(1).
    split = DiversityTerm(np.array([0, 1]), np.array([1.0, 1.0]))
    assert value(split, [0]) == pytest.approx(0.5)
    assert gain(split, [0], 1) > gain(term, [0], 1)  # a new document is worth more


def test_query_coverage_counts_distinct_coverable_terms():
    # query terms: capital, france, moon; no candidate mentions "moon" -> 2 coverable terms
    terms, inc = query_incidence("the capital of France? moon", ["Paris is the capital", "France, capital"])
    assert terms == ("capital", "france", "moon")
    assert inc.tolist() == [[True, False, False], [True, True, False]]
    term = QueryCoverageTerm(inc)
    assert term.norm == 2
    assert value(term, [0]) == 0.5 and value(term, [1]) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30), st.lists(st.text(max_size=40), max_size=4))
def test_query_incidence_is_token_membership(query, texts):
    terms, inc = query_incidence(query, texts)
    assert terms == tuple(dict.fromkeys(bm25_tokenize(query)))
    for i, text in enumerate(texts):
        tokens = set(bm25_tokenize(text))
        assert inc[i].tolist() == [t in tokens for t in terms]


def test_query_incidence_with_length_changing_lowercase():
    # "İ".lower() is two characters: offsets must follow the lowered text
    terms, inc = query_incidence("river delta", ["İİİ river", "delta_x river", "deltas", "x delta"])
    assert terms == ("river", "delta")
    assert inc.tolist() == [[True, False], [True, False], [False, False], [False, True]]


def test_degenerate_terms_are_zero():
    zero = np.zeros(3)
    assert value(RelevanceTerm(zero), [0, 1]) == 0.0
    assert value(DiversityTerm(np.array([0, 1, 2]), zero), [0]) == 0.0
    assert value(QueryCoverageTerm(np.zeros((3, 0), dtype=bool)), [0]) == 0.0
    assert RelevanceTerm(zero).gains().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"w_rel": -1.0}, "w_rel must be a finite number >= 0, got -1.0"),
     ({"w_div": float("nan")}, "w_div must be a finite number >= 0, got nan"),
     ({"alpha": 0.0}, "alpha must be in (0, 1], got 0.0"),
     ({"alpha": 1.5}, "alpha must be in (0, 1], got 1.5"),
     ({"w_qry": True}, "w_qry must be a finite number >= 0, got True")],
)
def test_weights_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SubmodularWeights(**kwargs)


def test_default_weights_are_the_papers():
    w = SubmodularWeights()
    assert (w.w_rel, w.w_qry, w.w_cov, w.w_div, w.alpha) == (1.0, 0.5, 0.4, 0.3, 0.3)


def test_objective_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="disagree"):
        SubmodularObjective(np.ones(2), np.zeros((3, 1), dtype=bool), np.eye(2), np.zeros(2, dtype=np.int64))


def test_similarity_docstring_examples():
    import doctest

    from rootweaver_innovations.compaction.packing import similarity

    result = doctest.testmod(similarity)
    assert result.attempted >= 2 and result.failed == 0


def test_similarity_records_are_validated_and_dense_clips_negatives():
    from rootweaver_innovations.compaction.packing import Similarity, dense_similarity

    # orthogonal and opposite vectors: cosines 0 and -1 -> clipped to 0; self = 1
    s = dense_similarity(np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]])).matrix
    assert s.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match=re.escape("similarity values must be finite and in [0, 1]")):
        Similarity(np.full((2, 2), 1.5), "dense")
    with pytest.raises(ValueError, match=re.escape("similarity kind must be one of ['tfidf', 'dense'], got 'cosine'")):
        Similarity(np.eye(2), "cosine")
    with pytest.raises(ValueError, match=re.escape("embeddings must be a finite 2-D array, got shape (2,)")):
        dense_similarity(np.array([1.0, 2.0]))
