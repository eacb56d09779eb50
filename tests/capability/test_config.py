"""MultiHopConfig: the shipped YAML, round trips, errors that name key and file, secrets."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.strategies import STRATEGIES
from rootweaver_capabilities.config import (
    CAPABILITY_FLAG,
    ConfigError,
    MultiHopConfig,
    knob_reference,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "configs" / "retrieval" / "multi_hop.yaml"


def _flatten(mapping: dict, prefix: str = "") -> dict:
    """Dotted keys of the leaves; ``flags.static`` is one leaf (a flag map)."""
    out = {}
    for key, value in mapping.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted != "flags.static":
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def test_shipped_yaml_sets_every_knob_to_its_default():
    raw = yaml.safe_load(SHIPPED.read_text())
    assert set(_flatten(raw)) == {k.key for k in knob_reference()}
    cfg = MultiHopConfig.from_yaml(SHIPPED)
    assert cfg == MultiHopConfig()
    assert cfg.compaction.enabled is True and (cfg.compaction.unit, cfg.compaction.budget) == ("tokens", None)
    assert cfg.flags.capability_flag == CAPABILITY_FLAG
    assert cfg.source == str(SHIPPED)


def test_every_knob_has_a_description_and_defaults_match_the_objects():
    defaults = _flatten(MultiHopConfig().to_mapping())
    for k in knob_reference():
        assert k.doc.strip(), k.key
        assert defaults[k.key] == k.default, k.key


def test_loop_defaults_agree_with_multihoprag():
    from rootweaver_innovations.loop.multihop import MultiHopRAG

    rag, cfg = MultiHopRAG(retriever=None), MultiHopConfig()  # type: ignore[arg-type]
    assert (cfg.max_hops, cfg.max_passages, cfg.stop_rule, cfg.passages_per_hop, cfg.answerability_threshold) == (
        rag.max_hops, rag.max_passages, rag.stop_rule, rag.passages_per_hop, rag.answerability_threshold)
    # a null budget builds the loop's own default, and the tagged budget beside it (test_assembly.py: a null budget is the default one or the tagged one)
    assert cfg.compaction.budget is None and cfg.compaction.unit == rag.compaction_budget.unit
    # the capability compacts by default (its gate passed, ADR 0001); the bare loop leaves it to the caller
    assert cfg.compaction.enabled is True and rag.compaction_enabled is False


def test_schema_defaults_agree_with_the_algorithms_own():
    """The schema reads rootweaver_innovations.defaults; the algorithms' own defaults must say the same."""
    import inspect

    from rootweaver_innovations.answer_rules.registry import DEFAULT_ANSWER_RULES
    from rootweaver_innovations.compaction.strategies import MAX_INPUT_CHARS, MAX_INPUT_LINES
    from rootweaver_innovations.defaults import INDEX_CHUNK_PASSAGES
    from rootweaver_innovations.documents.folders import ChunkingSettings
    from rootweaver_innovations.retrieval.index import build_index

    cfg = MultiHopConfig()
    assert cfg.answer_rules == DEFAULT_ANSWER_RULES
    assert (cfg.compaction.max_input_chars, cfg.compaction.max_input_lines) == (MAX_INPUT_CHARS, MAX_INPUT_LINES)
    assert cfg.retriever.chunking.settings() == ChunkingSettings()
    assert inspect.signature(build_index).parameters["chunk_size"].default == INDEX_CHUNK_PASSAGES


def test_round_trip_of_the_defaults_and_through_yaml(tmp_path):
    cfg = MultiHopConfig.from_yaml(SHIPPED)
    assert MultiHopConfig.from_mapping(cfg.to_mapping()) == cfg
    path = tmp_path / "copy.yaml"
    path.write_text(yaml.safe_dump(cfg.to_mapping()))
    assert MultiHopConfig.from_yaml(path) == cfg


