"""The selection contract, applied by every packer, and the hand-off record."""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.packing import (
    POLICIES,
    Budget,
    Candidate,
    ConflictingCandidateError,
    PackingProblem,
    Selection,
    SubmodularWeights,
    dense_similarity,
    pack,
    register_policy,
)
from rootweaver_innovations.compaction.packing.selection import (
    REASON_BUDGET,
    REASON_DUPLICATE_ID,
    REASON_DUPLICATE_TEXT,
    REASON_NOT_SELECTED,
    REASON_SNIPPET_CAP,
    REASON_VERSION_CONFLICT,
    screen,
)
from strategies import budgets, candidate_lists, queries

BUILTIN = ("naive", "focused", "mmr", "submodular")


def cand(cid, text, rel=1.0, pos=0, doc="D", version=None, source=None):
    return Candidate(cid, doc, text, pos, rel, version, source)


# --- 1. same id: identical content merges, different content or provenance raises -------


@pytest.mark.parametrize("policy", BUILTIN)
def test_same_id_identical_content_is_merged(policy):
    a = cand("a", "alpha river", rel=2.0, pos=0)
    again = cand("a", "alpha river", rel=1.0, pos=5)  # same content, lower rank
    res = pack(policy, [again, a, cand("b", "beta")], "alpha", Budget.chars(100))
    assert sorted(res.ids) == ["a", "b"]
    [merged] = res.omissions
    assert (merged.candidate, merged.reason, merged.detail) == (again, REASON_DUPLICATE_ID, ("a",))


@pytest.mark.parametrize(
    "other",
    [
        cand("a", "different text"),
        cand("a", "alpha river", doc="E"),
        cand("a", "alpha river", source="wiki"),
        cand("a", "alpha river", version="v2"),
    ],
)
def test_same_id_with_different_content_or_provenance_raises(other):
    with pytest.raises(ConflictingCandidateError, match="'a'"):
        pack("naive", [cand("a", "alpha river"), other], "alpha", Budget.chars(100))
    assert issubclass(ConflictingCandidateError, ValueError)


# --- 2. exact duplicate text under different ids: first-ranked copy kept ----------------


@pytest.mark.parametrize("policy", BUILTIN)
def test_duplicate_text_keeps_the_first_ranked_copy_and_records_the_others(policy):
    low = cand("early", "same words", rel=0.5, pos=0)
    high = cand("late", "same words", rel=2.0, pos=3)  # ranks first despite its position
    tie = cand("later", "same words", rel=0.5, pos=4)
    res = pack(policy, [low, high, tie], "words", Budget.chars(100))
    assert res.ids == ("late",)
    assert {(o.id, o.reason, o.detail) for o in res.omissions} == {
        ("early", REASON_DUPLICATE_TEXT, ("late",)),
        ("later", REASON_DUPLICATE_TEXT, ("late",)),
    }


def test_near_duplicate_text_is_not_deduplicated():
    res = pack("naive", [cand("a", "same words"), cand("b", "same words.")], "", Budget.chars(100))
    assert sorted(res.ids) == ["a", "b"]


# --- 3. several version labels for one source: source blocked, labels recorded -----------


@pytest.mark.parametrize("policy", BUILTIN)
def test_version_conflict_blocks_the_source_and_records_labels(policy):
    hours_v1 = cand("h1", "opens at 9", doc="hours", version="2", rel=3.0)
    hours_v2 = cand("h2", "opens at 10", doc="hours", version="10", rel=2.0)
    hours_plain = cand("h3", "closed sundays", doc="hours", rel=2.5)  # same source, no label
    returns = cand("r1", "return box by the door", doc="returns", version="1")
    res = pack(policy, [hours_v1, hours_v2, hours_plain, returns], "opens", Budget.chars(200))
    assert res.ids == ("r1",)
    blocked = [o for o in res.omissions if o.reason == REASON_VERSION_CONFLICT]
    assert sorted(o.id for o in blocked) == ["h1", "h2", "h3"]
    assert {o.detail for o in blocked} == {("10", "2")}  # sorted labels, no "newest" guess


def test_version_source_key_prefers_source_over_doc_id_and_same_label_is_fine():
    a = cand("a", "text one", doc="d1", source="S", version="1")
    b = cand("b", "text two", doc="d2", source="S", version="2")
    c = cand("c", "text three", doc="d1", version="1")
    d = cand("d", "text four", doc="d1", version="1")
    res = screen([a, b, c, d])
    assert [x.id for x in res.eligible] == ["c", "d"]  # source S blocked; doc d1 has one label
    assert sorted(o.id for o in res.omissions) == ["a", "b"]


# --- 4. skip, never truncate; smaller later candidates are still tried ------------------


