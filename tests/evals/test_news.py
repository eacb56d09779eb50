"""The news eval on a few questions: the bundled MultiHop-RAG half is whole, and the product
path (index build of the saved articles, ask --json) is scored per question type."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from evals.news import LAYOUTS, TYPES, compare_answers, index_articles, load_questions, main, run, write_articles
from rootweaver_innovations.documents.formats import read_document


def test_the_bundled_half_is_whole(tmp_path):
    questions = load_questions()
    assert len(questions) == 250 and set(Counter(q.type for q in questions)) == set(TYPES)
    assert write_articles(tmp_path) == 326
    for q in questions:
        assert (not q.evidence_facts) == (not q.evidence_files) == (q.type == "null_query")
        texts = [(tmp_path / f).read_text(encoding="utf-8") for f in q.evidence_files]
        assert all(any(fact in text for text in texts) for fact in q.evidence_facts)  # verbatim in its files


def test_a_failed_index_build_names_its_exit_code_and_error(tmp_path):
    (tmp_path / "articles.idx").write_text("not an index", encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"^rootweaver index build exited 2: rootweaver: error: .*articles\.idx: "
                                           r"already exists; remove it or choose another --out$"):
        index_articles(tmp_path)


@pytest.mark.parametrize("layout", ["html", "heading"])
def test_every_layout_holds_every_article_and_only_saved_and_html_carry_metadata(layout, tmp_path):
    assert write_articles(tmp_path / "saved") == write_articles(tmp_path / layout, layout) == 326
    name = "article-0040d5770d"
    saved = read_document(tmp_path / "saved" / f"{name}.md", f"{name}.md", "markdown", 1 << 20)
    kind, suffix = ("html", ".html") if layout == "html" else ("markdown", ".md")
    relaid = read_document(tmp_path / layout / f"{name}{suffix}", f"{name}{suffix}", kind, 1 << 20)
    assert saved.meta.source == "Cnbc | World Business News Leader" and saved.meta.published.startswith("2023-10-06")
    assert relaid.title == saved.title == "Amazon sellers sound off on the FTC's 'long-overdue' antitrust case"
    body = " ".join(text for _, text in relaid.sections)
    assert "Zapolsky said." in body
    if layout == "html":  # the page's meta tags say what the front matter said
        assert (relaid.meta.source, relaid.meta.published) == (saved.meta.source, saved.meta.published)
    else:  # the source and date are a line of text, nothing a program reads as metadata
        assert relaid.meta is None and "Cnbc | World Business News Leader, October 6, 2023" in body


def test_an_unknown_layout_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="unknown layout 'pdf'; choose from saved, html, heading"):
        write_articles(tmp_path, "pdf")
    assert LAYOUTS == ("saved", "html", "heading")


def test_a_few_questions_through_the_product_path():
    questions = [q for q in load_questions() if q.type != "null_query"][:3] + load_questions()[-1:]
    report = run(questions, max_passages=5, conventions="plain", mode="hybrid", n_resamples=200)
    assert report["articles"] == 326 and report["indexed_chunks"] >= 326 and report["retriever"] == "hybrid"
    overall = report["overall"]
    assert overall["questions"] == 4 and overall["scored"] == sum(1 for q in questions if q.evidence_facts)
    assert 0 <= overall["all_evidence"] <= overall["evidence_found"] <= 1
    assert overall["mean_articles_read"] > 0 and overall["mean_tokens_read"] > 0
    # the synth context holds a sentence of a few of the articles read (the budget for dated articles)
    assert 0 < overall["mean_articles_in_synth"] <= overall["mean_articles_read"]
    assert 0 <= overall["gold_articles_in_synth"] <= 1
    for single in ("bm25", "dense", "hybrid"):  # the index holds embeddings: every single shot is scored
        mean, low, high = overall[f"loop_minus_single_{single}"]
        assert low <= mean <= high
        assert overall["all_evidence"] - overall[f"single_{single}_all_evidence"] == pytest.approx(mean, abs=1e-3)
    assert sum(cell["questions"] for cell in report["by_type"].values()) == 4


def test_the_command_line_prints_one_json_report(capsys):
    assert main(["--limit", "2", "--max-passages", "3", "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert '"questions": 2' in out and '"max_passages": 3' in out and '"conventions": "wikipedia"' in out


def test_the_command_line_writes_the_layout_asked_for(capsys):
    assert main(["--layout", "html", "--limit", "1", "--max-passages", "3", "--resamples", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["layout"] == "html" and report["overall"]["questions"] == 1
    assert report["overall"]["scored"] == 1 and report["overall"]["mean_articles_read"] > 0


def test_the_command_line_asks_only_the_types_named(capsys):
    assert main(["--types", "temporal_query", "--limit", "1", "--max-passages", "3", "--resamples", "50",
                 "--max-tokens", "80"]) == 0
    report = capsys.readouterr().out
    assert '"questions": 1' in report and '"temporal_query"' in report and '"inference_query"' not in report


def test_an_unknown_question_type_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--types", "temporal_query,opinion_query"])
    assert exc.value.code == 2
    assert "--types: unknown type 'opinion_query'; choose from inference_query" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--max-tokens", "--limit"])
def test_a_count_that_is_not_positive_is_one_line_and_exit_2(option, capsys):
    with pytest.raises(SystemExit) as exc:
        main([option, "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{option}: must be > 0, got 0" in err and "Traceback" not in err


def _answers(path, correct):
    path.write_text("".join(json.dumps({"id": str(i), "correct": c}) + "\n" for i, c in enumerate(correct)))
    return path


def test_two_answer_files_are_paired_by_question(tmp_path):
    a = _answers(tmp_path / "a.jsonl", [True, True, True, False])
    b = _answers(tmp_path / "b.jsonl", [True, False, False, True])
    report = compare_answers(a, b, n_resamples=200)
    assert (report["questions"], report["a_accuracy"], report["b_accuracy"]) == (4, 0.75, 0.5)
    assert (report["right_only_in_a"], report["right_only_in_b"]) == (2, 1)
    mean, low, high = report["a_minus_b"]
    assert mean == 0.25 and low <= mean <= high


def test_answer_files_that_do_not_pair_are_one_line_and_exit_2(tmp_path, capsys):
    a = _answers(tmp_path / "a.jsonl", [True, False])
    b = _answers(tmp_path / "b.jsonl", [True])
    with pytest.raises(ValueError, match=r"a\.jsonl and .*b\.jsonl do not hold the same questions \(2 and 1 ids\)"):
        compare_answers(a, b)
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(SystemExit) as exc:
        main(["--compare-answers", str(tmp_path / "bad.jsonl"), str(a)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "bad.jsonl: not an --answers file (JSONDecodeError" in err and "Traceback" not in err