@settings(max_examples=300, deadline=None)
@given(
    max_hops=st.integers(1, 50),
    per_hop=st.integers(1, 20),
    threshold=st.floats(0.0, 1.0, exclude_min=True),
    strategy=st.sampled_from(["line", "submodular"]),
    enabled=st.booleans(),
    budget=st.integers(1, 10**7),
    static=st.dictionaries(st.text("abc.", min_size=1, max_size=6), st.booleans(), max_size=4),
    provider=st.sampled_from(["static", "unleash"]),
    rollout=st.one_of(st.none(), st.text("xyz.", min_size=1, max_size=8)),
)
def test_round_trip_of_arbitrary_valid_configs(
    max_hops, per_hop, threshold, strategy, enabled, budget, static, provider, rollout
):
    cfg = MultiHopConfig.from_mapping({
        "max_hops": max_hops,
        "passages_per_hop": per_hop,
        "answerability_threshold": threshold,
        "compaction": {"enabled": enabled, "strategy": strategy, "budget": budget},
        "flags": {"provider": provider, "static": static, "compaction_flag": rollout},
    })
    again = MultiHopConfig.from_mapping(cfg.to_mapping())
    assert again == cfg
    assert again.to_mapping() == cfg.to_mapping()
    assert cfg.flags.static_values == static