@pytest.mark.parametrize("policy", BUILTIN)
def test_too_big_is_skipped_not_truncated_and_smaller_ones_still_fit(policy):
    # The lab example: lengths 150, 30, 40 under 80 (no separator): the first is skipped,
    # the other two fit whole, 70 chars used.
    big, mid, small = cand("big", "b" * 150, rel=3.0), cand("mid", "m" * 30, rel=2.0, pos=1), cand(
        "small", "s" * 40, rel=1.0, pos=2
    )
    res = pack(policy, [big, mid, small], "", Budget(80, "chars", separator=""))
    assert res.ids == ("mid", "small")
    assert res.text == "m" * 30 + "s" * 40 and res.used == 70
    assert res.omitted(REASON_BUDGET) == ("big",)


def test_not_selected_and_snippet_cap_reasons():
    cs = [cand(f"c{i}", f"word{i} alpha", rel=1.0 - i / 10, pos=i) for i in range(4)]
    capped = pack("naive", cs, "alpha", Budget.chars(500), max_snippets=2)
    assert capped.ids == ("c0", "c1") and capped.omitted(REASON_SNIPPET_CAP) == ("c2", "c3")
    # the focused heuristic fills the budget; submodular with every weight but relevance 0
    # stops once nothing adds positive gain: zero-relevance candidates are not_selected.
    zero = [cand("r", "alpha", rel=1.0), cand("z", "zeta", rel=0.0, pos=1), cand("y", "x " * 40, pos=2)]
    only_rel = SubmodularWeights(w_qry=0, w_cov=0, w_div=0)
    res = pack("submodular", zero, "alpha", Budget.chars(12), weights=only_rel)
    assert res.ids == ("r",)
    assert res.omitted(REASON_NOT_SELECTED) == ("z",) and res.omitted(REASON_BUDGET) == ("y",)


# --- 5. the record: packet apart from omissions, every input accounted once -------------


@settings(max_examples=1000, deadline=None)
@given(candidate_lists(max_size=7, versions=True), queries, budgets, st.one_of(st.none(), st.integers(1, 4)))
def test_budget_holds_and_every_candidate_is_accounted_for_all_four_packers(cands, query, budget, cap):
    for policy in BUILTIN:
        res = pack(policy, cands, query, budget, max_snippets=cap)
        # never over budget, measured on the rendered text in the budget's unit
        assert res.used == budget.measure(res.text) <= budget.limit
        if budget.unit == "tokens":
            assert res.tokens == res.used
        # whole candidates only, in position order, joined by the separator
        assert res.text == budget.separator.join(p.candidate.text for p in res.packet)
        assert [p.candidate.position for p in res.packet] == sorted(p.candidate.position for p in res.packet)
        # every input exactly once, in the packet or among the omissions
        assert sorted([p.candidate.id for p in res.packet] + [o.id for o in res.omissions]) == sorted(
            c.id for c in cands
        )
        if cap is not None:
            assert len(res.packet) <= cap


def test_pack_is_deterministic_and_reports_similarity_and_objective():
    cs = [cand(f"c{i}", t, rel=r, pos=i, doc=d) for i, (t, r, d) in enumerate(
        [("Paris capital France", 2.0, "P"), ("Paris city lights", 1.5, "P"), ("France river Seine", 1.0, "F")]
    )]
    a = pack("submodular", cs, "capital of France", Budget.tokens(12))
    assert a == pack("submodular", cs, "capital of France", Budget.tokens(12))
    assert a.similarity == "tfidf" and 0 < a.objective <= 2.2 and a.unit == "tokens"
    emb = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    d = pack("submodular", cs, "capital of France", Budget.tokens(12), similarity=dense_similarity(emb))
    assert d.similarity == "dense"


