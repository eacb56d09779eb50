"""The ``evidence`` packing policy: budget and verbatim properties, exact cover, compactor use."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import budgets, candidate_lists, queries

from rootweaver_innovations.compaction.evidence import EvidenceParams, ProblemFeatures, score
from rootweaver_innovations.compaction.evidence.cues import lead_entity as _lead_entity
from rootweaver_innovations.compaction.evidence.links import holders as _holders
from rootweaver_innovations.compaction.packing import POLICIES, Budget, Candidate, EvidenceModel, fact_candidates, pack
from rootweaver_innovations.compaction.packing.evidence_policy import _cover, evidence_policy
from rootweaver_innovations.compaction.packing.knapsack import Knapsack
from rootweaver_innovations.compaction.packing.objective import query_incidence
from rootweaver_innovations.compaction.packing.policies import PackingProblem
from rootweaver_innovations.records import Fact


def _titled(cands: list[Candidate], titled: list[bool]) -> list[Candidate]:
    """Give some candidates a ``source`` title naming another document (bridge features fire)."""
    return [c._replace(source=f"{c.doc_id} alpha") if t else c for c, t in zip(cands, titled)]


@settings(max_examples=1000, deadline=None)
@given(
    candidate_lists(max_size=8), queries, budgets, st.one_of(st.none(), st.integers(1, 4)),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_budget_holds_output_is_verbatim_and_every_candidate_is_accounted_for(cands, query, budget, cap, titled):
    cands = _titled(cands, titled)
    res = pack("evidence", cands, query, budget, max_snippets=cap)
    # never over budget, measured on the rendered text in the budget's unit
    assert res.used == budget.measure(res.text) <= budget.limit
    # whole candidate texts only (verbatim), in position order, joined by the separator
    assert res.text == budget.separator.join(p.candidate.text for p in res.packet)
    by_id = {c.id: c for c in cands}
    assert all(p.candidate == by_id[p.candidate.id] for p in res.packet)
    assert [p.candidate.position for p in res.packet] == sorted(p.candidate.position for p in res.packet)
    # every input once, packet or omission; the cap holds; deterministic
    assert sorted([p.candidate.id for p in res.packet] + [o.id for o in res.omissions]) == sorted(by_id)
    assert cap is None or len(res.packet) <= cap
    assert res == pack("evidence", cands, query, budget, max_snippets=cap)


def _problem(cands: list[Candidate], query: str, budget: Budget) -> PackingProblem:
    texts = [c.text for c in cands]
    docs: dict[str, int] = {}
    doc_index = np.array([docs.setdefault(c.doc_id, len(docs)) for c in cands], dtype=np.int64)
    relevance = np.array([c.relevance for c in cands])
    _terms, incidence = query_incidence(query, texts)
    return PackingProblem(
        candidates=tuple(cands), query=query, relevance=relevance, doc_index=doc_index,
        incidence=incidence, knapsack=Knapsack(budget, texts), max_snippets=None,
    )


def _value(chosen, p, bonus, problem, params):
    """The cover objective of a set: per covered document its bonus, per sentence p - price."""
    covered = {int(problem.doc_index[i]) for i in chosen}
    return sum(bonus[d] for d in covered) + sum(p[i] - params.price for i in chosen)


@settings(max_examples=300, deadline=None)
@given(
    candidate_lists(min_size=1, max_size=7), queries, st.integers(min_value=1, max_value=40),
    st.sampled_from([0.0, 0.5, 3.0]), st.sampled_from([0.0, 0.02, 0.3]), st.integers(1, 3), st.sampled_from([1, 2]),
)
def test_cover_is_the_brute_force_optimum(cands, query, limit, coverage, price, options, per_doc):
    params = EvidenceParams(coverage=coverage, price=price, options_per_doc=options, max_per_doc=per_doc)
    problem = _problem(cands, query, Budget.chars(limit))
    p, q = score(problem)
    bonus = coverage * q
    cost, cap = problem.knapsack.item, problem.knapsack.capacity
    allowed = set()  # each document's `options` best sentences by p (ties by input order) and its cheapest
    for d in set(problem.doc_index.tolist()):
        members = sorted((i for i in range(len(cands)) if problem.doc_index[i] == d), key=lambda i: (-p[i], i))
        allowed |= set(members[:options]) | {min(members, key=lambda i: cost[i])}
    best = 0.0
    for k in range(len(cands) + 1):
        for subset in itertools.combinations(sorted(allowed), k):
            per = np.bincount(problem.doc_index[list(subset)], minlength=1) if subset else np.zeros(1)
            if cost[list(subset)].sum() <= cap and per.max() <= per_doc:
                best = max(best, _value(subset, p, bonus, problem, params))
    chosen = _cover(p, bonus, problem, params)
    assert cost[chosen].sum() <= cap
    assert _value(chosen, p, bonus, problem, params) == pytest.approx(best, abs=1e-9)


def test_a_large_coverage_weight_covers_every_document_that_fits():
    # doc A's two sentences are the most relevant; naive fills the budget with them, the
    # evidence packer with a coverage weight far above any answer share (<= 1) must cover B as well.
    cands = [
        Candidate("a0", "A", "Paris capital city alpha beta", 0, 3.0),
        Candidate("a1", "A", "Paris capital city gamma delta", 1, 2.9),
        Candidate("b0", "B", "river song", 2, 0.1),
    ]
    budget = Budget.chars(61)  # costs len+1: 30, 31, 11 vs capacity 62: a0+a1 = 61 fits, all three (72) do not
    assert pack("naive", cands, "Paris capital", budget).ids == ("a0", "a1")
    model = dataclasses.replace(EvidenceModel.load(), params=EvidenceParams(coverage=1000.0))
    POLICIES["test-evidence-bonus"] = functools.partial(evidence_policy, model=model)
    try:
        res = pack("test-evidence-bonus", cands, "Paris capital", budget)
    finally:
        del POLICIES["test-evidence-bonus"]
    assert {p.candidate.doc_id for p in res.packet} == {"A", "B"}


def test_everything_that_fits_is_kept_whole_and_shares_are_a_distribution():
    cands = [Candidate(f"c{i}", "AB"[i % 2], t, i, r) for i, t, r in
             [(0, "Alice Smith was born in 1950.", 1.0), (1, "She wrote Bob Jones's biography.", 0.5)]]
    res = pack("evidence", cands, "When was Alice Smith born?", Budget.tokens(100))
    assert res.ids == ("c0", "c1") and res.omissions == ()
    problem = _problem(cands, "When was Alice Smith born?", Budget.tokens(100))
    q = score(problem).documents
    features = ProblemFeatures(problem)
    feats = features.sentences(q)
    model = EvidenceModel.load()
    assert set(model.sentence_weights) <= set(feats) and set(model.document_weights) <= set(features.documents())
    # the year cue fires on the when-question's sentence with a year, not on the other
    assert np.asarray(feats["year_cue"]).tolist() == [1.0, 0.0]
    p = score(problem).answers
    assert np.all(p > 0) and p.sum() == pytest.approx(1.0)
    assert q.shape == (2,) and np.all((q > 0) & (q < 1))


def _stadium_problem(titles: tuple[str, str, str], id_titles: tuple[bool, bool, bool] = (False, False, False)):
    """Documents A (named by the question, names B), C (unrelated, ranked second) and B,
    titled ``titles`` (``id_titles``: which are ids); the question asks for B's opening year."""
    cands = [
        Candidate("a0", "A", "Alpha Club is a football club that plays at Beta Park.", 0, 2.0, source=titles[0],
                  id_title=id_titles[0]),
        Candidate("c0", "C", "Gamma is a football club in another town.", 1, 0.3, source=titles[1],
                  id_title=id_titles[1]),
        Candidate("b0", "B", "Beta Park is a stadium opened in 1921.", 2, 0.3, source=titles[2],
                  id_title=id_titles[2]),
    ]
    return _problem(cands, "When did the stadium of Alpha Club open?", Budget.tokens(100))


