"""CI-sized runs of every eval on real rows, and the trajectory eval's failure path."""

from __future__ import annotations

import json

import pytest

from evals.multihop_e2e import run_multihop_eval
from evals.packing import POLICY_ORDER, retrieved_candidates, run_packing_eval
from evals.synth_eval import run_synth_eval
from evals.trajectory import GOLDEN_FILE, run_trajectory_eval
from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.compaction.line import CompactionResult
from evals.qa_rows import load_qa_rows
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

HOTPOT = "hotpotqa.jsonl.gz"


def test_trajectory_eval_passes_and_matches_pinned_golden(demo_passages, golden_questions):
    golden = json.loads(GOLDEN_FILE.read_text())
    rep = run_trajectory_eval(golden_questions, demo_passages, budgets=[700], golden=golden, show_progress=False)
    assert rep["passed"] and rep["golden_ok"], rep["failures"]
    assert all(r["no_behaviour_change"] == r["within_budget"] == len(golden_questions) for r in rep["rows"])
    assert all(r["median_cut_pct"] > 50 for r in rep["rows"])
    assert len(golden["questions"]) >= 50 and golden["_header"].startswith("Pinned")


def test_trajectory_eval_reports_a_budget_violation(demo_passages, golden_questions, monkeypatch):
    """Fault injection: a compactor that ignores its budget must fail BUDGET, not pass."""
    def greedy_compactor(request):
        kept = request.context.with_facts(request.facts, "facts")
        return CompactionResult(kept, (), request.context, request.budget, len(kept.text), "bad")

    monkeypatch.setattr("evals.loops.make_compactor", lambda name: greedy_compactor)
    rep = run_trajectory_eval(golden_questions[:3], demo_passages, budgets=[100], strategies=["line"],
                              show_progress=False)
    assert not rep["passed"] and any(f.startswith("BUDGET") for f in rep["failures"])


def test_trajectory_cli_on_user_files_exit_code(tmp_path, capsys):
    rc = main(["eval", "trajectory", "--budgets", "600", "--out", str(tmp_path), "--quiet"])
    assert rc == 0
    assert (tmp_path / "summary.md").read_text().count("60/60") >= 2


def test_harness_candidates_are_the_product_shape_and_gold_blind(bundled_data):
    row = load_qa_rows(bundled_data / HOTPOT, limit=1)[0]
    hits = BM25Retriever(row.passages).search(row.question, 3)
    facts, cands = retrieved_candidates(row.question, hits)
    assert [c.position for c in cands] == list(range(len(cands))) == list(range(len(facts)))
    assert all(c.relevance >= 0 for c in cands)
    assert [c.text for c in cands] == [f.line for f in facts] and [c.body for c in cands] == [f.sentence for f in facts]
    assert {c.doc_id for c in cands} == {h.passage.id for h in hits}


def test_synth_eval_smoke_product_path_equals_harness(bundled_data):
    rows = load_qa_rows(bundled_data / HOTPOT, limit=10)
    rep = run_synth_eval(rows, token_budgets=[160, "half"], char_budgets=[600], n_resamples=200, show_progress=False)
    assert rep["trajectories_identical_across_settings"] and rep["max_harness_gap"] == 0.0
    by = {r["setting"]: r for r in rep["table"]}
    assert set(by) >= {"off", "line@160t", "submodular@160t", "evidence@160t", "evidence@600c"}
    for r in rep["table"]:
        if r["unit"] == "tokens":
            assert r["max_tokens"] <= r["limit"]
        elif r["unit"] == "chars":
            assert r["max_chars"] <= r["limit"]
        assert 0 <= r["all_gold"] <= r["coverage"] <= 1
    assert set(by["evidence@160t"]["ci_vs"]) == {"line", "submodular"} and "ci_vs_off" in by["line@160t"]


@pytest.mark.parametrize("open_pool", [False, True])
def test_packing_eval_smoke(bundled_data, open_pool):
    rows = load_qa_rows(bundled_data / HOTPOT, limit=8)
    rep = run_packing_eval(rows, budgets=[96, 160], open_pool=open_pool, n_resamples=200, show_progress=False)
    r = rep["retrievers"]["bm25"]
    assert 0 <= r["all_gold@5"] <= r["recall@5"] <= 1
    for policy, per_budget in r["table"].items():
        for budget, cell in per_budget.items():
            assert cell["tokens"] <= int(budget), (policy, budget)
            assert 0 <= cell["all_gold"] <= cell["coverage"] <= 1
    assert set(r["ci_vs_reference"]) == set(POLICY_ORDER) - {"submodular"}


