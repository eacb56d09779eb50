"""The news eval on a few questions: the bundled MultiHop-RAG half is whole, and the product
path (index build of the saved articles, ask --json) is scored per question type."""

from __future__ import annotations

from collections import Counter

import pytest

from evals.news import TYPES, load_questions, main, run, write_articles


def test_the_bundled_half_is_whole(tmp_path):
    questions = load_questions()
    assert len(questions) == 250 and set(Counter(q.type for q in questions)) == set(TYPES)
    assert write_articles(tmp_path) == 326
    for q in questions:
        assert (not q.evidence_facts) == (not q.evidence_files) == (q.type == "null_query")
        texts = [(tmp_path / f).read_text(encoding="utf-8") for f in q.evidence_files]
        assert all(any(fact in text for text in texts) for fact in q.evidence_facts)  # verbatim in its files


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