def test_a_document_the_question_names_and_the_one_it_links_to_are_likelier_evidence():
    # A is named by the question and names B; C is an unrelated document ranked second, as
    # relevant as B: the title links must lift B above C.
    problem = _stadium_problem(("Alpha Club", "Gamma", "Beta Park"))
    q = score(problem).documents
    assert q[0] > q[1] and q[2] > q[1]


def test_without_titles_the_lead_entities_still_link_the_documents():
    # The same three documents with opaque ids as titles: A's lead entity is in the question
    # and A names B's lead entity ("Beta Park"); the title links are all off.
    problem = _stadium_problem(("doc-1", "doc-2", "doc-3"))
    feats = ProblemFeatures(problem).documents()
    assert feats["title_in_question"].tolist() == [False, False, False]  # titles say nothing
    assert feats["entity_in_question"].tolist() == [1.0, 0.0, 0.0]
    assert feats["entity_named_by_other"].tolist() == [False, False, True]
    assert feats["entity_names_other"].tolist() == [True, False, False]
    assert score(problem).documents[0] > 0.5  # the document the question names


@pytest.mark.parametrize("titles", [("Alpha Club", "Gamma", "Beta Park"), ("doc-1", "doc-2", "doc-3")])
def test_named_by_relevance_is_the_relevance_of_the_sentence_naming_a_document(titles):
    # B is named (by title, or by its lead entity "Beta Park" without titles) in A's sentence,
    # the most relevant one; nothing names A or C.
    feats = ProblemFeatures(_stadium_problem(titles)).documents()
    assert feats["named_by_relevance"].tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("text", "entity"),
    [("The Oberoi Group is a hotel company.", "oberoi group"), ("Arthur's Magazine (1844–1846) was a", "arthur's magazine"),
     ("University of Notre Dame du Lac, is", "university of notre dame du lac"), ("He was born in 1950.", ""),
     ("In 1912, the Republic was founded.", ""), ("Fort Dodge is a city.", "fort dodge"), ("", "")],
)
def test_the_lead_entity_is_the_capitalised_name_a_sentence_opens_with(text, entity):
    assert _lead_entity(text) == entity


