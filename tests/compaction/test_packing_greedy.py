"""Cost-scaled greedy: the (1-1/e)/2 guarantee against brute force, budgets, lazy == plain."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.packing import Budget, Header, SubmodularObjective, SubmodularWeights
from rootweaver_innovations.compaction.packing.knapsack import Knapsack
from rootweaver_innovations.compaction.packing.greedy import GreedyResult, _cap, _finish, lazy_greedy
from strategies import budgets, objective_inputs, words

BOUND = (1 - 1 / math.e) / 2


def plain_greedy(objective, knapsack, max_snippets=None):
    """The reference: cost-scaled greedy evaluating every candidate's gain at every step, plus
    the product's best-singleton fallback; lazy_greedy must return exactly its selection."""
    n = len(knapsack.item)
    cap = _cap(max_snippets, n)
    objective.reset()
    knapsack.reset()
    order: list[int] = []
    gains: list[float] = []
    for feasible in knapsack.rounds(cap):
        g = objective.gains()
        ratio = np.where(feasible, g / knapsack.marginal(), -np.inf)
        best = int(np.argmax(ratio))
        if not ratio[best] > 0:
            break
        order.append(best)
        gains.append(float(g[best]))
        objective.add(best)
        knapsack.take(best)
    return _finish(objective, knapsack, order, gains) if cap else GreedyResult((), (), 0.0, False)


def brute_force(objective, knapsack):
    """max F(S) over all S with modular cost <= capacity (depth-first, pruned by cost)."""
    n = len(knapsack.item)
    best = 0.0

    def extend(start, chosen, cost):
        nonlocal best
        best = max(best, objective.evaluate(chosen))
        for i in range(start, n):
            c = cost + int(knapsack.item[i])
            if c <= knapsack.capacity:
                extend(i + 1, chosen + [i], c)

    extend(0, [], 0)
    return best


@st.composite
def instances(draw, max_n=12):
    inputs = draw(objective_inputs(max_n=max_n))
    n = len(inputs[0])
    texts = draw(st.lists(words, min_size=n, max_size=n))
    alpha = draw(st.sampled_from([0.1, 0.3, 1.0]))
    return inputs, texts, draw(budgets), SubmodularWeights(alpha=alpha)


@settings(max_examples=150, deadline=None)
@given(instances())
def test_greedy_with_fallback_reaches_half_of_one_minus_inverse_e_and_stays_in_budget(instance):
    inputs, texts, budget, weights = instance
    objective = SubmodularObjective(*inputs, weights=weights)
    knapsack = Knapsack(budget, texts)
    res = plain_greedy(objective, knapsack)
    opt = brute_force(objective, knapsack)
    assert res.value >= BOUND * opt - 1e-12
    assert res.value == objective.evaluate(res.order)
    # never over budget in the budget's unit, measured on the rendered packet
    assert sum(int(knapsack.item[i]) for i in res.order) <= knapsack.capacity
    assert budget.measure(budget.separator.join(texts[i] for i in res.order)) <= budget.limit


@st.composite
def instances_with_headers(draw):
    inputs, texts, budget, weights = draw(instances(max_n=10))
    n = len(texts)
    pool = [None, Header(0, "From query: alpha river"), Header(1, "From query: born")]
    headers = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    cap = draw(st.one_of(st.none(), st.integers(min_value=1, max_value=4)))
    return inputs, texts, budget, weights, headers, cap


@settings(max_examples=600, deadline=None)
@given(instances_with_headers())
def test_lazy_greedy_returns_exactly_the_plain_greedy_selection(instance):
    inputs, texts, budget, weights, headers, cap = instance
    objective = SubmodularObjective(*inputs, weights=weights)
    knapsack = Knapsack(budget, texts, headers)
    plain = plain_greedy(objective, knapsack, cap)
    lazy = lazy_greedy(objective, knapsack, cap)
    assert lazy == plain
    if cap is not None:
        assert len(plain.order) <= cap


