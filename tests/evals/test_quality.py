"""The quality report's aggregation (pure) and run_quality's argument checks; the product-path run
itself, through a real embedded reader, is in tests/integration/test_embedded_reader.py."""

from __future__ import annotations

from dataclasses import asdict
import re

import pytest

from evals.quality import QualityRow, quality_markdown, run_quality, summarise_rows


def row(qid: str, config: str, run: int, f1: float) -> QualityRow:
    return QualityRow(qid, config, run, run, "x", "llm:m:answer", f1, f1, None, 10, True, "")


def test_noise_band_and_gate_worked_example():
    # off:  q1 runs [1, 0], q2 [1, 1] -> run means 1.0, 0.5 -> spread 0.5
    # line: q1 runs [1, 1], q2 [0, 1] -> run means 0.5, 1.0 -> spread 0.5; band = 0.5
    # per-question means: line [1, 0.5], off [0.5, 1] -> delta = mean(+0.5, -0.5) = 0 -> PASS
    rows = [row("q1", "off", 0, 1), row("q1", "off", 1, 0), row("q2", "off", 0, 1), row("q2", "off", 1, 1),
            row("q1", "line", 0, 1), row("q1", "line", 1, 1), row("q2", "line", 0, 0), row("q2", "line", 1, 1)]
    rep = summarise_rows(rows, ["off", "line"], ["line"], 2, 2, judged=False, n_resamples=200)
    assert rep["noise_band"]["f1"] == pytest.approx(0.5)
    assert rep["configs"]["off"]["f1_runs"] == [1.0, 0.5] and rep["configs"]["line"]["f1"] == pytest.approx(0.75)
    gate = rep["gates"]["line"]
    assert gate["f1"]["delta"] == pytest.approx(0.0) and gate["verdict"] == "PASS"
    rep["settings"] = {"model": "m", "n_questions": 2, "runs": 2, "temperature": 0.7, "seeds": [0, 1], "mode": "answer",
                       "budget": {"limit": 100, "unit": "chars"}, "max_hops": 5, "passages_per_hop": 2, "judge_model": None, "wall_s": 1.0}
    rep["trajectory_mismatches"] = 0
    md = quality_markdown(rep, "rootweaver eval quality")
    assert "| line | f1 | +0.000 |" in md and "line: **PASS**" in md


def test_gate_fails_outside_band_and_is_invalid_when_degraded():
    # off runs identical (band 0 from off); line drops q1 by 1 in both runs (band 0) -> delta -0.5 -> FAIL
    rows = [row(q, "off", r, 1) for q in ("q1", "q2") for r in (0, 1)]
    rows += [row("q1", "line", r, 0) for r in (0, 1)] + [row("q2", "line", r, 1) for r in (0, 1)]
    rep = summarise_rows(rows, ["off", "line"], ["line"], 2, 2, judged=False, n_resamples=200)
    assert rep["gates"]["line"]["f1"]["delta"] == pytest.approx(-0.5) and rep["gates"]["line"]["verdict"] == "FAIL"
    degraded = [*rows[:-1], QualityRow("q2", "line", 1, 1, "x", "extractive (LLM unavailable after 3 attempts)",
                                       1, 1, None, 10, True, "")]
    rep = summarise_rows(degraded, ["off", "line"], ["line"], 2, 2, judged=False, n_resamples=200)
    assert rep["gates"]["line"]["verdict"] == "INVALID" and rep["configs"]["line"]["degraded"] == 1


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"runs": 0}, "runs must be >= 1, got 0"),
    ({"runs": 2, "temperature": 0.0}, "runs >= 2 need temperature > 0 so that runs differ, got 0.0"),
    ({"mode": "essay"}, "mode must be one of ['answer', 'evidence'], got 'essay'"),
    ({"rows": []}, "rows must not be empty"),
])
def test_run_quality_rejects_settings_before_any_call(kwargs, message):
    from evals.qa_rows import QARow
    from rootweaver_innovations.documents.corpus import Passage

    qa = QARow("q", "Who?", "A", (Passage("p", "T", ("A is here.",)),), ("T",), ())
    rows = kwargs.pop("rows", [qa])
    with pytest.raises(ValueError, match=re.escape(message)):
        run_quality(rows, client=None, **kwargs)  # type: ignore[arg-type]


