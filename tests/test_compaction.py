"""The line compactor's contract: hard budget, verbatim lines, bands, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction import (
    REASON_BLANK,
    REASON_BUDGET,
    REASON_DUPLICATE,
    REASON_ORPHAN_HEADER,
    CompactionRequest,
    compact_lines,
    fit_lines,
    rank_lines,
    reasoning_key_terms,
)
from strategies import compaction_requests

WORDS = ["alpha", "beta", "gamma", "delta", "river", "born", "film", "the", "and", "Paris", "1923", "x"]
fact_line = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join).map(lambda s: f"Title | {s}")
header = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(lambda w: "From query: " + " ".join(w))
line = st.one_of(fact_line, fact_line, header, st.just(""), st.text(max_size=30).filter(lambda s: "\n" not in s))
contexts = st.lists(line, max_size=40).map("\n".join)
budgets = st.integers(min_value=1, max_value=600)
terms = st.lists(st.sampled_from(WORDS), max_size=4)

PROPS = settings(max_examples=1000, deadline=None)


def test_key_terms_raw_whitespace_split():
    # lowercase, > 3 chars, stop words out, punctuation kept
    assert reasoning_key_terms("Who was BORN in Paris, France? the film") == ["born", "paris,", "france?", "film"]


@PROPS
@given(contexts, budgets, terms, st.text(max_size=40))
def test_budget_never_exceeded(ctx, budget, open_terms, question):
    assert len(compact_lines(ctx, max_chars=budget, question=question, open_terms=open_terms).text) <= budget


@PROPS
@given(contexts, budgets, terms)
def test_output_lines_are_whole_input_lines_in_order(ctx, budget, open_terms):
    res = compact_lines(ctx, max_chars=budget, question="alpha river", open_terms=open_terms)
    lines = ctx.split("\n")
    positions = [k.position for k in res.kept]
    assert positions == sorted(positions)
    assert [lines[p] for p in positions] == [k.text for k in res.kept]
    assert res.text == "\n".join(k.text for k in res.kept)


@PROPS
@given(contexts, budgets, terms)
def test_every_input_line_accounted_once(ctx, budget, open_terms):
    res = compact_lines(ctx, max_chars=budget, open_terms=open_terms)
    seen = sorted([k.position for k in res.kept] + [d.position for d in res.dropped])
    assert seen == list(range(len(ctx.split("\n"))))


@PROPS
@given(contexts, budgets, terms, st.text(max_size=20))
def test_deterministic_and_idempotent(ctx, budget, open_terms, question):
    a = compact_lines(ctx, max_chars=budget, question=question, open_terms=open_terms)
    b = compact_lines(ctx, max_chars=budget, question=question, open_terms=open_terms)
    assert a == b
    again = compact_lines(a.text, max_chars=budget, question=question, open_terms=open_terms)
    assert again.text == a.text


@PROPS
@given(contexts, budgets)
def test_output_is_maximal_every_budget_drop_still_does_not_fit(ctx, budget):
    """Skip, never truncate: no line dropped for budget would fit into the final output."""
    res = compact_lines(ctx, max_chars=budget)
    lines = ctx.split("\n")
    kept = {k.position for k in res.kept}
    for d in res.dropped:
        if d.reason != REASON_BUDGET:
            continue
        headers = [i for i in range(d.position) if lines[i].startswith("From query:")]
        cost = len(d.text) + (1 if res.text else 0)
        if headers and headers[-1] not in kept:
            cost += len(lines[headers[-1]]) + 1
        assert len(res.text) + cost > budget


def test_bands_open_terms_first_then_latest_block_then_rest():
    ctx = "\n".join([
        "From query: first",
        "A | old fact about nothing",          # 1: band 2
        "B | old fact about zebra",            # 2: band 0 (open term)
        "From query: second",
        "C | recent fact",                     # 4: band 1
    ])
    res = compact_lines(ctx, max_chars=10_000, open_terms=["zebra"])
    bands = {k.position: k.band for k in res.kept}
    assert bands[2] == 0 and bands[4] == 1 and bands[1] == 2
    assert res.text == ctx  # everything fits: verbatim, original order
    # a budget for exactly one header + one fact keeps the open-term line
    need = len("From query: first") + 1 + len("B | old fact about zebra")
    tight = compact_lines(ctx, max_chars=need, open_terms=["zebra"])
    assert tight.text == "From query: first\nB | old fact about zebra"
    assert {d.position: d.reason for d in tight.dropped} == {
        1: REASON_BUDGET, 3: REASON_ORPHAN_HEADER, 4: REASON_BUDGET,
    }


def test_query_overlap_orders_within_a_band_then_position():
    ctx = "A | river\nB | alpha river\nC | nothing"
    res = compact_lines(ctx, max_chars=len("B | alpha river"), question="alpha river")
    assert res.text == "B | alpha river"


def test_pinned_line_too_big_is_skipped_and_smaller_line_kept():
    ctx = "A | zebra " + "x" * 100 + "\nB | small"
    res = compact_lines(ctx, max_chars=20, open_terms=["zebra"])
    assert res.text == "B | small"
    assert res.dropped[0].reason == REASON_BUDGET


def test_blank_and_duplicate_lines_are_recorded():
    res = compact_lines("A | x\n\nA | x", max_chars=100)
    assert res.text == "A | x"
    assert [d.reason for d in res.dropped] == [REASON_BLANK, REASON_DUPLICATE]


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, None])
def test_bad_budget_raises(bad):
    with pytest.raises(ValueError, match="max_chars"):
        compact_lines("A | x", max_chars=bad)


@PROPS
@given(contexts, st.lists(budgets, min_size=1, max_size=4), terms, st.text(max_size=40))
def test_one_ranking_fits_every_budget_as_compact_lines_does(ctx, limits, open_terms, question):
    ranking = rank_lines(ctx, question=question, open_terms=open_terms)
    for limit in limits:
        assert fit_lines(ranking, limit) == compact_lines(ctx, max_chars=limit, question=question, open_terms=open_terms)


def test_hits_are_whole_whitespace_tokens_of_the_lowercased_line():
    ctx = "From query: q\nA | reborn films\nB | Film\u00a0x\nC | new york\nD | the film?"
    ranking = rank_lines(ctx, open_terms=["FILM", "new york"])
    # only "Film" (bounded by a no-break space) is a token equal to an open term; a term with
    # a space is never a token; "films", "reborn" and "film?" are other tokens
    assert [(band, i) for band, _overlap, i in ranking.ranked if band == 0] == [(0, 2)]


@given(request=compaction_requests(), keep=st.lists(st.booleans(), max_size=14))
@settings(max_examples=300, deadline=None)
def test_a_request_rebuilt_from_a_subset_of_facts_keeps_each_facts_hop_query(request, keep):
    """``CompactionRequest.of_facts`` (a reader cutting its prompt holds only the kept facts):
    every fact's hop indexes the rebuilt hop queries and finds its own sub-query there;
    hops none of the facts came from are blank; the layout renders without error."""
    facts = tuple(f for f, k in zip(request.facts, keep) if k)
    rebuilt = CompactionRequest.of_facts(request.question, facts, request.budget)
    assert rebuilt.facts == facts and rebuilt.open_terms == ()
    assert len(rebuilt.hop_queries) == (max(f.hop for f in facts) + 1 if facts else 0)
    assert all(rebuilt.hop_queries[f.hop] == f.sub_query for f in facts)
    assert all(q == "" for h, q in enumerate(rebuilt.hop_queries) if h not in {f.hop for f in facts})
    assert [rebuilt.layout.text.split("\n")[i] for i in rebuilt.layout.fact_lines] == [f.line for f in facts]