def test_hop_and_sub_query_come_from_the_fact_and_feed_the_follow_up_features():
    facts = [Fact("p1", "doc-p1", "Anna Benson is a model, the ex-wife of Kris Benson.", 0, hop=0,
                  sub_query="What team was Anna Benson's husband on?"),
             Fact("p2", "doc-p2", "Benson was drafted by the Pittsburgh Pirates in 1996.", 0, hop=1,
                  sub_query="Kris Benson team husband")]
    cands = fact_candidates("What team was Anna Benson's husband on?", facts)
    assert [(c.hop, c.sub_query) for c in cands] == [(f.hop, f.sub_query) for f in facts]
    problem = _problem(cands, "What team was Anna Benson's husband on?", Budget.tokens(100))
    doc = ProblemFeatures(problem).documents()
    assert doc["hop_1"].tolist() == [False, True] and doc["hop_2+"].tolist() == [False, False]
    sent = ProblemFeatures(problem).sentences(score(problem).documents)
    assert sent["sub_query_entity"].tolist() == [0.0, 0.0]  # "kris benson" is not in the second sentence
    assert sent["sub_query_coverage"][1] > 0  # "team" of the sub-query is not; "benson" is
    with pytest.raises(ValueError, match="hop"):
        cands[0]._replace(hop=-1)


def test_fact_candidates_fill_every_field_by_name_and_pass_validation():
    """fact_candidates builds its tuples unchecked and by position: a field order change must fail here."""
    facts = [Fact("p7", "Title T", "Sentence  one\nhere.", 3, hop=2, sub_query="the sub query", rank=1, score=2.5),
             Fact("p9", "Other", "   ", 0), Fact("p9", "Other", "Sentence two.", 1, hop=0, sub_query="q"),
             Fact("p8", "Misc", "Nothing relevant at all.", 0)]
    cands = fact_candidates("one title", facts)
    assert [Candidate(*c) for c in cands] == cands  # every field passes the constructor's checks
    first, second, _third = cands
    assert first == Candidate(id="p7#3", doc_id="p7", text="Title T | Sentence one here.", position=0,
                              relevance=first.relevance, source="Title T", body="Sentence one here.", hop=2,
                              sub_query="the sub query")
    assert (second.id, second.position, second.version, second.hop) == ("p9#1", 1, None, 0)
    assert type(first.relevance) is float and first.relevance > second.relevance >= 0.0
    assert not first.id_title
    windows = [Fact("w1", "doc-9.txt", "He won the prize.", 0, id_title=True, subject="Albert Einstein"),
               Fact("w2", "doc-8.txt", "It rained.", 0, id_title=True)]
    named, unnamed = fact_candidates("who won", windows)
    assert (named.source, named.id_title, named.text) == ("Albert Einstein", True, "Albert Einstein | He won the prize.")
    assert (unnamed.source, unnamed.id_title) == ("doc-8.txt", True)  # no subject known: the id stays the title
    with pytest.raises(ValueError, match="id_title must be a bool"):
        named._replace(id_title=1)



def test_chunks_of_one_titled_part_of_a_file_are_one_document_to_the_packers():
    from rootweaver_innovations.documents.corpus import Source

    a0, a1 = Source("a.txt", position=0, next="a.txt#1"), Source("a.txt", position=1, prev="a.txt#0")
    facts = [Fact("a.txt#0", "Das Damen", "Das Damen was a band.", 0, source=a0),
             Fact("a.txt#1", "Das Damen", "The band split in 1991.", 0, source=a1),
             Fact("a.txt#1", "Volbeat", "Volbeat is a band.", 1, source=a1),
             Fact("p1", "Das Damen", "Das Damen was a band.", 0), Fact("p2", "Das Damen", "It split.", 0)]
    docs = [c.doc_id for c in fact_candidates("which band", facts)]
    assert docs[0] == docs[1] and len(set(docs[1:3])) == 2  # same file and title; another title in it
    assert docs[3:] == ["p1", "p2"] and docs[0] not in docs[3:]  # no source: each passage is its own