def test_select_questions_skips_yes_no_and_cited_lines_score_against_gold_facts():
    from evals.quality import _cited_pr, select_questions
    from evals.qa_rows import QARow
    from rootweaver_innovations.documents.corpus import Passage

    qa = QARow("q", "Who wrote Dune?", "Frank Herbert",
               (Passage("p1", "Dune", ("Dune is a novel.", "It was written by Frank Herbert.")),
                Passage("p2", "Herbert", ("Frank Herbert was born in Tacoma.",))),
               ("Dune", "Herbert"), (("Dune", 1), ("Herbert", 0)))
    yes = QARow("y", "Is Dune a novel?", "yes", qa.passages, ("Dune",), ())
    assert select_questions([yes, qa, yes, qa], 1) == [qa] and len(select_questions([yes, qa, qa], None)) == 2
    from rootweaver_innovations.records import Fact

    g1, other = Fact("p1", "Dune", "It was written by Frank Herbert.", 1), Fact("p1", "Dune", "Dune is a novel.", 0)
    assert _cited_pr(qa, [g1, other]) == (0.5, 0.5)
    assert _cited_pr(qa, []) == (None, 0.0)


def test_evidence_scores_are_strict():
    from evals.quality import _ebg
    from evals.qa_rows import QARow
    from rootweaver_innovations.documents.corpus import Passage

    qa = QARow("q", "Who wrote Dune?", "Frank Herbert",
               (Passage("p1", "Dune", ("Dune is a novel.", "It was written by Frank Herbert.")),
                Passage("p2", "Herbert", ("Frank Herbert was born in Tacoma.",))),
               ("Dune", "Herbert"), (("Dune", 1), ("Herbert", 0)))
    from rootweaver_innovations.compaction.synth_context import SynthContext
    from rootweaver_innovations.records import Fact

    facts = (Fact("p1", "Dune", "Dune is a novel.", 0), Fact("p1", "Dune", "It was written by Frank Herbert.", 1),
             Fact("p2", "Herbert", "Frank Herbert was born in Tacoma.", 0))
    ctx = SynthContext(facts, ("q",))
    g1, g2 = facts[1], facts[2]
    assert _ebg(qa, ctx, "Frank Herbert", [g1, g2]) == {"ans": 1.0, "evid": 1.0, "joint": 1.0}
    assert _ebg(qa, ctx, "Frank Herbert", [g1]) == {"ans": 1.0, "evid": 0.0, "joint": 0.0}  # one gold fact uncited
    # g2 compacted away: it cannot be cited, so strict Evid fails even though every fact present is cited
    assert _ebg(qa, ctx.with_facts(facts[:2], "facts"), "Frank Herbert", [g1])["evid"] == 0.0


def test_merge_reports_resummarises_disjoint_chunks():
    from evals.quality import merge_reports

    settings = {"model": "m", "n_questions": 1, "runs": 2, "temperature": 0.7, "seeds": [0, 1], "mode": "answer",
                "budget": {"limit": 100, "unit": "chars"}, "strategy": "line", "gate": True, "max_hops": 5, "passages_per_hop": 2, "max_tokens": 32,
                "judge_model": None, "n_resamples": 200, "wall_s": 2.0}

    def chunk(qid, off, on):
        rows = [row(qid, "off", r, off) for r in (0, 1)] + [row(qid, "line", r, on) for r in (0, 1)]
        rep = summarise_rows(rows, ["off", "line"], ["line"], 1, 2, judged=False, n_resamples=200)
        return rep | {"settings": settings, "trajectory_mismatches": 0, "rows": [asdict(r) for r in rows]}

    merged = merge_reports([chunk("q1", 1, 1), chunk("q2", 1, 0)])
    # two questions: deltas 0 and -1 -> mean -0.5; off F1 1.0, line F1 0.5
    assert merged["settings"]["n_questions"] == 2 and merged["settings"]["wall_s"] == 4.0
    assert merged["gates"]["line"]["f1"]["delta"] == pytest.approx(-0.5)
    assert merged["configs"]["line"]["f1"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="a question appears in more than one report"):
        merge_reports([chunk("q1", 1, 1), chunk("q1", 1, 1)])