def test_multihop_e2e_smoke(bundled_data):
    rows = load_qa_rows(bundled_data / HOTPOT, limit=12)
    rep = run_multihop_eval(rows, n_resamples=200, show_progress=False)
    assert 0 <= rep["all_gold"]["single_5"] <= rep["all_gold"]["single_10"] <= 1
    assert rep["mean_passages_loop"] <= 10 and set(rep["ci_loop_minus"]) == set(rep["all_gold"]) - {"loop"}


def test_documents_folder_eval_runs_the_product_path_on_every_layout():
    from evals.datasets import load_rows
    from evals.documents_folder import LAYOUTS, run

    rows = load_rows("hotpotqa", 12)[1::2]
    rep = run(rows, n_resamples=200)
    assert rep["rows"] == 6 and set(rep["layouts"]) == set(LAYOUTS)
    for layout, cell in rep["layouts"].items():
        assert 0 <= cell["all_gold"] <= 1 and 0 <= cell["aic"] <= 1 and 0 <= cell["single_bm25_all_gold"] <= 1
        # chunks count by reading: about as many reader tokens as 10 paragraphs, whatever the layout
        assert (cell["mean_read"] <= 10) == (layout in ("jsonl", "opaque"))  # rows are paragraphs
        assert 0.6 < cell["mean_tokens_read"] / rep["layouts"]["jsonl"]["mean_tokens_read"] < 1.6
        assert cell["indexed_passages"] >= (rep["pool_passages"] if layout != "txt5" else rep["pool_passages"] / 5)
        if layout != "jsonl":
            diff, low, high = cell["all_gold_minus_jsonl"]
            assert low <= diff <= high
        # every supporting sentence in a read passage asks more than some chunk of each gold paragraph
        assert cell["support_rows"] == 6 and 0 <= cell["all_support"] <= cell["all_gold"]
    # the jsonl layout is today's corpus: the same loop as the open-pool e2e eval, through `ask --index`
    e2e = run_multihop_eval(rows, n_resamples=200, show_progress=False)
    assert rep["layouts"]["jsonl"]["all_gold"] == pytest.approx(e2e["all_gold"]["loop"], abs=1e-3)


def test_e2e_chunks_layout_is_the_product_path_over_the_windows_a_user_cut():
    from evals.datasets import load_rows
    from evals.documents_folder import run

    rows = load_rows("hotpotqa", 16)[1::2]
    folder = run(rows, layouts=("win40",), n_resamples=200)["layouts"]["win40"]
    rep = run_multihop_eval(rows, layout="chunks", n_resamples=200, show_progress=False)
    synth = run_synth_eval(rows, layout="chunks", strategies=["evidence"], token_budgets=[160], n_resamples=200,
                           show_progress=False)
    # the same windows, loop and packer in memory as through `index build` + `ask --index`
    assert rep["mean_passages_loop"] == pytest.approx(folder["mean_read"], abs=0.005) and folder["mean_read"] > 10  # rounded
    assert rep["all_gold"]["loop"] == pytest.approx(folder["all_support"], abs=1e-3)
    evidence = next(r for r in synth["table"] if r["setting"] == "evidence@160t")
    assert evidence["aic"] == pytest.approx(folder["aic"], abs=1e-3) and evidence["harness_aic"] == evidence["aic"]
    assert rep["pool_passages"] == folder["indexed_passages"] and rep["layout"] == "chunks"


def test_answer_rules_eval_on_untitled_files(bundled_data):
    from evals.answer_rules import run_answer_rules_eval

    rows = load_qa_rows(bundled_data / "2wiki.jsonl.gz", limit=30)
    rep = run_answer_rules_eval(rows, layout="txt", n_resamples=200, show_progress=False)
    cell = rep["rules"]["date_comparison"]
    assert rep["layout"] == "txt" and 0 <= cell["fired"] <= len(rows)
    assert cell["f1"]["ci"][0] <= cell["f1"]["diff"] <= cell["f1"]["ci"][1]
    with pytest.raises(ValueError, match="layout"):
        run_answer_rules_eval(rows, layout="pdf", show_progress=False)


def test_lead_subjects_eval_reports_shares(capsys):
    from evals.lead_subjects import main as lead_subjects

    assert lead_subjects(["--dataset", "2wiki", "--limit", "20"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["paragraphs"] > 0 and 0 <= rep["names_its_page"] <= 1 - rep["no_subject"] <= 1
