"""The `rootweaver ask` main job and its one-line errors (exit code 2)."""

from __future__ import annotations

import json

import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.answer_rules.extractive import EXTRACTIVE_METHOD


def test_ask_demo_bridge_question_two_hops_under_budget(capsys):
    assert main(["ask", "--reader", "none", "--json", "--max-chars", "1500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hop_count"] >= 2
    assert out["context_chars"] <= 1500 < out["full_context_chars"]
    assert out["answer"]["method"].startswith("extractive") and out["answer"]["reader"] == "none"
    assert all(d["reason"] for d in out["dropped"])


def test_ask_date_comparison_is_computed_and_cites_both_dates(capsys):
    question = "Between Harvey Pekar and Denise Levertov who was born earlier?"
    assert main(["ask", question, "--reader", "none", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["answer"]
    assert answer["text"] == "Denise Levertov" and answer["reader"] == "none"
    assert answer["method"] == "computed: date comparison (1939 vs 1923)"
    assert [line.split(" | ")[0] for line in answer["cited_lines"]] == ["Harvey Pekar", "Denise Levertov"]


def test_ask_director_comparison_on_a_users_corpus_reads_both_directors(tmp_path, capsys):
    rows = [
        ("f1", "Freeway (1996 film)", "Freeway is a 1996 American crime film. It was directed by Matthew Bright."),
        ("f2", "Forget Paris", "Forget Paris is a 1995 romantic comedy film directed by Billy Crystal."),
        ("d1", "Matthew Bright", "Matthew Bright (born 1952) is an American screenwriter and director."),
        ("d2", "Billy Crystal", "William Edward Crystal (born March 14, 1948) is an American actor and director."),
        ("x1", "Paris", "Paris is the capital of France."),
    ]
    corpus = tmp_path / "films.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in rows))
    question = "Which film has the director who was born first, Freeway (1996 Film) or Forget Paris?"
    for compaction in ("evidence", "off"):
        assert main(["ask", question, "--corpus", str(corpus), "--reader", "none", "--json",
                     "--compaction", compaction, "--max-tokens", "40"]) == 0
        answer = json.loads(capsys.readouterr().out)["answer"]
        assert answer["text"] == "Forget Paris" and answer["method"] == "computed: date comparison (1952 vs 1948)"
        assert [line.split(" | ")[0] for line in answer["cited_lines"]] == [
            "Freeway (1996 film)", "Matthew Bright", "Forget Paris", "Billy Crystal"]


def test_ask_off_prints_full_context(capsys):
    assert main(["ask", "Who was born first David Draiman or Terry Kath?", "--reader", "none", "--compaction", "off", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "off" and out["context_chars"] == out["full_context_chars"]


def test_ask_human_output(capsys):
    assert main(["ask", "--reader", "none", "--max-chars", "800"]) == 0
    text = capsys.readouterr().out
    assert "Hops:" in text and "Dropped" in text and "of 800 chars" in text


@pytest.mark.parametrize("argv, msg", [
    (["ask", ""], "question is empty"),
    (["ask", "q?", "--max-chars", "0"], "must be > 0"),
    (["ask", "q?", "--max-chars", "-3"], "must be > 0"),
    (["ask", "q?", "--corpus", "/nonexistent/c.jsonl"], "file or folder not found"),
])
def test_bad_input_one_line_exit_2(capsys, argv, msg):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse rejects bad option values itself
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_malformed_corpus_reports_line_number(tmp_path, capsys):
    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "title": "A", "text": "t"}\nnot json\n')
    assert main(["ask", "q?", "--corpus", str(f)]) == 2
    assert f"{f}:2: malformed JSON" in capsys.readouterr().err



def test_serve_answers_stdin_and_exposes_metrics(monkeypatch, capsys):
    import io
    import urllib.request

    from rootweaver_capabilities import metrics as metrics_mod

    servers = []
    real_serve = metrics_mod.Metrics.serve

    def keep(self, port, addr="127.0.0.1"):
        servers.append((self, real_serve(self, port, addr)))
        return servers[-1][1]

    monkeypatch.setattr(metrics_mod.Metrics, "serve", keep)
    monkeypatch.setattr("sys.stdin", io.StringIO("Who was born first David Draiman or Terry Kath?\n\n"))
    assert main(["serve", "--metrics-port", "0"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 1 and lines[0]["multi_hop"]["hop_count"] >= 1
    server = servers[0][1]
    body = urllib.request.urlopen(f"http://{server.addr}:{server.port}/metrics").read().decode()
    assert 'multi_hop_context_chars_count{strategy="evidence"} 1.0' in body  # the default config compacts
    server.close()


def test_serve_refuses_a_question_over_the_limit_in_one_line_and_answers_the_next(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("x" * 2001 + "\nWho founded A Bathing Ape?\n"))
    assert main(["serve"]) == 0
    refused, answered = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert refused == {"question": "x" * 2000, "answer": None, "method": None, "cited_lines": [],
                       "error": "question of 2,001 characters, over the limit of 2,000 (service.max_question_chars)"}
    assert answered["answer"] and "error" not in answered


def test_serve_prints_answer_method_and_cited_lines_beside_the_metadata(monkeypatch, capsys, tmp_path):
    import io

    monkeypatch.chdir(tmp_path)  # without --config, every default: no file is read, from any directory
    monkeypatch.setattr("sys.stdin", io.StringIO("In what 2 countries did both X-Large and A Bathing Ape have stores?\n"))
    assert main(["serve"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert line["answer"] and line["method"] == EXTRACTIVE_METHOD and line["cited_lines"]
    assert line["multi_hop"]["answer"]["text"] == line["answer"]
    assert line["multi_hop"]["answer"]["error_kind"] is None


def test_ask_without_the_reader_installed_answers_extractively_and_says_how_to_get_it(monkeypatch, capsys):
    from rootweaver_capabilities.readers import runtimes

    monkeypatch.setattr(runtimes, "installed_runtime", lambda name="auto": None)
    assert main(["ask", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["answer"]["method"].startswith("extractive")
    assert 'pip install "rootweaver[reader]"' in captured.err and "no compiler" in captured.err
    assert main(["ask", "--reader", "local"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not installed" in err and 'rootweaver[reader]' in err


@pytest.mark.parametrize("argv, msg", [
    (["ask", "q?", "--reader", "openai"], "needs --base-url"),
    (["ask", "q?", "--reader", "none", "--base-url", "http://x/v1"], "only used with --reader openai"),
    (["ask", "q?", "--reader", "openai", "--base-url", "ftp://x"], "http(s) URL"),
    (["ask", "q?", "--reader", "local", "--model-path", "/nonexistent.gguf"], "file not found"),
])
def test_bad_reader_options_one_line_exit_2(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
