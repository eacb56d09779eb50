"""`rootweaver batch` without servers: bad input, resume, no duplicates, identical results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rootweaver_capabilities.batch.run import BatchInputError, done_ids, read_questions, run_batch
from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import MultiHopConfig


def _questions(path: Path, golden_questions, n: int = 8) -> list[str]:
    ids = [f"q{i}" for i in range(n)]
    path.write_text("".join(json.dumps({"id": i, "question": q.question}) + "\n"
                            for i, q in zip(ids, golden_questions)), encoding="utf-8")
    return ids


def _answers(path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_id = {d["id"]: d for d in lines}
    assert len(by_id) == len(lines), "an id was written twice"
    return by_id


@pytest.mark.parametrize("content, message", [
    ('{"id": "a", "question": "q"}\nnot json\n', ":2: not a JSON object (JSONDecodeError)"),
    ('[1, 2]\n', ":1: expected a JSON object {id, question}, got list"),
    ('{"question": "q"}\n', ":1: 'id' must be a non-empty string"),
    ('{"id": "a", "question": "  "}\n', ":1: 'question' must be a non-empty string"),
    ('{"id": "a", "question": "q"}\n\n{"id": "a", "question": "r"}\n', ":3: duplicate id 'a' (first on line 1)"),
    (b'{"id": "a", "question": "\xff"}\n', ":1: not a JSON object (UnicodeDecodeError)"),
])
def test_bad_input_names_file_and_line(tmp_path, content, message):
    path = tmp_path / "q.jsonl"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(BatchInputError) as exc:
        read_questions(path)
    assert str(exc.value) == f"{path}{message}"


def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": 1, "question": "q"}\n')
    assert main(["batch", str(path), "--out", str(tmp_path / "a.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:1:" in err
    assert not (tmp_path / "a.jsonl").exists()


def test_one_process_equals_ask_config(tmp_path, golden_questions, capsys):
    ids = _questions(tmp_path / "q.jsonl", golden_questions, 3)
    assert main(["batch", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "a.jsonl"), "--quiet"]) == 0
    got = _answers(tmp_path / "a.jsonl")
    assert sorted(got) == sorted(ids)
    capsys.readouterr()
    cfg = Path(__file__).resolve().parents[2] / "configs" / "retrieval" / "multi_hop.yaml"
    assert main(["ask", "--config", str(cfg), "--json", golden_questions[0].question]) == 0
    assert json.loads(capsys.readouterr().out) == {k: v for k, v in got["q0"].items() if k != "id"}


def test_local_workers_identical_to_one_process(tmp_path, golden_questions):
    ids = _questions(tmp_path / "q.jsonl", golden_questions, 10)
    config = MultiHopConfig()
    one = run_batch(tmp_path / "q.jsonl", tmp_path / "one.jsonl", config, show_progress=False)
    two = run_batch(tmp_path / "q.jsonl", tmp_path / "two.jsonl", config, workers=2, show_progress=False)
    assert one.answered == two.answered == len(ids) and not one.failed and not two.failed
    assert _answers(tmp_path / "one.jsonl") == _answers(tmp_path / "two.jsonl")


def test_resume_skips_done_ids_and_repairs_a_torn_line(tmp_path, golden_questions):
    ids = _questions(tmp_path / "q.jsonl", golden_questions, 6)
    config = MultiHopConfig()
    full = tmp_path / "full.jsonl"
    run_batch(tmp_path / "q.jsonl", full, config, show_progress=False)
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    part = tmp_path / "part.jsonl"
    part.write_text("".join(lines[:2]) + lines[2][:17], encoding="utf-8")  # a crash mid-write
    assert done_ids(part) == {json.loads(line)["id"] for line in lines[:2]}
    s = run_batch(tmp_path / "q.jsonl", part, config, show_progress=False)
    assert (s.skipped, s.answered) == (2, len(ids) - 2)
    assert _answers(part) == _answers(full)
    again = run_batch(tmp_path / "q.jsonl", part, config, show_progress=False)
    assert (again.skipped, again.answered) == (len(ids), 0)
    assert len(part.read_text().splitlines()) == len(ids)


def test_writer_never_writes_an_id_twice(tmp_path):
    """A chunk delivered twice (a resubmitted chunk whose first run also returned) is written once."""
    from rootweaver_capabilities.batch.run import BatchSummary, _Writer

    out = tmp_path / "a.jsonl"
    s = BatchSummary(total=2)
    w = _Writer(out, s, set(), show=False)
    chunk = [("a", True, {"answer": 1}), ("b", False, "RuntimeError: boom")]
    w.deliver(chunk)
    w.deliver(chunk)
    w.deliver([("b", True, {"answer": 2})])
    w.close()
    assert [json.loads(x) for x in out.read_text().splitlines()] == [{"id": "a", "answer": 1}, {"id": "b", "answer": 2}]
    assert s.answered == 2 and not s.failed


def test_failed_questions_are_not_written_and_exit_1(tmp_path, capsys):
    """A question the capability cannot answer (flag off) is reported, not written; exit 1."""
    cfg = tmp_path / "off.yaml"
    cfg.write_text("flags:\n  static: {}\n")
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Who?"}\n')
    assert main(["batch", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "a.jsonl"), "--config", str(cfg),
                 "--quiet"]) == 1
    assert (tmp_path / "a.jsonl").read_text() == ""
    assert "a: RuntimeError: the capability flag" in capsys.readouterr().err


def test_bad_ray_address_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Who?"}\n')
    assert main(["batch", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "a.jsonl"), "--ray", "nowhere"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