class _Superadditive:
    """A counter whose count of a join exceeds the sum of the parts' counts."""

    name = "superadditive"

    def count(self, text: str) -> int:
        return len(text) + (len(text) // 5) ** 2


def test_real_token_count_is_enforced_even_for_a_non_additive_tokenizer():
    cs = [cand(f"c{i}", "abcd", rel=1.0, pos=i) for i in range(3)]
    cs = [c._replace(text=f"abc{i}") for i, c in enumerate(cs)]
    budget = Budget.tokens(14, counter=_Superadditive())
    # parts: "abcX" 4 + "\n" 1 = 5 each, capacity 14 + 1 = 15: the ledger admits all three,
    # but the joined 14-char text counts 14 + 2**2 = 18 > 14; the last picks are dropped
    # until the real count fits ("abc0\nabc1": 9 + 1 = 10).
    res = pack("naive", cs, "", budget)
    assert res.ids == ("c0", "c1") and res.used == 10
    assert res.omitted(REASON_BUDGET) == ("c2",)


# --- 6. labels never reach a selector; registry; validation ----------------------------


def test_no_selector_input_can_carry_gold_labels():
    names = set(inspect.signature(pack).parameters)
    names |= set(Candidate._fields)
    names |= {f.name for f in dataclasses.fields(PackingProblem)}
    assert not {n for n in names if any(w in n for w in ("gold", "answer", "label", "support"))}


def test_registry_lists_policies_and_accepts_new_ones():
    assert set(BUILTIN) <= set(POLICIES)
    with pytest.raises(ValueError, match="choose one of"):
        pack("nope", [], "", Budget.chars(10))
    with pytest.raises(ValueError, match="already registered"):
        register_policy("naive", POLICIES["naive"])

    def first_only(problem: PackingProblem) -> Selection:
        return Selection((0,), (1.0,)) if problem.candidates else Selection((), ())

    def greedy_liar(problem: PackingProblem) -> Selection:
        return Selection((0, 1, 1), (1.0, 1.0, 1.0))

    register_policy("test-first-only", first_only)
    register_policy("test-invalid", greedy_liar)
    try:
        res = pack("test-first-only", [cand("a", "x", pos=0), cand("b", "y", pos=1)], "", Budget.chars(10))
        assert res.ids == ("a",) and res.omitted(REASON_NOT_SELECTED) == ("b",)
        with pytest.raises(ValueError, match="invalid selection"):
            pack("test-invalid", [cand("a", "x", pos=0), cand("b", "y", pos=1)], "", Budget.chars(10))
    finally:
        del POLICIES["test-first-only"], POLICIES["test-invalid"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Budget(0), "budget limit must be a positive int, got 0"),
        (lambda: Budget(10, "bytes"), "budget unit must be one of ['chars', 'tokens'], got 'bytes'"),
        (lambda: Budget(True), "budget limit must be a positive int, got True"),
        (lambda: Budget(10, "chars", counter=_Superadditive()), "a token counter only applies to unit='tokens'"),
        (lambda: Candidate("", "d", "t", 0, 1.0), "candidate id must be a non-empty str, got ''"),
        (lambda: Candidate("a", "d", "   ", 0, 1.0), "candidate 'a': text must be a str with visible content"),
        (lambda: Candidate("a", "d", "t", -1, 1.0), "candidate 'a': position must be an int >= 0, got -1"),
        (lambda: Candidate("a", "d", "t", 0, float("nan")),
         "candidate 'a': relevance must be a finite number >= 0, got nan"),
        (lambda: Candidate("a", "d", "t", 0, -0.5), "candidate 'a': relevance must be a finite number >= 0, got -0.5"),
        (lambda: pack("naive", [], "", Budget.chars(5), max_snippets=0),
         "max_snippets must be a positive int or None, got 0"),
        (lambda: pack("naive", [cand("a", "x")], "", Budget.chars(5), similarity=dense_similarity(np.eye(2))),
         "similarity must be a Similarity over the 1 candidates"),
        (lambda: screen(["not a candidate"]), "expected Candidate items, got str"),
    ],
)
def test_bad_inputs_raise_value_error(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_baselines_follow_their_rules():
    # naive: by relevance. focused: new query terms first, then a new document.
    # mmr: relevance minus redundancy with what is already packed.
    cs = [
        cand("a", "alpha beta", rel=3.0, pos=0, doc="A"),
        cand("a2", "beta alpha", rel=2.9, pos=1, doc="A"),  # same words: TF-IDF cosine 1 with "a"
        cand("b", "delta river", rel=2.0, pos=2, doc="B"),
    ]
    budget = Budget.chars(30)  # room for two of them (10 + 1 + 10 or 11 chars)
    assert pack("naive", cs, "alpha delta", budget).ids == ("a", "a2")
    assert pack("focused", cs, "alpha delta", budget).ids == ("a", "b")
    # mmr: after "a", a2 scores 0.7 * 2.9/3 - 0.3 * 1 = 0.377 < b's 0.7 * 2/3 - 0 = 0.467
    assert pack("mmr", cs, "alpha delta", budget).ids == ("a", "b")


def test_public_api_is_pinned():
    import rootweaver_innovations.compaction.packing as packing
    import rootweaver_innovations.compaction.packing.selection as selection

    assert sorted(packing.__all__) == sorted([
        "Budget", "Candidate", "ConflictingCandidateError", "EvidenceModel", "EvidenceParams", "Header", "Omission",
        "POLICIES", "PackResult", "Packed", "PackingProblem", "QwenTokenCounter", "Selection", "Similarity",
        "SubmodularObjective", "SubmodularWeights", "TokenCounter", "UNITS", "default_token_counter",
        "dense_similarity", "fact_candidates", "pack", "packing_problem", "register_policy", "tfidf_similarity",
    ])
    assert all(getattr(packing, name) is not None for name in packing.__all__)
    assert set(selection.REASONS) == {
        "duplicate_id", "version_conflict", "duplicate_text", "budget", "snippet_cap", "not_selected",
    }


@pytest.mark.parametrize("first", ["rootweaver_innovations.compaction.packing.selection", "rootweaver_innovations.compaction.packing.policies"])
def test_modules_import_in_either_order(first):
    code = f"import {first}; import rootweaver_innovations.compaction.packing as p; [getattr(p, n) for n in p.__all__]"
    subprocess.run([sys.executable, "-c", code], check=True)