def test_lazy_greedy_evaluates_fewer_gains_than_plain():
    rng = np.random.default_rng(7)
    n = 60
    emb = rng.normal(size=(n, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sim = np.clip(emb @ emb.T, 0, 1)
    np.fill_diagonal(sim, 1.0)
    objective = SubmodularObjective(
        rng.random(n), rng.random((n, 5)) < 0.3, sim, rng.integers(0, 6, n), SubmodularWeights()
    )
    counted = {"n": 0}
    original = objective.gains

    def counting(idx=None):
        counted["n"] += n if idx is None else len(idx)
        return original(idx)

    objective.gains = counting
    knapsack = Knapsack(Budget.chars(300), ["x" * int(k) for k in rng.integers(10, 60, n)])
    plain = plain_greedy(objective, knapsack)
    plain_evals = counted["n"]
    counted["n"] = 0
    assert lazy_greedy(objective, knapsack) == plain
    assert counted["n"] < plain_evals


def modular(relevance):
    """An objective that is pure relevance (the other weights 0): F(S) = sum rel / sum all."""
    n = len(relevance)
    return SubmodularObjective(
        np.array(relevance, dtype=np.float64),
        np.zeros((n, 0), dtype=bool),
        np.eye(n),
        np.arange(n),
        SubmodularWeights(w_qry=0.0, w_cov=0.0, w_div=0.0),
    )


def test_best_singleton_fallback_beats_a_greedy_trapped_by_a_cheap_item():
    # Budget 9 chars -> capacity 10 (each item pays text + one separator).
    # A: 9 chars, cost 10, relevance 1.0 -> ratio 0.100
    # B: 1 char,  cost 2,  relevance 0.3 -> ratio 0.150: greedy takes B first, then A no
    # longer fits (2 + 10 > 10), so greedy F = 0.3/1.3 while F({A}) = 1/1.3.
    objective = modular([1.0, 0.3])
    knapsack = Knapsack(Budget.chars(9), ["x" * 9, "y"])
    for greedy in (plain_greedy, lazy_greedy):
        res = greedy(objective, knapsack)
        assert res.fallback and res.order == (0,)
        assert math.isclose(res.value, 1 / 1.3, rel_tol=1e-6)  # relevance is quantised to 2**-20


def test_greedy_skips_what_does_not_fit_and_keeps_trying_smaller():
    # capacity 10: A (cost 10, best ratio 0.1) is taken; nothing else fits afterwards.
    # With A too big (limit 5 -> capacity 6) greedy skips it and takes B then C.
    objective = modular([1.0, 0.2, 0.1])
    assert plain_greedy(objective, Knapsack(Budget.chars(9), ["x" * 9, "y", "z"])).order == (0,)
    res = plain_greedy(objective, Knapsack(Budget.chars(5), ["x" * 9, "y", "z"]))
    assert res.order == (1, 2) and not res.fallback


def test_snippet_cap_and_zero_cap_inputs():
    objective = modular([0.5, 0.4, 0.3])
    knapsack = Knapsack(Budget.chars(100), ["a", "b", "c"])
    assert plain_greedy(objective, knapsack, max_snippets=2).order == (0, 1)
    empty = SubmodularObjective(np.zeros(0), np.zeros((0, 0), dtype=bool), np.zeros((0, 0)), np.zeros(0, np.int64))
    assert plain_greedy(empty, Knapsack(Budget.chars(5), [])).order == ()
    assert lazy_greedy(empty, Knapsack(Budget.chars(5), [])).order == ()


def test_ties_break_by_lowest_index():
    # identical relevance and cost: the earlier candidate (rank order) goes first
    objective = modular([0.5, 0.5, 0.5])
    knapsack = Knapsack(Budget.chars(3), ["a", "b", "c"])  # capacity 4: two items of cost 2
    assert plain_greedy(objective, knapsack).order == (0, 1)
    assert lazy_greedy(objective, knapsack).order == (0, 1)


def test_fill_takes_what_fits_in_order_once_and_a_paid_header_cheapens_its_other_lines():
    # capacity 31; items cost text + 1: a 10, b 5, c 10, d 2; the header costs 14 once.
    # b (5 + 14) first pays the header, so a then costs 10 (not 24) and fits: 29;
    # b again is skipped, c (10) no longer fits, d (2) fills to 31 exactly.
    header = Header(0, "From query: q")
    knapsack = Knapsack(Budget.chars(30), ["a" * 9, "b" * 4, "c" * 9, "d"], [header, header, None, None])
    assert knapsack.fill([1, 1, 0, 2, 3], cap=3) == [1, 0, 3]
    assert (knapsack.used, knapsack.count) == (31, 3)
    knapsack.reset()
    assert knapsack.fill([1, 1, 0, 2, 3], cap=2) == [1, 0]
