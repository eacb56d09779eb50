"""Frontloading (coverage objective + greedy) and the adaptive depth controller."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.frontload import (
    CoverageObjective,
    DepthController,
    anchor_scores,
    frontload,
    greedy_order,
    mmr_order,
)

TOL = 1e-9


@st.composite
def nonneg_matrix(draw, max_n=7, max_m=5):
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(1, max_m))
    # quarter-steps in [0, 4]: many exact ties and zeros, no rounding noise in sums
    cells = draw(st.lists(st.integers(0, 16), min_size=n * m, max_size=n * m))
    return np.array(cells, dtype=float).reshape(n, m) / 4.0


@st.composite
def frontload_inputs(draw):
    x = draw(nonneg_matrix())
    n, m = x.shape
    rel = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=float)
    u = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=float)
    return x, rel, u


@st.composite
def objective_and_sets(draw):
    """An objective, nested sets A <= B and an element x outside B."""
    values = draw(nonneg_matrix(max_n=8))
    n, m = values.shape
    u = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=float)
    labels = draw(st.lists(st.sampled_from("ABx-"), min_size=n, max_size=n))  # A (also in B), B only, x, neither
    return CoverageObjective.create(values, u), labels


@settings(max_examples=300, deadline=None)
@given(frontload_inputs(), st.integers(0, 4), st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 0.5, 2.0]))
def test_frontload_is_a_permutation_with_nonincreasing_gains(inputs, n_seeds, anchor_weight, seed_expansion):
    x, rel, u = inputs
    res = frontload(x, rel, u, n_seeds=n_seeds, anchor_weight=anchor_weight, seed_expansion=seed_expansion)
    assert sorted(res.order) == list(range(x.shape[0]))
    assert len(res.gains) == x.shape[0]
    # greedy on a submodular objective: each pick adds no more than the previous one
    assert all(a >= b - TOL for a, b in itertools.pairwise(res.gains))
    assert len(res.seeds) == min(n_seeds, x.shape[0])


@settings(max_examples=300, deadline=None)
@given(objective_and_sets())
def test_coverage_is_monotone_with_diminishing_returns(case):
    obj, labels = case
    a = [i for i, lab in enumerate(labels) if lab == "A"]
    b = [i for i, lab in enumerate(labels) if lab in "AB"]
    for x in (i for i, lab in enumerate(labels) if lab == "x"):
        gain_a = obj.value(a + [x]) - obj.value(a)
        gain_b = obj.value(b + [x]) - obj.value(b)
        assert gain_b >= -TOL  # monotone
        assert gain_a >= gain_b - TOL  # diminishing returns, A subset of B
    assert obj.value(b) >= obj.value(a) - TOL


@settings(max_examples=200, deadline=None)
@given(objective_and_sets())
def test_gains_sum_to_the_value_of_every_prefix(case):
    obj, _ = case
    res = greedy_order(obj)
    for i in range(obj.size + 1):
        assert math.isclose(sum(res.gains[:i]), obj.value(res.order[:i]), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(objective_and_sets(), st.integers(1, 3))
def test_greedy_prefix_is_within_1_minus_1_over_e_of_brute_force(case, k):
    obj, _ = case
    k = min(k, obj.size)
    best = max(obj.value(s) for s in itertools.combinations(range(obj.size), k))
    got = obj.value(greedy_order(obj).order[:k])
    assert got >= (1 - 1 / math.e) * best - TOL


def test_identical_candidates_keep_input_order():
    # every row equal: step 1 all gains tie (index 0 wins), after that every gain is 0
    # (the max is already reached on every dimension), so the lowest index wins each step
    values = np.tile([1.0, 2.0, 0.5], (5, 1))
    res = greedy_order(CoverageObjective.create(values, np.ones(3)))
    assert res.order == (0, 1, 2, 3, 4)
    assert res.gains == (3.5, 0.0, 0.0, 0.0, 0.0)


@settings(max_examples=200, deadline=None)
@given(frontload_inputs(), st.data())
def test_duplicate_rows_tie_by_lower_index_and_runs_repeat(inputs, data):
    x, rel, u = inputs
    n = x.shape[0]
    src = data.draw(st.integers(0, n - 1))
    x2 = np.vstack([x, x[src]])  # a copy of row src appended at index n
    rel2 = np.append(rel, rel[src])
    # no anchors: the copy has the same weight and values as src, so src (lower index) leads
    res = frontload(x2, rel2, u, n_seeds=0)
    assert res.order.index(src) < res.order.index(n)
    assert res == frontload(x2, rel2, u, n_seeds=0)  # deterministic


def test_worked_example_bridge_enters_the_prefix_through_its_anchor():
    # dims [query term q, entity e, other f], u = (1, .5, .5). c0 is the seed (q and e),
    # c1 a weakly relevant distractor (f only), c2 the bridge (e and f, no query term).
    # Unit rows: c0 (r, r, 0), c1 (0, 0, 1), c2 (0, r, r) with r = 1/sqrt(2).
    x = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    rel = np.array([1.0, 0.2, 0.0])
    u = np.array([1.0, 0.5, 0.5])
    r = 0.5**0.5
    # No anchors: w = (1, .2, 0). Step 1: c0 gains r + .5 r = 1.5 r; step 2: c1 gains
    # .2 * .5 = .1, c2 gains 0 -> (0, 1, 2).
    plain = frontload(x, rel, u, n_seeds=1, anchor_weight=0.0)
    assert plain.order == (0, 1, 2)
    assert plain.gains == pytest.approx((1.5 * r, 0.1, 0.0))
    # Anchors: cos(c2, c0) = .5, cos(c1, c0) = 0, c0 is the only seed (its own anchor 0)
    # -> w = (1, .2, .5). Step 1: c0 (1.5 r > .5 r of c2 > .1 of c1). Step 2, covered
    # (r, r, 0): c2 adds only on f: .5 r * .5 = .25 r ~ .177 > c1's .1. Step 3: c1's .2 on
    # f is below c2's .5 r ~ .354, gain 0 -> (0, 2, 1).
    anchored = frontload(x, rel, u, n_seeds=1, anchor_weight=1.0)
    assert anchored.order == (0, 2, 1)
    assert anchored.gains == pytest.approx((1.5 * r, 0.25 * r, 0.0))
    assert anchored.seeds == (0,)


def test_seed_expansion_gives_the_seed_terms_weight():
    # dims [q, e], u = (1, 0): only the query term counts. c0 (the seed) has q and e, c1
    # only e. Unit rows c0 = (r, r), c1 = (0, 1), r = 1/sqrt(2); w0 = 1.
    # Plain: c0's gain is r * 1 = r. Expansion 1: e = c0's unit row (r, r), so
    # u' = (1, 0) + 1 * max(u) * (r, r) / r = (2, 1) and c0's gain is 2 r + r = 3 r.
    # c1 (w1 = .5 * cos(c1, c0) = .5 r) then has .5 r on e, below the covered r: gain 0.
    x = np.array([[1.0, 1.0], [0.0, 1.0]])
    rel = np.array([1.0, 0.0])
    u = np.array([1.0, 0.0])
    r = 0.5**0.5
    plain = frontload(x, rel, u, n_seeds=1)
    expanded = frontload(x, rel, u, n_seeds=1, seed_expansion=1.0)
    assert plain.gains == pytest.approx((r, 0.0))
    # step 1 for c0 under u' = (1 + 1, 0 + 1): r * 2 + r * 1 = 3 r
    assert expanded.order == (0, 1)
    assert expanded.gains == pytest.approx((3 * r, 0.0))


def test_anchor_scores_exclude_self_similarity():
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    scores, seeds = anchor_scores(x, np.array([3.0, 2.0, 1.0]), n_seeds=1)
    assert seeds == (0,)
    assert scores.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: frontload(-np.ones((2, 2)), np.ones(2), np.ones(2)), "non-negative"),
        (lambda: frontload(np.ones((2, 2)), np.ones(3), np.ones(2)), "relevance has 3"),
        (lambda: frontload(np.ones((2, 2)), np.ones(2), np.ones(3)), "dim_weights has 3"),
        (lambda: frontload(np.ones((2, 2)), np.ones(2), -np.ones(2)), "non-negative"),
        (lambda: frontload(np.ones((2, 2)), np.ones(2), np.ones(2), anchor_weight=-1), "anchor_weight"),
        (lambda: frontload(np.ones((2, 2)), np.ones(2), np.ones(2), seed_expansion=np.inf), "seed_expansion"),
        (lambda: mmr_order(np.ones((2, 2)), np.ones(2), lam=2.0), "lam"),
        (lambda: CoverageObjective.create(np.ones(3), np.ones(3)), "2-dimensional"),
    ],
)
def test_bad_inputs_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=200, deadline=None)
@given(frontload_inputs(), st.sampled_from([0.0, 0.3, 0.7, 1.0]))
def test_mmr_order_is_a_permutation(inputs, lam):
    x, rel, _ = inputs
    assert sorted(mmr_order(x, rel, lam)) == list(range(x.shape[0]))


def test_mmr_with_lambda_one_is_relevance_order_ties_by_index():
    x = np.eye(4)
    assert mmr_order(x, np.array([1.0, 3.0, 3.0, 2.0]), lam=1.0) == (1, 2, 3, 0)


@st.composite
def controllers(draw):
    d_min = draw(st.integers(1, 50))
    batch = draw(st.integers(1, 30))
    steps = draw(st.integers(0, 6))
    return DepthController(d_min, d_min + steps * batch, batch)


@settings(max_examples=500, deadline=None)
@given(controllers(), st.data(), st.floats(0, 100), st.floats(0, 100))
def test_controller_steps_whole_batches_within_bounds(ctl, data, rr, llm):
    current = data.draw(st.sampled_from(ctl.depths))
    nxt = ctl.next_depth(current, rr, llm)
    assert ctl.d_min <= nxt <= ctl.d_max
    assert (nxt - ctl.d_min) % ctl.batch == 0
    assert abs(nxt - current) in (0, ctl.batch)
    if rr <= llm:
        assert nxt == min(ctl.d_max, current + ctl.batch)  # reranker no more congested: up
    else:
        assert nxt == max(ctl.d_min, current - ctl.batch)  # reranker more congested: down


def test_controller_defaults_walk_down_and_back_up():
    ctl = DepthController()
    assert ctl.depths == (20, 40, 60, 80, 100)
    d, seen = 100, []
    for _ in range(5):
        d = ctl.next_depth(d, rerank_backlog=2.0, llm_backlog=1.0)
        seen.append(d)
    for _ in range(5):
        d = ctl.next_depth(d, rerank_backlog=0.0, llm_backlog=0.0)
        seen.append(d)
    assert seen == [80, 60, 40, 20, 20, 40, 60, 80, 100, 100]


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(d_min=0), "d_min and batch must be >= 1, got d_min=0, batch=20"),
    (dict(batch=0), "d_min and batch must be >= 1, got d_min=20, batch=0"),
    (dict(d_min=50, d_max=20), "d_max (20) must be >= d_min (50)"),
    (dict(d_max=90), "d_max - d_min (70) must be a multiple of batch (20)"),
])
def test_controller_rejects_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        DepthController(**kwargs)


def test_controller_rejects_off_grid_depth():
    with pytest.raises(ValueError, match="not one of"):
        DepthController().next_depth(30, 0.0, 0.0)
