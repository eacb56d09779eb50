"""The synth context record and the line compactor's contract: hard budget, whole facts in
context order, bands, every line accounted for, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.line import (
    REASON_BLANK,
    REASON_BUDGET,
    REASON_DUPLICATE,
    REASON_HOP_HEADER,
    REASON_ORPHAN_HEADER,
    CompactionRequest,
    LineCompactor,
    fit_facts,
    rank_facts,
)
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.records import Fact
from rootweaver_innovations.compaction.strategies import make_compactor
from rootweaver_innovations.text import reasoning_key_terms
from strategies import compaction_requests

PROPS = settings(max_examples=300, deadline=None)
LINE = LineCompactor()


def fact(title: str, sentence: str, hop: int = 0, index: int = 0, pid: str | None = None) -> Fact:
    return Fact(pid or f"{title}-{hop}-{index}", title, sentence, index, hop, f"q{hop}")


def request(facts, queries=("q0", "q1"), *, question="", open_terms=(), budget=Budget(10_000, "chars")):
    return CompactionRequest(question, SynthContext(tuple(facts), tuple(queries)), tuple(open_terms), budget)


def test_key_terms_raw_whitespace_split():
    # lowercase, > 3 chars, stop words out, punctuation kept
    assert reasoning_key_terms("Who was BORN in Paris, France? the film") == ["born", "paris,", "france?", "film"]


def test_the_three_layouts_render_as_documented():
    facts = (fact("A", "one", 0), fact("B", "two", 1))
    ctx = SynthContext(facts, ("first", "second", "third"))
    assert ctx.text == "From query: first\nA | one\n\nFrom query: second\nB | two\n\nFrom query: third"
    assert ctx.rendering.fact_lines == (1, 4) and ctx.rendering.blank_lines == (2, 5)
    assert ctx.with_facts(facts[1:], "headed").text == "From query: second\nB | two"
    assert ctx.with_facts(facts, "facts").text == "A | one\nB | two"
    with pytest.raises(ValueError, match="hop 1, but there are 1 hops"):
        SynthContext(facts, ("only",))
    with pytest.raises(ValueError, match="layout"):
        SynthContext(facts, ("a", "b"), "pretty")


@PROPS
@given(compaction_requests())
def test_budget_never_exceeded_and_kept_facts_keep_context_order(req):
    res = LINE(req)
    assert res.used == req.budget.measure(res.text) <= req.budget.limit
    order = [req.context.rendering.fact_lines[req.facts.index(f)] for f in res.kept_facts]
    assert order == sorted(order)
    assert res.context.layout == "headed" and res.context.hop_queries == req.hop_queries


@PROPS
@given(compaction_requests(), st.sampled_from(["line", "evidence", "submodular"]))
def test_every_line_of_the_full_context_is_kept_or_dropped_once(req, strategy):
    res = make_compactor(strategy)(req)
    full = req.context.rendering
    kept = set(res.kept_facts)
    assert sorted([d.index for d in res.dropped] + [i for i, f in enumerate(req.facts) if f in kept]) == \
        list(range(len(req.facts)))
    dropped = res.dropped_lines()
    shown_headers = sum(1 for line in res.context.rendering.header_lines if line >= 0)
    assert len(dropped) + len(res.kept_facts) + shown_headers == full.line_count
    full_lines = full.text.split("\n") if full.line_count else []
    assert all(full_lines[d.position] == d.text for d in dropped)  # the test reads the text; the product does not


@PROPS
@given(compaction_requests())
def test_deterministic_and_idempotent(req):
    a, b = LINE(req), LINE(req)
    assert a.context == b.context and a.dropped == b.dropped
    again = LINE(CompactionRequest.of_context(req.question, a.context, req.budget))
    assert again.text == a.text


@PROPS
@given(compaction_requests())
def test_skip_never_truncate_every_budget_drop_still_does_not_fit(req):
    if req.budget.unit != "chars":
        return
    ranking = rank_facts(req)
    kept, dropped = fit_facts(ranking, req.budget.limit)
    text = req.context.with_facts([req.facts[i] for i in kept], "headed").text
    shown = {req.facts[i].hop for i in kept}
    for d in dropped:
        if d.reason == REASON_BUDGET:
            cost = len(d.fact.line) + (1 if text else 0) + (0 if d.fact.hop in shown else ranking.header_cost[d.fact.hop])
            assert len(text) + cost > req.budget.limit


def test_bands_open_terms_first_then_latest_hop_then_rest():
    facts = [fact("A", "old fact about nothing", 0), fact("B", "old fact about zebra", 0, 1), fact("C", "recent fact", 1)]
    req = request(facts, ("first", "second"), open_terms=["zebra"])
    assert [(band, i) for band, _, _, i in rank_facts(req).ranked] == [(0, 1), (1, 2), (2, 0)]
    assert LINE(req).text == req.context.text.replace("\n\n", "\n")  # all fits: headers, no blank line
    need = len("From query: first") + 1 + len("B | old fact about zebra")
    tight = LINE(request(facts, ("first", "second"), open_terms=["zebra"], budget=Budget(need, "chars")))
    assert tight.text == "From query: first\nB | old fact about zebra"
    assert {d.position: d.reason for d in tight.dropped_lines()} == {
        1: REASON_BUDGET, 3: REASON_BLANK, 4: REASON_ORPHAN_HEADER, 5: REASON_BUDGET,
    }


def test_a_packer_drops_every_hop_header():
    facts = [fact("A", "alpha river", 0), fact("B", "beta", 1)]
    res = make_compactor("evidence")(request(facts, ("first", "second"), question="alpha river"))
    assert {d.reason for d in res.dropped_lines() if d.text.startswith("From query:")} == {REASON_HOP_HEADER}
    assert res.context.layout == "facts"


def test_query_overlap_orders_within_a_band_then_position():
    facts = [fact("A", "river"), fact("B", "alpha river", index=1), fact("C", "nothing", index=2)]
    res = LINE(CompactionRequest("alpha river", SynthContext(tuple(facts), (), "facts"), (),
                                 Budget(len("B | alpha river"), "chars")))
    assert res.text == "B | alpha river"


def test_pinned_fact_too_big_is_skipped_and_a_smaller_one_kept():
    facts = [fact("A", "zebra " + "x" * 100), fact("B", "small", index=1)]
    res = LINE(CompactionRequest("", SynthContext(tuple(facts), (), "facts"), ("zebra",), Budget(20, "chars")))
    assert res.text == "B | small"
    assert res.dropped[0].reason == REASON_BUDGET


def test_duplicate_lines_are_recorded():
    facts = [fact("A", "x", pid="p1"), fact("A", "x", pid="p2")]
    res = LINE(request(facts, ("q",)))
    assert res.text == "From query: q\nA | x"
    assert [(d.index, d.reason) for d in res.dropped] == [(1, REASON_DUPLICATE)]


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, None])
def test_bad_budget_raises(bad):
    with pytest.raises(ValueError, match="max_chars"):
        fit_facts(rank_facts(request([fact("A", "x")], ("q",))), bad)


def test_hits_are_whole_whitespace_tokens_of_the_lowercased_line():
    facts = [fact("A", "reborn films"), fact("B", "Film\u00a0x", index=1), fact("C", "new york", index=2),
             fact("D", "the film?", index=3)]
    ranking = rank_facts(request(facts, ("q",), open_terms=["FILM", "new york"]))
    # only "Film" (bounded by a no-break space) is a token equal to an open term; a term with
    # a space is never a token; "films", "reborn" and "film?" are other tokens
    assert [(band, i) for band, _, _, i in ranking.ranked if band == 0] == [(0, 1)]


@given(req=compaction_requests(), keep=st.lists(st.booleans(), max_size=14))
@settings(max_examples=200, deadline=None)
def test_a_request_over_a_synth_context_keeps_its_facts_and_hop_queries(req, keep):
    """``CompactionRequest.of_context`` (a reader fitting its window compacts the synth context
    again): the same facts and hop queries, in the full layout, no open terms."""
    sub = req.context.with_facts([f for f, k in zip(req.facts, keep) if k], "headed")
    again = CompactionRequest.of_context(req.question, sub, req.budget)
    assert again.facts == sub.facts and again.hop_queries == req.hop_queries and again.open_terms == ()
    assert again.context.layout == "full"