def test_missing_keys_and_an_empty_file_take_defaults(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert MultiHopConfig.from_yaml(empty) == MultiHopConfig()
    partial = MultiHopConfig.from_mapping({"compaction": {"enabled": True}})
    assert partial.compaction.enabled and partial.compaction.budget is None


def test_an_int_is_accepted_for_a_float_knob():
    assert MultiHopConfig.from_mapping({"answerability_threshold": 1}).answerability_threshold == 1.0


BAD = [
    ({"max_hops": 0}, "max_hops", ">= 1"),
    ({"max_hops": -3}, "max_hops", ">= 1"),
    ({"max_hops": "five"}, "max_hops", "integer"),
    ({"max_hops": True}, "max_hops", "integer"),
    ({"max_hops": 2.0}, "max_hops", "integer"),
    ({"passages_per_hop": 0}, "passages_per_hop", ">= 1"),
    ({"answerability_threshold": 0}, "answerability_threshold", "(0, 1]"),
    ({"answerability_threshold": 1.01}, "answerability_threshold", "(0, 1]"),
    ({"answerability_threshold": float("nan")}, "answerability_threshold", "number"),
    ({"bogus": 1}, "bogus", "unknown key"),
    ({"compaction": {"budget": -5}}, "compaction.budget", ">= 1"),
    ({"compaction": {"budget": 0}}, "compaction.budget", ">= 1"),
    ({"compaction": {"budget": "auto"}}, "compaction.budget", "must be an integer or null, got str 'auto'"),
    ({"compaction": {"unit": "words"}}, "compaction.unit", "tokens"),
    ({"compaction": {"enabled": "yes"}}, "compaction.enabled", "true or false"),
    ({"compaction": {"strategy": "greedy"}}, "compaction.strategy", f"one of {sorted(STRATEGIES)}"),
    ({"compaction": {"max_chars": 10}}, "compaction.max_chars", "unknown key"),
    ({"compaction": 5}, "compaction", "mapping"),
    ({"retriever": {"backend": "faiss"}}, "retriever.backend", "one of"),
    ({"retriever": {"corpus": ""}}, "retriever.corpus", "non-empty string"),
    ({"flags": {"provider": "launchdarkly"}}, "flags.provider", "one of ['static', 'unleash']"),
    ({"flags": {"static": {"x": "on"}}}, "flags.static", "flag name -> true/false"),
    ({"flags": {"static": ["x"]}}, "flags.static", "flag name -> true/false"),
    ({"flags": {"unleash": {"refresh_interval": 0}}}, "flags.unleash.refresh_interval", ">= 1"),
    ({"flags": {"unleash": {"url": "127.0.0.1:4242/api"}}}, "flags.unleash.url", "http(s) URL"),
    ({"flags": {"unleash": {"url": "http://127.0.0.1:4242"}}}, "flags.unleash.url", "/api"),
    ({"flags": {"provider": "unleash", "unleash": {"url": None}}}, "flags.unleash.url", "required"),
    ({"flags": {"unleash": {"token_env": "has space"}}}, "flags.unleash.token_env", "environment variable"),
    ({"llm": {"timeout_s": 0}}, "llm.timeout_s", "> 0"),
    ({"llm": {"max_tokens": 4096}}, "llm.max_tokens", "< llm.context_window"),
    ({"llm": {"base_url": "localhost:8000"}}, "llm.base_url", "http(s) URL"),
]


@pytest.mark.parametrize(("mapping", "key", "why"), BAD, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(BAD)])
def test_bad_values_fail_with_one_error_naming_key_and_file(tmp_path, mapping, key, why):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(mapping, allow_unicode=True) if "nan" not in repr(mapping)
                    else "answerability_threshold: .nan\n")
    with pytest.raises(ConfigError) as err:
        MultiHopConfig.from_yaml(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert f"'{key}'" in message
    assert why in message
    with pytest.raises(ValueError, match=r"^<here>: "):  # ConfigError is a ValueError; source= is named
        MultiHopConfig.from_mapping(mapping, source="<here>")


def test_yaml_syntax_errors_duplicate_keys_and_non_mappings_name_the_file(tmp_path):
    cases = {
        "syntax.yaml": "max_hops: [1, 2\n",
        "dup.yaml": "max_hops: 3\nmax_hops: 4\n",
        "list.yaml": "- 1\n- 2\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}(:\d+:\d+)?: "):
            MultiHopConfig.from_yaml(path)
    with pytest.raises(ConfigError, match=r"syntax\.yaml:2:1: invalid YAML: expected ','"):
        MultiHopConfig.from_yaml(tmp_path / "syntax.yaml")
    with pytest.raises(ConfigError, match=r"dup\.yaml:2:1: invalid YAML: duplicate key 'max_hops'"):
        MultiHopConfig.from_yaml(tmp_path / "dup.yaml")
    with pytest.raises(ConfigError, match="cannot read"):
        MultiHopConfig.from_yaml(tmp_path / "missing.yaml")


def test_config_is_immutable_and_compares_by_value_not_source(tmp_path):
    cfg = MultiHopConfig.from_mapping({"max_hops": 3}, source="a.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'max_hops'"):
        cfg.max_hops = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'budget'"):
        cfg.compaction.budget = 1  # type: ignore[misc]
    assert cfg == MultiHopConfig.from_mapping({"max_hops": 3}, source="b.yaml")
    assert cfg != MultiHopConfig()
    assert hash(cfg) == hash(MultiHopConfig(max_hops=3))
    with pytest.raises(ConfigError, match="'max_hops'"):
        MultiHopConfig(max_hops=0)  # the constructor validates too


def test_secrets_come_only_from_the_named_environment_variables(monkeypatch):
    secret_token, secret_key = "default:development.s3cr3t-token", "sk-s3cr3t-key"
    monkeypatch.setenv("RW_TEST_UNLEASH", secret_token)
    monkeypatch.setenv("RW_TEST_LLM", secret_key)
    cfg = MultiHopConfig.from_mapping({
        "flags": {"unleash": {"token_env": "RW_TEST_UNLEASH"}},
        "llm": {"api_key_env": "RW_TEST_LLM"},
    })
    assert cfg.flags.unleash.token() == secret_token
    assert cfg.llm.api_key() == secret_key
    for text in (repr(cfg), str(cfg), repr(cfg.to_mapping()), yaml.safe_dump(cfg.to_mapping())):
        assert secret_token not in text and secret_key not in text
    monkeypatch.delenv("RW_TEST_LLM")
    assert cfg.llm.api_key() is None
    assert MultiHopConfig.from_mapping({"llm": {"api_key_env": None}}).llm.api_key() is None


def test_a_secret_pasted_into_an_env_name_key_is_not_echoed():
    pasted = "sk-live:abc/def=="
    with pytest.raises(ConfigError) as err:
        MultiHopConfig.from_mapping({"llm": {"api_key_env": pasted}}, source="x.yaml")
    assert "'llm.api_key_env'" in str(err.value) and pasted not in str(err.value)


def test_other_knobs_ignore_the_environment(monkeypatch):
    monkeypatch.setenv("MAX_HOPS", "1")
    monkeypatch.setenv("ROOTWEAVER_MAX_HOPS", "1")
    assert MultiHopConfig.from_yaml(SHIPPED).max_hops == 10
