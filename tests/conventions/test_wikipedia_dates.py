"""Choice questions: their two options, and date comparisons read from each option's own
passage (or its director's), symmetric, and handed on to the reader when unsettled."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.conventions.wikipedia.dates import COMPARISON_METHOD, compare_dates, date_comparison_answer
from rootweaver_innovations.conventions.wikipedia.questions import choice_options
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.loop.multihop import Answer, MultiHopRAG
from rootweaver_innovations.compaction.packing import Budget
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.records import Fact

LEVERTOV = Fact("p1", "Denise Levertov", "Priscilla Denise Levertov (24 October 1923 – 20 December 1997) was a poet.", 0)
PEKAR = Fact("p2", "Harvey Pekar", "Harvey Lawrence Pekar (October 8, 1939 – July 12, 2010) was a comic writer.", 0)
PEKAR_LATER = Fact("p2", "Harvey Pekar", "In 1976 he began publishing American Splendor.", 3)
SPLENDOR = Fact("p3", "American Splendor", "American Splendor is a 1976 comic series by Harvey Pekar.", 0)


def test_born_earlier_reads_each_lead_sentence():
    found = compare_dates("Between Harvey Pekar and Denise Levertov who was born earlier?",
                          [PEKAR_LATER, SPLENDOR, PEKAR, LEVERTOV])
    assert found is not None
    assert found.answer == "Denise Levertov"
    assert found.years == (1939, 1923)
    assert found.facts == (PEKAR, LEVERTOV)


def test_younger_and_died_first_use_the_right_year():
    facts = [PEKAR, LEVERTOV]
    assert compare_dates("Who is younger, Harvey Pekar or Denise Levertov?", facts).answer == "Harvey Pekar"
    died = compare_dates("Who died first, Harvey Pekar or Denise Levertov?", facts)
    assert died.answer == "Denise Levertov" and died.years == (2010, 1997)


def test_a_year_run_into_a_word_is_still_read():
    lee = Fact("p5", "Harper Lee", "Nelle Harper Lee (April 28, 1926February 19, 2016) was an American novelist.", 0)
    found = compare_dates("Who was born first, Harvey Pekar or Harper Lee?", [PEKAR, lee])
    assert found.answer == "Harper Lee" and found.years == (1939, 1926)
    guitry = Fact("p6", "Sacha Guitry", 'Sacha Guitry( 21 February 188524 July 1957) was a French director.', 0)
    assert compare_dates("Who was born first, Harvey Pekar or Sacha Guitry?", [PEKAR, guitry]).years == (1939, 1885)
    assert compare_dates("Who died first, Harvey Pekar or Sacha Guitry?", [PEKAR, guitry]).years == (2010, 1957)


def test_release_years_come_from_any_own_sentence():
    films = [Fact("a", "Chicken Ranch (film)", "Chicken Ranch is a 1983 documentary film.", 0),
             Fact("b", "The End of Suburbia", "The film premiered on television.", 0),
             Fact("b", "The End of Suburbia", "It was released in 2004.", 2)]
    found = compare_dates("Which documentary was released first, Chicken Ranch or The End of Suburbia?", films)
    assert found.answer == "Chicken Ranch" and found.years == (1983, 2004)


def test_unsettled_questions_give_none():
    facts = [PEKAR, LEVERTOV]
    assert compare_dates("Who wrote American Splendor?", facts) is None  # not a comparison
    assert compare_dates("Who is more famous, Harvey Pekar or Denise Levertov?", facts) is None  # no direction
    assert compare_dates("Who was born first, Harvey Pekar or Robert Crumb?", facts) is None  # no passage for one
    assert compare_dates("Who was born first, Harvey Pekar or Denise Levertov?", [PEKAR_LATER, LEVERTOV]) is None
    assert compare_dates("Which film has the producer who was born first, Harvey Pekar or Denise Levertov?",
                         facts) is None  # another entity's date
    assert compare_dates("Which film has the director who was born first, Harvey Pekar or Denise Levertov?",
                         facts) is None  # no passage names a director
    same = Fact("p4", "Ann Corvell", "Ann Corvell (born 1939) is a sculptor.", 0)
    assert compare_dates("Who was born first, Harvey Pekar or Ann Corvell?", [PEKAR, same]) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(1000, 2099), st.integers(1000, 2099), st.sampled_from(["first", "later"]), st.booleans())
def test_answer_follows_the_years_whatever_the_option_order(y1, y2, word, swap):
    facts = [Fact("a", "Ann Corvell", f"Ann Corvell (born {y1}) is a sculptor.", 0),
             Fact("b", "Tomas Reyk", f"Tomas Reyk (born {y2}) is a painter.", 0)]
    left, right = ("Tomas Reyk", "Ann Corvell") if swap else ("Ann Corvell", "Tomas Reyk")
    found = compare_dates(f"Who was born {word}, {left} or {right}?", facts)
    if y1 == y2:
        assert found is None
    else:
        earlier = "Ann Corvell" if y1 < y2 else "Tomas Reyk"
        later = "Tomas Reyk" if earlier == "Ann Corvell" else "Ann Corvell"
        assert found.answer == (earlier if word == "first" else later)


FILMS = [
    Fact("f1", "Freeway (1996 film)", "Freeway is a 1996 American crime film.", 0),
    Fact("f1", "Freeway (1996 film)", "It was written and directed by Matthew Bright, and stars Reese Witherspoon.", 1),
    Fact("f2", "Forget Paris", "Forget Paris is a 1995 romantic comedy film directed by Billy Crystal.", 0),
    Fact("d1", "Matthew Bright", "Matthew Bright (born 1952) is an American screenwriter and director.", 0),
    Fact("d2", "Billy Crystal", "William Edward Crystal (born March 14, 1948) is an American actor.", 0),
]


def test_director_comparisons_follow_directed_by_to_the_director_passage():
    found = compare_dates("Which film has the director who was born first, Freeway (1996 Film) or Forget Paris?",
                          FILMS)
    assert found.answer == "Forget Paris" and found.years == (1952, 1948)
    assert found.facts == (FILMS[1], FILMS[3], FILMS[2], FILMS[4])
    assert compare_dates("Which film whose director is younger, Freeway (1996 Film) or Forget Paris?",
                         FILMS).answer == "Freeway (1996 Film)"
    assert compare_dates("Which film came out first, Freeway (1996 Film) or Forget Paris?", FILMS).answer == "Forget Paris"
    assert compare_dates("Which film has the director who was born first, Freeway (1996 Film) or Forget Paris?",
                         FILMS[:4]) is None  # Billy Crystal's passage was not read


def test_the_answer_rule_cites_its_years_and_leaves_the_rest_to_the_reader():
    computed = date_comparison_answer("Who was born first, Harvey Pekar or Denise Levertov?", [PEKAR, LEVERTOV])
    assert computed.text == "Denise Levertov"
    assert computed.method == f"{COMPARISON_METHOD} (1939 vs 1923)"
    assert computed.citations == (PEKAR, LEVERTOV)
    assert date_comparison_answer("Who wrote American Splendor?", [PEKAR, LEVERTOV]) is None


def test_the_loop_computes_from_the_trajectory_even_when_compaction_drops_the_dates():
    """A 20-token synth context cannot hold both dated lead sentences; the rule reads the
    trajectory, so the answer is the same with compaction on and off, and the reader is
    asked only for the question the rule does not settle."""
    by_id = {}
    for f in FILMS:
        by_id.setdefault((f.passage_id, f.title), []).append(f.sentence)
    passages = [Passage(pid, title, tuple(sentences)) for (pid, title), sentences in by_id.items()]
    calls = []

    def reader(question, context):
        calls.append(context.text)
        return Answer(text="from the reader", method="reader")

    question = "Which film has the director who was born first, Freeway (1996 Film) or Forget Paris?"
    answers = []
    for on in (False, True):
        rag = MultiHopRAG(BM25Retriever(passages), synthesizer=reader, answer_rules=(date_comparison_answer,),
                          compaction_enabled=on, compaction_budget=Budget.tokens(20))
        result = rag.multi_hop_search(question)
        answers.append(result.answer)
        if on:
            assert "1948" not in result.synth_context or "1952" not in result.synth_context
    assert answers[0] == answers[1] and answers[0].text == "Forget Paris" and calls == []
    assert rag.multi_hop_search("Who directed Forget Paris?").answer.text == "from the reader" and len(calls) == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), st.lists(st.tuples(st.text(max_size=30), st.text(max_size=80)), max_size=6))
def test_any_question_and_facts_give_none_or_a_named_option(question, pairs):
    facts = [Fact(f"p{i}", title, sentence, i % 3) for i, (title, sentence) in enumerate(pairs)]
    found = compare_dates(question, facts)
    if found is not None:
        assert found.answer in " ".join(question.split())
        assert found.years[0] != found.years[1] and set(found.facts) <= set(facts)


NAMES = ["Ann Corvell", "Tomas Reyk", "Lake Worth Lagoon", "The Frames", "Dal Lake", "Harvey Pekar"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(["Which", "Who", "Was", "Is"]),
       st.sampled_from(["is older", "has more members", "was founded first"]))
def test_choice_options_are_the_two_named_whatever_the_wording(a, b, word, rest):
    """Both "W ..., A or B?" and "W A or B ...?" offer (A, B) in question order, a leading
    question word never part of an option; the yes/no "Are A and B ...?" offers none."""
    if a == b:
        return
    bare = lambda name: name.removeprefix("The ")  # entity spans drop a leading article
    assert choice_options(f"{word} {rest}, {a} or {b}?") == (a, b)  # after a comma: read literally
    assert choice_options(f"{word} {rest}, the {a} or the {b}?") == (a, b)
    assert choice_options(f"{word} {a} or {b} {rest}?") == (bare(a), bare(b))
    assert choice_options(f"Between {a} and {b}, who {rest}?") == (bare(a), bare(b))
    assert choice_options(f"Are {a} and {b} both American?") is None
    assert choice_options(f"Are {a} and {b} democratic or republican?") is None


def test_literal_options_keep_lower_case_words_and_numbers():
    assert choice_options("Which film came out first, In the Company of Men or Buddymoon?") == (
        "In the Company of Men", "Buddymoon")
    assert choice_options("Which film was released first, Cuatro balazos or Column South?") == (
        "Cuatro balazos", "Column South")
    assert choice_options("Which is taller, the Metropolitan Tower or 750 7th Avenue?") == (
        "Metropolitan Tower", "750 7th Avenue")
    assert choice_options("Who was born first, Ann Corvell, or Tomas Reyk?") == ("Ann Corvell", "Tomas Reyk")


def test_questions_without_two_named_options_offer_none():
    assert choice_options("What is the capital of France?") is None
    assert choice_options("Were Scott Derrickson and Ed Wood of the same nationality?") is None
    assert choice_options("Is the Metropolitan Tower or 750 7th Avenue taller?") is None  # "750 ..." is no name
