"""The ``evidence`` packing policy: the evidence model's scores, then an exact covering knapsack.

Why the other packers lose on multi-hop questions: their scores are lexical relevance, and
the sentence that holds the answer of a bridge question usually shares few words with the
question (it is in the *second* paragraph, reached through an entity the first one names).
Per-token gains make it worse by favouring short, low-information sentences.

This policy reads two numbers per problem from the evidence model
(:meth:`rootweaver_innovations.compaction.evidence.EvidenceModel.score`, over what every policy sees, never a label):
``q_d``, document ``d``'s probability of being needed evidence, and ``p_i``, candidate
``i``'s share of "holds the answer" (the ``p`` of a problem sum to 1). Then it packs
(:func:`evidence_policy`): maximise ``sum_i (p_i - price) + coverage * sum_{d covered} q_d``
under the token (or char) capacity, where each document contributes one or two sentences
among its ``options_per_doc`` best by ``p`` and its cheapest one: a multiple-choice knapsack
solved exactly by dynamic programming over the integer capacity (:func:`_cover`). The second
term is the expected number of needed documents the context covers: a document is worth at
most ``coverage`` beside answer shares that sum to 1, so a document the model is sure of (the
one the question names, on a chain of hops) does not outbid the later hop that holds the
answer. The chosen sentences are taken best first, then the budget left is filled, best
first by ``p + fill_evidence * q_d``, with any candidate that fits.

The parameters (:class:`~rootweaver_innovations.compaction.evidence.EvidenceParams`) come with the
model file. Ties break by input order, so the policy is deterministic. When every candidate
fits (within the snippet cap) it takes them all, so packing its own output is a no-op.
"""

from __future__ import annotations

import functools
from itertools import accumulate, chain, combinations

import numpy as np

from rootweaver_innovations.compaction.evidence import EvidenceModel, EvidenceParams, shipped_model
from rootweaver_innovations.compaction.packing.policies import PackingProblem, Selection, register_policy

__all__ = ["evidence_policy"]