@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"coverage": -1}, "coverage must be a finite number >= 0, got -1"),
     ({"coverage": float("nan")}, "coverage must be a finite number >= 0, got nan"),
     ({"price": True}, "price must be a finite number >= 0, got True"),
     ({"options_per_doc": 0}, "options_per_doc must be an int >= 1, got 0"),
     ({"max_per_doc": 3}, "max_per_doc must be 1 or 2, got 3")],
)
def test_bad_params_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        EvidenceParams(**kwargs)


def test_the_model_file_names_features_and_provenance_and_bad_files_are_one_line_errors(tmp_path):
    model = EvidenceModel.load()
    assert model.provenance["rows"].startswith("even-indexed") and "command" in model.provenance
    assert EvidenceModel.from_mapping(model.to_mapping()).to_mapping() == model.to_mapping()
    bad = tmp_path / "m.json"
    bad.write_text('{"format": 2}')
    with pytest.raises(ValueError, match=f"{bad}: not an evidence model file"):
        EvidenceModel.load(bad)
    unknown = dataclasses.replace(model, sentence_weights={**model.sentence_weights, "no_such_feature": 1.0})
    cands = [Candidate("a", "A", "Alpha was born in 1950.", 0, 1.0), Candidate("b", "B", "Beta.", 1, 0.5)]
    with pytest.raises(ValueError, match="no_such_feature"):
        unknown.score(_problem(cands, "When was Alpha born?", Budget.chars(100)))


def test_problems_titled_only_by_ids_are_scored_with_the_untitled_weights(tmp_path):
    shipped = EvidenceModel.load()
    assert shipped.untitled is not None and shipped.untitled.provenance["rows"].startswith("even-indexed")
    titled_only = dataclasses.replace(shipped, untitled=None)
    untitled = shipped.untitled
    by_ids = _stadium_problem(("Alpha Club", "doc-2", "Beta Park"), (True, True, True))  # subjects where known
    mixed = _stadium_problem(("doc-1", "Gamma", "doc-3"), (True, False, True))
    titled = _stadium_problem(("Alpha Club", "Gamma", "Beta Park"))
    for problem, used in ((by_ids, untitled), (mixed, titled_only), (titled, titled_only)):
        got, want = shipped.score(problem), used.score(problem)
        assert np.array_equal(got.answers, want.answers) and np.array_equal(got.documents, want.documents)
    assert not np.array_equal(shipped.score(by_ids).documents, titled_only.score(by_ids).documents)
    # the section survives the file round trip; a broken one is the file's one-line error
    raw = shipped.to_mapping()
    assert EvidenceModel.from_mapping(raw).untitled.to_mapping() == untitled.to_mapping()
    del raw["untitled"]["sentence"]
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=f"{bad}: not an evidence model file"):
        EvidenceModel.load(bad)


def test_wording_features_read_the_bare_sentence_not_the_rendered_title():
    plain = Candidate("a", "A", "He was born in Paris.", 0, 1.0, source="Alpha")
    rendered = plain._replace(text="Alpha | He was born in Paris.", body="He was born in Paris.")
    feats = [ProblemFeatures(pr).sentences(score(pr).documents) for pr in
             (_problem([c], "Where was Alpha born?", Budget.chars(100)) for c in (plain, rendered))]
    assert feats[0]["pronoun_start"].tolist() == feats[1]["pronoun_start"].tolist() == [1.0]
    assert feats[1]["starts_with_title"].tolist() == [0.0]


@settings(max_examples=200, deadline=None)
@given(candidate_lists(min_size=1, max_size=8), queries, st.integers(min_value=1, max_value=60), st.integers(1, 3))
def test_the_cover_only_considers_the_documents_with_the_largest_bonus(cands, query, limit, max_docs):
    params = EvidenceParams(max_cover_docs=max_docs)
    problem = _problem(cands, query, Budget.chars(limit))
    p, q = score(problem)
    bonus = params.coverage * q
    allowed = set(np.argsort(-bonus, kind="stable")[:max_docs].tolist())
    chosen = _cover(p, bonus, problem, params)
    assert {int(problem.doc_index[i]) for i in chosen} <= allowed
    assert problem.knapsack.item[chosen].sum() <= problem.knapsack.capacity


_ALPHABET = st.sampled_from("ab\n é")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=12), min_size=1, max_size=6), st.lists(st.text(_ALPHABET, max_size=4), max_size=6))
def test_the_name_search_finds_each_name_in_exactly_the_texts_holding_it(texts, names):
    """One pass for all names (overlapping, repeated, empty, or holding the separator) gives,
    per name, the texts containing it as a substring, in order."""
    texts = [t.replace("\n", " ") for t in texts]  # a text is one line; names may still hold "\n"
    joined = "\n".join(texts)
    ends = list(itertools.accumulate(len(t) + 1 for t in texts))
    found = _holders(names, joined, ends)
    assert set(found) == set(names)
    for name in names:
        assert found[name] == [i for i, t in enumerate(texts) if name and name in t]
