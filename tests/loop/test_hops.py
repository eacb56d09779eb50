"""The evidence hop policy: title index, fitted schedules, budget, determinism, reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.documents.corpus import Passage, split_sentences
from rootweaver_innovations.loop.hops import (
    REASON_COMPARISON,
    REASON_FILL,
    REASON_QUESTION,
    REASON_QUESTION_ENTITY,
    REASON_SPAN,
    REASON_TITLE_LINK,
    HopPolicyParams,
    TitleIndex,
    load_hop_policy,
    title_keys,
)
from rootweaver_innovations.conventions.registry import get_conventions
from rootweaver_innovations.loop.multihop import (
    STOP_MAX_HOPS,
    STOP_NO_NEW_EVIDENCE,
    STOP_PASSAGE_BUDGET,
    MultiHopRAG,
)
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

REASONS = {REASON_QUESTION, REASON_COMPARISON, REASON_QUESTION_ENTITY, REASON_TITLE_LINK, REASON_SPAN, REASON_FILL}
GOLDEN_COVERAGE = Path(__file__).resolve().parents[2] / "evals" / "golden" / "trajectories_coverage.json"


def _p(pid: str, title: str, *sentences: str) -> Passage:
    return Passage(pid, title, tuple(sentences) or (f"{title}.",))


def test_title_keys_normalise_qualifiers_and_commas():
    assert title_keys("American Splendor (film)") == ("american splendor film", "american splendor")
    assert title_keys("Van Hook Township, Mountrail County, North Dakota")[-1] == "van hook township"
    assert title_keys("It") == () and title_keys("The Who") == ()  # too short / only stop words


def test_mentions_are_proper_nouns_longest_first_in_text_order():
    index = TitleIndex([_p("a", "Ernst Mach"), _p("b", "Mach"), _p("c", "Charles University (Prague)")])
    text = "He studied at Charles University under Ernst Mach; a mach number."
    assert [(m.key, m.surface) for m in index.mentions(text)] == [
        ("charles university", "Charles University"), ("ernst mach", "Ernst Mach")]
    assert [m.key for m in index.mentions("who taught at charles university?", proper_only=False)] == [
        "charles university"]
    assert [p.id for p in index.pages("ernst mach")] == ["a"] and index.pages("nobody") == ()


def test_opaque_titles_index_finds_no_links_when_no_lead_sentence_names_a_subject():
    index = TitleIndex([_p("p1", "doc-p1", "it is where Ernst Mach taught."), _p("p2", "doc-p2", "a city, Prague.")])
    assert index.mentions("Ernst Mach taught in Prague, see doc p2.") == []


def test_shipped_policy_loads_with_provenance_and_picks_schedules_by_budget():
    params = load_hop_policy()
    budgets = [b for b, _ in params.schedules]
    assert budgets == sorted(budgets) and 10 in budgets
    assert {"data", "rows", "date", "command"} <= set(params.provenance)
    assert "even" in params.provenance["rows"]
    assert params.for_budget(10) == dict(params.schedules)[10]
    assert params.for_budget(1) == params.schedules[0][1]  # below every fitted budget: the smallest
    assert params.for_budget(10_000) == params.schedules[-1][1]


@pytest.mark.parametrize("payload", [{}, {"schedules": {}}, {"schedules": {"10": {"first_hop": 4}}},
                                     {"schedules": {"0": json.loads(json.dumps({
                                         "first_hop": 1, "question_links": 1, "title_links": 1, "spans": 1,
                                         "span_sources": 1, "lead_sentences": 1, "link_depth": 10}))}}])
def test_malformed_policy_raises(payload):
    with pytest.raises(ValueError, match=r"(malformed hop policy|hop policy needs schedules)"):
        HopPolicyParams.from_mapping(payload)


@pytest.fixture(scope="module")
def rag(demo_retriever):
    return MultiHopRAG(demo_retriever)


def _ids(res) -> list[str]:
    return [pid for h in res.hops for pid in h.retrieved_ids]


def test_every_hop_says_why_and_the_first_is_the_question(rag, golden_questions):
    for q in golden_questions:
        res = rag.multi_hop_search(q.question)
        assert res.hops[0].sub_query == q.question and res.hops[0].reason == REASON_QUESTION
        assert {h.reason for h in res.hops} <= REASONS
        assert res.stop_reason in (STOP_PASSAGE_BUDGET, STOP_MAX_HOPS, STOP_NO_NEW_EVIDENCE)


def _comparison_corpus() -> list[Passage]:
    """Two compared people and a dozen notes that outrank one of them for the question itself."""
    notes = [Passage(f"d{i}", f"Lovelace note {i}", (f"Ada Lovelace was born first in story {i}, and born again "
                                                     "in the sequel; Lovelace first wrote it.",)) for i in range(12)]
    return [Passage("ada", "Ada Lovelace", ("Ada Lovelace (10 December 1815 - 1852) was an English mathematician.",)),
            Passage("cb", "Charles Babbage", ("Charles Babbage (26 December 1791 - 1871) was an English polymath.",)),
            *notes]


def test_comparison_question_gets_one_hop_per_compared_entity():
    """Hop 1 finds only Babbage's page; the compared entity it missed gets a hop of its own
    under ``wikipedia``, and none under ``plain``, which reads no question templates."""
    question = "Who was born first, Ada Lovelace or Charles Babbage?"
    for name, expected in (("wikipedia", [("Ada Lovelace born first charles babbage", ("ada",))]), ("plain", [])):
        conventions = get_conventions(name)
        res = MultiHopRAG(BM25Retriever(_comparison_corpus(), conventions=conventions)).multi_hop_search(question)
        assert res.hops[0].retrieved_ids == ("cb",)
        assert [(h.sub_query, h.retrieved_ids) for h in res.hops if h.reason == REASON_COMPARISON] == expected, name


def test_bridge_sub_queries_are_entity_plus_question_terms(rag, golden_questions):
    bridge = [h for q in golden_questions for h in rag.multi_hop_search(q.question).hops
              if h.reason in (REASON_TITLE_LINK, REASON_SPAN)]
    assert bridge, "the demo questions must exercise the bridge beam"
    assert all(len(h.sub_query.split()) < 25 for h in bridge)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_budget_hops_and_determinism(demo_retriever, golden_questions, data):
    q = golden_questions[data.draw(st.integers(0, len(golden_questions) - 1))].question
    max_passages = data.draw(st.integers(1, 16))
    max_hops = data.draw(st.integers(1, 12))
    rule = data.draw(st.sampled_from(("evidence", "coverage")))
    rag = MultiHopRAG(demo_retriever, max_passages=max_passages, max_hops=max_hops, stop_rule=rule)
    res = rag.multi_hop_search(q)
    ids = _ids(res)
    assert len(ids) <= max_passages and len(ids) == len(set(ids))
    assert 1 <= res.hop_count <= max_hops and all(h.retrieved_ids for h in res.hops)
    assert (res.stop_reason == STOP_PASSAGE_BUDGET) == (len(ids) >= max_passages) or res.hop_count == max_hops
    again = MultiHopRAG(demo_retriever, max_passages=max_passages, max_hops=max_hops, stop_rule=rule)
    assert again.multi_hop_search(q).trajectory() == res.trajectory()


def test_opaque_titles_loop_links_by_the_names_lead_sentences_give(demo_passages, golden_questions):
    opaque = [Passage(p.id, f"doc-{p.id}", p.sentences) for p in demo_passages]
    rag = MultiHopRAG(BM25Retriever(opaque))
    reasons = set()
    for q in golden_questions[:10]:
        res = rag.multi_hop_search(q.question)
        assert len(_ids(res)) <= 10 and res.hop_count >= 2
        reasons |= {h.reason for h in res.hops}
    assert REASON_TITLE_LINK in reasons  # linked by lead subjects: no title names an entity


def test_retriever_without_a_corpus_gets_an_empty_title_index(demo_retriever):
    class Bare:
        def search(self, query, k):
            return demo_retriever.search(query, k)

    rag = MultiHopRAG(Bare())
    assert len(rag.title_index) == 0
    assert rag.multi_hop_search("Who directed the film?").hop_count >= 1


def test_coverage_rule_reproduces_the_seed_trajectories(demo_retriever, golden_questions):
    pinned = json.loads(GOLDEN_COVERAGE.read_text())["questions"]
    rag = MultiHopRAG(demo_retriever, stop_rule="coverage", max_hops=5, max_passages=15)
    for q in golden_questions:
        res = rag.multi_hop_search(q.question)
        assert {"sub_queries": [h.sub_query for h in res.hops], "retrieved_ids": [list(h.retrieved_ids) for h in res.hops],
                "hop_count": res.hop_count, "stop_reason": res.stop_reason} == pinned[q.id], q.id


@pytest.mark.parametrize("kw", [{"max_passages": 0}, {"stop_rule": "oracle"}])
def test_bad_policy_construction_raises(demo_retriever, kw):
    with pytest.raises(ValueError, match=rf"^{next(iter(kw))} must be"):
        MultiHopRAG(demo_retriever, **kw)


def test_link_values_score_the_linked_rows_against_their_source(demo_retriever):
    from rootweaver_innovations.loop.hops import _link_values

    index = TitleIndex(demo_retriever.passages)
    query = "Ebla vizier Ibrium Ishar Damu"
    s = demo_retriever.scores(query)
    best, source, *_, fifth = demo_retriever.top_rows(query, 5)[0]
    rows = [best, fifth, 400]  # row 400 holds no query term
    values = _link_values(demo_retriever, index, query, source, rows, depth=3)
    assert values == {best: s[best] / s[source], fifth: s[fifth] / s[source], 400: 0.0}  # no depth cut
    assert values[best] > 1 > values[fifth] > 0

    class SearchOnly:  # a retriever that cannot score rows: its top `depth`, normalised by the best
        passages = demo_retriever.passages

        def search(self, q, k):
            return demo_retriever.search(q, k)

    hits = demo_retriever.top_rows(query, 2)
    cut = _link_values(SearchOnly(), index, query, source, [*hits[0], 400], depth=2)
    assert cut == {**{r: v / hits[1][0] for r, v in zip(*hits)}, 400: 0.0}


def test_a_linked_record_titled_by_an_id_brings_the_next_record_of_its_file():
    # windows a user cut from files, titled by the file: only b.txt's first window names Dwight Little
    windows = [Passage("a.txt#0", "a.txt", ("Last Rampage is a 1993 film directed by Dwight H. Little.",)),
               Passage("b.txt#0", "b.txt", ("Dwight Hubbard Little (born January 13, 1956) is an American director.",)),
               Passage("b.txt#1", "b.txt", ("His family lived in Cleveland, Ohio.",)),
               Passage("b.txt#2", "b.txt", ("He directed television.",))]
    fillers = [Passage(f"f{i}.txt#0", f"f{i}.txt", (f"The director of film number {i} lived in a town.",))
               for i in range(8)]
    question = "Where did the director of film Last Rampage live?"
    hops = MultiHopRAG(BM25Retriever(windows + fillers), max_passages=8).multi_hop_search(question).hops
    assert ("b.txt#0", "b.txt#1") in [h.retrieved_ids for h in hops]  # the window after, not the whole file
    assert "b.txt#2" not in {i for h in hops for i in h.retrieved_ids}
    # the same text under real titles: a titled page is a whole paragraph, nothing is added
    titled = [Passage(p.id, "Dwight H. Little" if p.id.startswith("b") else p.title, p.sentences) for p in windows]
    hops = MultiHopRAG(BM25Retriever(titled + fillers), max_passages=8).multi_hop_search(question).hops
    assert ("b.txt#0",) in [h.retrieved_ids for h in hops] and all(len(h.retrieved_ids) == 1 for h in hops[1:-1])


def test_hop_one_pulls_the_better_neighbour_of_each_window_it_reads():
    # hop 1 reads the middle window of c.txt; the window before it names the physicist
    windows = [Passage("c.txt#0", "c.txt", ("Marie Curie was a physicist and chemist who won two prizes.",)),
               Passage("c.txt#1", "c.txt", ("She studied radioactivity in Paris.",)),
               Passage("c.txt#2", "c.txt", ("Her daughter Irene continued the work.",))]
    fillers = [*(Passage(f"f{i}.txt#0", f"f{i}.txt", (f"Students in Paris studied radioactivity at school {i}.",))
                 for i in range(2)),
               *(Passage(f"g{i}.txt#0", f"g{i}.txt", (f"A town number {i} has a river.",)) for i in range(6))]
    question = "Which physicist studied radioactivity in Paris?"
    retriever = BM25Retriever(windows + fillers)
    head = load_hop_policy().for_budget(4).first_hop
    assert "c.txt#0" not in [h.passage.id for h in retriever.search(question, head)]
    first = MultiHopRAG(retriever, max_passages=4).multi_hop_search(question).hops[0]
    assert first.reason == REASON_QUESTION and "c.txt#1" in first.retrieved_ids[:head]
    assert first.retrieved_ids[head:] == ("c.txt#0",)  # scores higher than c.txt#2 (which shares no word)

    class SearchOnly:  # cannot score given rows: the window after is pulled
        passages = retriever.passages

        def search(self, q, k):
            return retriever.search(q, k)

    first = MultiHopRAG(SearchOnly(), max_passages=4).multi_hop_search(question).hops[0]
    assert "c.txt#2" in first.retrieved_ids
    # the same windows under real titles are pages, not windows of one file: nothing is pulled
    titled = [Passage(p.id, f"Curie part {k}", p.sentences) for k, p in enumerate(windows)]
    first = MultiHopRAG(BM25Retriever(titled + fillers), max_passages=4).multi_hop_search(question).hops[0]
    assert len(first.retrieved_ids) == load_hop_policy().for_budget(4).first_hop


def test_windows_of_one_file_read_in_turn_are_joined_into_whole_sentences():
    text = ("Marie Curie was a physicist and chemist. Curie was born in Warsaw and studied radioactivity in Paris. "
            "Curie married Pierre Curie.")
    words = text.split()  # three windows of 10 words, 4 shared with the next
    windows = [Passage(f"c.txt#{k}", "c.txt", split_sentences(" ".join(words[s:s + 10]), abbreviations=True))
               for k, s in enumerate(range(0, len(words) - 4, 6))]
    fillers = [Passage(f"f{i}.txt#0", f"f{i}.txt", (f"A town number {i} has a river.",)) for i in range(8)]
    res = MultiHopRAG(BM25Retriever(windows + fillers), max_passages=12).multi_hop_search("Where was Marie Curie born?")
    assert len(windows) == 3 and {w.id for w in windows} <= {i for h in res.hops for i in h.retrieved_ids}
    assert [f.sentence for f in res.facts if f.title == "c.txt"] == list(split_sentences(text))
    assert res.full_context.count("radioactivity") == 1  # the overlap is read once


def test_the_reader_sees_the_subject_of_a_window_in_the_middle_of_a_file():
    windows = [Passage("e.txt#0", "e.txt", ("Albert Einstein was a theoretical physicist born in Ulm.",)),
               Passage("e.txt#1", "e.txt", ("He received the Nobel Prize in Physics in 1921.",))]
    fillers = [Passage(f"f{i}.txt#0", f"f{i}.txt", (f"A town number {i} has a river.",)) for i in range(8)]
    res = MultiHopRAG(BM25Retriever(windows + fillers), max_passages=3).multi_hop_search("Who received the Nobel Prize in 1921?")
    lines = {f.passage_id: f.line for f in res.facts}
    assert "Albert Einstein | He received the Nobel Prize in Physics in 1921." in res.full_context
    assert all(not line.startswith("e.txt") for line in lines.values())  # never the id