@functools.lru_cache(maxsize=16)
def _option_slots(options_per_doc: int, max_per_doc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A document's knapsack options over its ``options_per_doc + 1`` member places, as
    ``(first, second, single)`` arrays (read-only): each place alone, then (``max_per_doc`` 2)
    each pair of places in order; ``first`` is an option's place, ``second`` its pair's second
    place (0 for a single) and ``single`` whether it has one place only."""
    places = range(options_per_doc + 1)
    pairs = list(combinations(places, 2)) if max_per_doc == 2 else []
    first = np.array([*places, *(i for i, _ in pairs)], dtype=np.int64)
    second = np.array([0 for _ in places] + [j for _, j in pairs], dtype=np.int64)
    single = np.arange(len(first)) < len(places)
    for slots in (first, second, single):
        slots.flags.writeable = False
    return first, second, single


def _cover(p: np.ndarray, bonus: np.ndarray, problem: PackingProblem, params: EvidenceParams) -> list[int]:
    """Exact multiple-choice knapsack: at most one option per document, most total value within capacity.

    A document's members are its ``options_per_doc`` best candidates by ``p`` and its cheapest
    (the first in ``p`` order among the cheapest) when that is not among them; its options
    are each member alone, then (``max_per_doc`` 2) each pair of members in member order,
    an option of ``k`` candidates worth ``bonus[d] + sum(p) - k * price``. On equal value the
    earlier option, and not taking the document at all, win. Only the ``max_cover_docs``
    documents with the largest bonus (ties: lower index) take part.

    Memory: the DP table spans the capacity any packing of these options can use (the
    budget, or the sum of each document's dearest option when that is less: the same
    answer). When that table would pass :data:`_COVER_DP_BYTES` (a budget of 1,000,000
    chars took 1 GB), costs are rounded up to a coarser unit first so it fits: the
    packing is then exact on the rounded costs and never over the budget.
    """
    cost = problem.knapsack.item
    cap = int(problem.knapsack.capacity)
    doc = problem.doc_index
    n = len(doc)
    if len(bonus) > params.max_cover_docs:
        keep = np.zeros(len(bonus), dtype=bool)
        keep[(-bonus).argsort(kind="stable")[: params.max_cover_docs]] = True
        among = keep[doc].nonzero()[0]
    else:
        among = np.arange(n)
    grouped = among[np.lexsort((among, -p[among], doc[among]))]  # by document, then p descending
    m = len(grouped)
    grouped_doc = doc[grouped]
    starts = np.concatenate(([True], grouped_doc[1:] != grouped_doc[:-1])).nonzero()[0]
    n_groups = len(starts)
    size = np.concatenate((starts[1:], [m])) - starts
    group_of = np.arange(n_groups).repeat(size)
    rank = np.arange(m) - starts[group_of]  # place in its document's p order
    g_cost, g_p = cost[grouped], p[grouped]
    cheapest = np.minimum.reduceat(np.where(g_cost == np.minimum.reduceat(g_cost, starts)[group_of], np.arange(m), m),
                                   starts)
    opts = params.options_per_doc
    members = np.full((n_groups, opts + 1), -1)  # per document: positions in `grouped`, -1 pads
    best = rank < opts
    members[group_of[best], rank[best]] = best.nonzero()[0]
    extra = rank[cheapest] >= opts
    members[extra, opts] = cheapest[extra]
    # Option slots per document (see _option_slots); a slot whose member is padding is invalid
    first, second, single = _option_slots(opts, params.max_per_doc)
    a, b = members[:, first], np.where(single, -1, members[:, second])
    valid = (a >= 0) & (single | (b >= 0))
    bonus_r = bonus[grouped_doc[starts]][:, None]
    a_cost, a_p = g_cost[a], g_p[a]
    opt_cost = np.where(single, a_cost, a_cost + g_cost[b])
    opt_value = np.where(single, bonus_r + a_p - params.price, bonus_r + (a_p + g_p[b]) - 2 * params.price)
    # Document r's DP rows, rows[r]:rows[r + 1] of `shift` and `gain`: leaving it out, then each valid
    # option except those worth less than nothing that cost something. An invalid option would only
    # repeat leaving the document out; one worth < 0 is never on the packing the backtracking finds:
    # the same packing without it is worth at least as much (float sums are monotone) in less
    # capacity, which the first argmax prefers. shift indexes `window[r]`: window[r, cap + 1 - c][w] = hist[r, w - c]
    live = np.column_stack((np.ones(n_groups, dtype=bool), valid & ((opt_value >= 0) | (opt_cost < 1))))
    cap, opt_cost = _dp_capacity(cap, opt_cost, live[:, 1:], n_groups)
    shift = np.column_stack((np.full(n_groups, cap + 1), cap + 1 - np.minimum(opt_cost, cap + 1)))[live]
    gain = np.column_stack((np.zeros(n_groups), opt_value))[live][:, None]
    rows = [0, *accumulate(live.sum(axis=1).tolist())]
    # hist[r, cap + 1 + w]: most value over the documents before r at used capacity w; -inf absorbs w < 0
    hist = np.full((n_groups + 1, 2 * (cap + 1)), -np.inf)
    hist[0, cap + 1] = 0.0
    cell = hist.itemsize
    window = np.ndarray((n_groups + 1, cap + 2, cap + 1), hist.dtype, hist, strides=(hist.strides[0], cell, cell))
    shift_at, gain_at = shift.tolist(), gain.ravel().tolist()
    for r in range(n_groups):
        lo, hi = rows[r], rows[r + 1]
        if hi - lo == 1:  # only leaving it out (adding 0.0 would change nothing: no cell holds -0.0)
            hist[r + 1] = hist[r]
        elif hi - lo == 2:  # leaving it out or its one option: the same maximum, from a slice instead of a gather
            np.maximum(hist[r, cap + 1:], window[r, shift_at[lo + 1]] + gain_at[lo + 1], out=hist[r + 1, cap + 1:])
        else:
            value = window[r, shift[lo:hi]]  # a copy
            value += gain[lo:hi]
            np.maximum.reduce(value, axis=0, out=hist[r + 1, cap + 1:])
    w = int(hist[n_groups, cap + 1:].argmax())
    chosen: list[int] = []
    at_w = hist[:, cap + 1 + w].tolist()  # every row's value at capacity w
    for r in range(n_groups - 1, -1, -1):
        if at_w[r + 1] > at_w[r]:  # this document's best option improved capacity w: it was taken
            row = hist[r, cap + 1:]
            costs = opt_cost[r].tolist()
            option = [row[w - c] + v if ok and c <= w else -np.inf
                      for c, v, ok in zip(costs, opt_value[r].tolist(), valid[r].tolist())]
            k = option.index(max(option))  # the first best option, as argmax over the options picks it
            chosen.extend(grouped[[a[r, k]] if single[k] else [a[r, k], b[r, k]]].tolist())
            w -= costs[k]
            at_w = hist[:, cap + 1 + w].tolist()
    return chosen


_COVER_DP_BYTES = 64 << 20  # the cover's DP table (float64, documents x twice the capacity) at most


def _dp_capacity(cap: int, opt_cost: np.ndarray, live: np.ndarray, n_groups: int) -> tuple[int, np.ndarray]:
    """``(capacity, option costs)`` for the cover's DP (see :func:`_cover`): the capacity no
    packing can pass, and, when the table would be over :data:`_COVER_DP_BYTES`, both in
    units of ``scale`` (costs rounded up, the capacity down)."""
    span = int(min(cap, np.where(live, opt_cost, 0).max(axis=1, initial=0).sum()))
    scale = -(-(n_groups + 1) * 2 * (span + 1) * 8 // _COVER_DP_BYTES)
    if scale <= 1:
        return span, opt_cost
    opt_cost = -(-opt_cost // scale)
    return int(min(cap // scale, np.where(live, opt_cost, 0).max(axis=1, initial=0).sum())), opt_cost


def evidence_policy(problem: PackingProblem, model: EvidenceModel | None = None) -> Selection:
    """Pack ``problem`` (see the module docstring) with ``model`` (the shipped one by default).

    Gains are the answer shares ``p``.
    """
    model = model or shipped_model()
    params = model.params
    knap = problem.knapsack
    knap.reset()
    n = len(problem.candidates)
    if n == 0:
        return Selection((), ())
    p, q = model.score(problem)
    if n <= problem.cap and int(knap.item.sum() + knap.group_cost.sum()) <= knap.capacity:
        return Selection(tuple(range(n)), tuple(float(x) for x in p))
    by_score = np.lexsort((np.arange(n), -p))
    chosen = set(_cover(p, params.coverage * q, problem, params))
    fill = np.lexsort((np.arange(n), -(p + params.fill_evidence * q[problem.doc_index])))
    cover = [i for i in by_score.tolist() if i in chosen]
    order = knap.fill(chain(cover, fill.tolist()), problem.cap)  # the cover, then the fill
    p_of = p.tolist()
    return Selection(tuple(order), tuple(p_of[i] for i in order))


register_policy("evidence", evidence_policy)
