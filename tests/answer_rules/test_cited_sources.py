"""The ``unknown_source`` answer rule: a question citing a publication none of the read
documents comes from and no read passage names is answered "insufficient information";
otherwise the rule stays out."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.answer_rules.cited_sources import cited_publications, unknown_source_answer
from rootweaver_innovations.answer_rules.registry import DEFAULT_ANSWER_RULES, make_answer_rules
from rootweaver_innovations.documents.metadata import DocumentMeta
from rootweaver_innovations.records import Fact


def _fact(source: str | None) -> Fact:
    meta = DocumentMeta(source=source) if source else None
    return Fact("a#0", "Headline", "Sam Bankman-Fried founded FTX.", 0, 0, "q", meta=meta)


READ = [_fact("TechCrunch"), _fact("BBC News - Entertainment & Arts"), _fact("Cnbc | World Business News Leader"),
        _fact("The New York Times")]


def test_each_way_a_question_cites_a_publication_is_read():
    q = ("Considering an article from The Verge, a 'Bloomberg' report, a piece in 'Wired', another by Forbes, "
         "the claims reported by The Wall Street Journal and a recent Financial Times article, who ...?")
    assert sorted(cited_publications(q)) == ["Bloomberg", "Financial Times", "Forbes", "Verge", "Wall Street Journal",
                                             "Wired"]


def test_a_publication_no_read_document_comes_from_is_not_in_the_documents():
    answer = unknown_source_answer("What did a Bloomberg report and a TechCrunch article say about FTX?", READ)
    assert answer is not None and answer.text == "insufficient information" and answer.citations == ()
    assert answer.method == "abstained (no document read is from 'Bloomberg')"


def test_sources_read_by_a_prefix_or_without_the_article_are_known():
    for q in ("What did a BBC News report and a CNBC article say?", "What did a New York Times article say?",
              "According to the 'TechCrunch' article, who founded FTX?"):
        assert unknown_source_answer(q, READ) is None, q


def _plain(sentence: str, title: str = "article-0040d5770d.md") -> Fact:
    return Fact(f"{title}#0", title, sentence, 0, 0, "q")


def test_without_sources_a_publication_named_by_a_read_passage_is_known():
    line = _plain("Cnbc | World Business News Leader, October 6, 2023. Amazon sellers sound off.")
    assert unknown_source_answer("What did a CNBC article say about Amazon?", [line]) is None
    assert unknown_source_answer("What did a report by Amazon say?", [_plain("Text.", title="Amazon sellers")]) is None


def test_without_sources_a_publication_no_read_passage_names_is_not_in_the_documents():
    answer = unknown_source_answer("What did a Bloomberg report say?", [_fact(None)])
    assert answer is not None and answer.method == "abstained (no document read is from 'Bloomberg')"
    assert unknown_source_answer("What did a Bloomberg report say?", []) is not None


def test_a_lower_case_word_is_not_the_publication():
    q = "What did the Variety review say about Poker Face?"
    assert unknown_source_answer(q, [_plain("Agents could help with a variety of tasks.")]) is not None
    assert unknown_source_answer(q, [_plain("Variety, November 2, 2023. Poker Face returns.")]) is None


@given(st.text(alphabet=st.characters(categories=("Ll", "Zs", "Po")), max_size=80))
def test_a_question_that_cites_no_capitalised_name_is_left_to_the_reader(text):
    assert unknown_source_answer(text, READ) is None


def test_it_runs_first_by_default():
    assert DEFAULT_ANSWER_RULES == ("unknown_source", "date_comparison")
    assert make_answer_rules(["unknown_source"])[0] is unknown_source_answer


def test_a_folder_without_metadata_is_judged_by_its_text(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ftx.md").write_text("# FTX founder on trial\n\nTechCrunch, October 5, 2023\n\n"
                                 "Sam Bankman-Fried founded the FTX exchange in 2019.\n", encoding="utf-8")
    (docs / "amazon.md").write_text("# Amazon sellers sound off\n\nCnbc | World Business News Leader, October 6, 2023"
                                    "\n\nAmazon sellers criticised the platform's fees.\n", encoding="utf-8")
    assert main(["index", "build", str(docs), "--out", str(tmp_path / "idx")]) == 0
    capsys.readouterr()
    answers = {}
    for publication in ("TechCrunch", "Bloomberg"):
        assert main(["ask", f"According to a {publication} article, who founded FTX?", "--index", str(tmp_path / "idx"),
                     "--reader", "none", "--json"]) == 0
        answers[publication] = json.loads(capsys.readouterr().out)["answer"]
    assert answers["Bloomberg"]["text"] == "insufficient information"
    assert answers["Bloomberg"]["method"] == "abstained (no document read is from 'Bloomberg')"
    assert answers["TechCrunch"]["method"] != answers["Bloomberg"]["method"] and answers["TechCrunch"]["citations"]
