"""Hostile config and data files: a one-line error naming file and line (or key), exit 2
from the CLI, no traceback, and no hang (each load runs under a 1 s alarm).

The alarm is a hang detector, not a speed test: every case here takes
milliseconds, and a regression (an alias expanded, a recursion, a quadratic message)
takes seconds to minutes.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import MAX_CONFIG_BYTES, ConfigError, MultiHopConfig, knob_reference
from evals.qa_rows import load_qa_rows
from rootweaver_innovations.documents.corpus import CorpusError, load_corpus_jsonl
from rootweaver_innovations.documents.demo import load_questions

from strategies import ALIAS_BOMB, config_mappings, config_texts, deep_nesting, json_values, qa_rows_with_a_hole

REPO = Path(__file__).resolve().parents[2]
HANG_S = 1.0
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Hang(Exception):
    """Raised by the alarm of :func:`no_hang`."""


@contextlib.contextmanager
def no_hang(seconds: float = HANG_S):
    """Fail with :class:`Hang` when the block runs longer than ``seconds`` (SIGALRM)."""
    def fire(_signum, _frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def one_line(message: str, *names: str) -> None:
    assert "\n" not in message and len(message) < 400, message
    for name in names:
        assert name in message, (name, message)


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """``main(argv)`` in-process with an empty stdin, under the hang alarm: (exit code, stderr)."""
    stdin, sys.stdin = sys.stdin, io.StringIO("")
    try:
        with no_hang():
            code = main(argv)
    finally:
        sys.stdin = stdin
    return code, capsys.readouterr().err


# --- the config ------------------------------------------------------------------------------


@SETTINGS
@given(text=config_texts)
def test_any_config_text_loads_or_fails_with_one_line_naming_the_file(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        with no_hang():
            MultiHopConfig.from_yaml(path)
    except ConfigError as exc:
        one_line(str(exc), str(path))


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_config_bytes_load_or_exit_2_from_the_cli_with_one_line(tmp_path, capsys, data):
    path = tmp_path / "c.yaml"
    path.write_bytes(data)
    try:
        with no_hang():
            MultiHopConfig.from_yaml(path)
    except ConfigError:
        code, err = run_cli(["serve", "--config", str(path)], capsys)  # fails at config load, before serving
        assert code == 2
        assert err.startswith("rootweaver: error: ") and err.count("\n") == 1 and "Traceback" not in err
        one_line(err.rstrip("\n"), str(path))


@SETTINGS
@given(mapping=config_mappings())
def test_any_value_in_any_knob_loads_or_names_the_key(tmp_path, mapping):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    try:
        with no_hang():
            MultiHopConfig.from_yaml(path)
    except ConfigError as exc:
        one_line(str(exc), str(path), "key '")


@pytest.mark.parametrize("key", [k.key for k in knob_reference()])
def test_null_in_every_knob_loads_only_where_null_is_allowed(tmp_path, key):
    *parents, leaf = key.split(".")
    mapping: dict = {}
    node = mapping
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = None
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    try:
        cfg = MultiHopConfig.from_yaml(path)
    except ConfigError as exc:
        one_line(str(exc), str(path), f"key '{key}'", "null")
    else:
        value = cfg
        for part in key.split("."):
            value = getattr(value, part)
        assert value is None  # a nullable knob: null means "none", never the string "None"


def test_billion_laughs_is_refused_at_the_first_alias_in_well_under_a_second(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    assert len(ALIAS_BOMB) < 700
    with no_hang(), pytest.raises(ConfigError) as info:
        MultiHopConfig.from_yaml(path)
    one_line(str(info.value), f"{path}:2:", "aliases")


@pytest.mark.parametrize("text", ["a: " + "[" * 5000 + "]" * 5000, "".join(" " * i + "k:\n" for i in range(200))])
def test_deep_nesting_is_a_one_line_error_not_a_recursion_error(tmp_path, text):
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    with no_hang(), pytest.raises(ConfigError) as info:
        MultiHopConfig.from_yaml(path)
    one_line(str(info.value), str(path), "nested deeper than")


@pytest.mark.parametrize("text", [
    "max_hops: [" + ",".join(["1"] * 40_000) + "]\n",  # parsing this in pure-Python YAML took 5 s
    "x" * (MAX_CONFIG_BYTES + 1),
])
def test_an_oversized_config_is_refused_before_parsing(tmp_path, text):
    path = tmp_path / "big.yaml"
    path.write_text(text)
    with no_hang(), pytest.raises(ConfigError) as info:
        MultiHopConfig.from_yaml(path)
    one_line(str(info.value), str(path), f"over {MAX_CONFIG_BYTES:,} bytes")


def test_non_utf8_config_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"max_hops: 3\nllm:\n  model: caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        MultiHopConfig.from_yaml(path)
    one_line(str(info.value), f"{path}:3:", "UTF-8")


def test_a_huge_value_is_abbreviated_in_the_message(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"max_hops": "x" * 20_000, "llm": {"model": [[[list(range(300))]]]}}))
    with pytest.raises(ConfigError) as info:
        MultiHopConfig.from_yaml(path)
    one_line(str(info.value), "key 'max_hops'", "...")


@pytest.mark.parametrize("section, key", [
    ("retriever", "corpus"), ("flags", "static_file"), ("flags.unleash", "bootstrap_file"),
])
def test_a_missing_file_knob_fails_at_config_load(tmp_path, section, key):
    mapping: dict = {}
    node = mapping
    for part in section.split("."):
        node = node.setdefault(part, {})
    node[key] = str(tmp_path / "missing.json")
    with pytest.raises(ConfigError) as info:
        MultiHopConfig.from_mapping(mapping, source="c.yaml")
    one_line(str(info.value), "c.yaml", f"key '{section}.{key}'", "missing.json", "existing file")
    (tmp_path / "missing.json").write_text("{}")
    MultiHopConfig.from_mapping(mapping, source="c.yaml")  # present now: loads


# --- corpus and dataset files -----------------------------------------------------------------


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_corpus_bytes_load_or_fail_with_one_line_naming_file_and_line(tmp_path, data):
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    try:
        with no_hang():
            passages = load_corpus_jsonl(path)
    except CorpusError as exc:
        one_line(str(exc), str(path))
    else:
        assert all(p.id and p.title and p.sentences and all(s.strip() for s in p.sentences) for p in passages)


@SETTINGS
@given(obj=st.dictionaries(st.sampled_from(["id", "title", "text", "sentences"]), json_values, max_size=4))
def test_any_corpus_object_loads_or_names_file_line_and_field(tmp_path, obj):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(obj) + "\n", encoding="utf-8")
    try:
        passages = load_corpus_jsonl(path)
    except CorpusError as exc:
        one_line(str(exc), f"{path}:1: field '")
    else:
        assert [p.id for p in passages] == [obj["id"]] and all(s.strip() for s in passages[0].sentences)


@SETTINGS
@given(row=qa_rows_with_a_hole())
def test_a_qa_row_with_a_null_or_odd_field_loads_or_names_the_field(tmp_path, row):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    try:
        with no_hang():
            rows = load_qa_rows(path)
    except CorpusError as exc:
        one_line(str(exc), f"{path}:1: ")
        assert "field '" in str(exc) or "neither 'context'" in str(exc)
    else:
        (r,) = rows
        for text in (r.id, r.question, r.answer, *r.gold_titles, *(p.title for p in r.passages)):
            assert isinstance(text, str) and text.strip()
        assert all(p.sentences and all(s.strip() for s in p.sentences) for p in r.passages)


@SETTINGS
@given(obj=st.dictionaries(st.sampled_from(["id", "question", "answer", "type", "supporting_titles"]), json_values,
                           max_size=5))
def test_any_golden_question_object_loads_or_names_file_line_and_field(tmp_path, obj):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(obj) + "\n", encoding="utf-8")
    try:
        (q,) = load_questions(path)
    except CorpusError as exc:
        one_line(str(exc), f"{path}:1: field '")
    else:
        assert q.question.strip() and all(isinstance(v, str) for v in (q.id, q.answer, q.type, *q.supporting_titles))


def test_null_supporting_facts_with_titles_still_load_as_paragraph_level_gold(tmp_path):
    path = tmp_path / "rows.jsonl"
    row = {"_id": "q", "question": "Q?", "answer": "A", "supporting_facts": None, "supporting_titles": ["T"],
           "context": [["T", ["One.", "Two."]]]}
    path.write_text(json.dumps(row) + "\n")
    (r,) = load_qa_rows(path)
    assert r.gold_titles == ("T",) and r.gold_sentences == ()


@pytest.mark.parametrize("field, value, named", [
    ("answer", None, "field 'answer' must be a non-empty string, got null"),
    ("_id", None, "field '_id'"),
    ("question", None, "field 'question'"),
    ("context", [["T", [" "]]], "field 'context[0].sentences' has no non-blank sentence"),
    ("context", [[None, ["x"]]], "field 'context[0].title'"),
    ("supporting_facts", [["T", None]], "field 'supporting_facts[0]'"),
])
def test_qa_row_fields_are_named_in_the_error(tmp_path, field, value, named):
    row = {"_id": "q", "question": "Q?", "answer": "A", "supporting_facts": [["T", 0]],
           "context": [["T", ["One."]]], field: value}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(CorpusError) as info:
        load_qa_rows(path)
    one_line(str(info.value), f"{path}:1: {named}")


@pytest.mark.parametrize("line, named", [
    ('{"id": "a", "title": "A", "sentences": [" "]}', "field 'sentences' has no non-blank sentence"),
    ('{"id": "a", "title": "A", "sentences": [null]}', "field 'sentences' must be a list of strings"),
    ('{"id": null, "title": "A", "text": "t"}', "field 'id' must be a non-empty string, got null"),
    ("[" * 100_000, "JSON nested too deeply"),
])
def test_corpus_line_errors(tmp_path, line, named):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "ok", "title": "A", "text": "t"}\n' + line + "\n")
    with no_hang(), pytest.raises(CorpusError) as info:
        load_corpus_jsonl(path)
    one_line(str(info.value), f"{path}:2: {named}")


def test_non_utf8_corpus_and_bad_gzip_name_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "title": "A", "text": "t"}\n{"id": "b", "title": "B\xff", "text": "t"}\n')
    with pytest.raises(CorpusError) as info:
        load_corpus_jsonl(path)
    one_line(str(info.value), f"{path}:2: not valid UTF-8")
    gz = tmp_path / "c.jsonl.gz"
    gz.write_bytes(b"not gzip at all")
    with pytest.raises(CorpusError) as info:
        load_qa_rows(gz)
    one_line(str(info.value), f"{gz}:1: cannot read")


# --- the real command line: exit 2, one line, no traceback -------------------------------------


@pytest.mark.parametrize("name, content, argv", [
    ("bomb.yaml", ALIAS_BOMB.encode(), ["serve", "--config"]),
    ("deep.yaml", ("a: " + "[" * 5000).encode(), ["serve", "--config"]),
    ("latin1.yaml", b"llm:\n  model: caf\xe9\n", ["serve", "--config"]),
    ("deep.jsonl", b"[" * 100_000 + b"\n", ["ask", "q?", "--corpus"]),
    ("latin1.jsonl", b'{"id": "a", "title": "caf\xe9", "text": "t"}\n', ["ask", "q?", "--corpus"]),
    ("rows.jsonl", json.dumps({"_id": "q", "question": None, "answer": "A", "context": []}).encode() + b"\n",
     ["eval", "packing", "--quiet", "--data"]),
    ("questions.jsonl", b'{"question": "Q?", "answer": null}\n', ["eval", "trajectory", "--quiet", "--questions"]),
])
def test_the_cli_exits_2_with_one_line_and_no_traceback(tmp_path, name, content, argv):
    path = tmp_path / name
    path.write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "rootweaver_capabilities.cli.main", *argv, str(path)],
                          cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rootweaver: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert str(path) in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deep_json_in_a_corpus_line_via_hypothesis_sizes(tmp_path, opener):
    @settings(SETTINGS, max_examples=30)
    @given(text=deep_nesting(opener, max_depth=200_000))
    def check(text):
        path = tmp_path / "c.jsonl"
        path.write_text(text + "\n")
        with no_hang(), pytest.raises(CorpusError) as info:
            load_corpus_jsonl(path)
        one_line(str(info.value), f"{path}:1: ")

    check()
