"""Integration: the embedded reader (llama-cpp-python in this process) with a real GGUF model.

The model is SmolLM2-135M (fast; poor answers, so only the plumbing is asserted), assembled
into the model cache by ``scripts/local_reader.py setup --model smollm2`` (run_tests.sh
does this before the integration tests); ``LLM_MODEL_PATH`` overrides the file. The same
synthesizer code serves the 1.5B reader that ``rootweaver ask`` uses by default.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.records import Fact
from rootweaver_capabilities.readers.prompts import answer_only_messages
from rootweaver_capabilities.readers.models import MODELS, default_models_dir, reader_installed

MODEL_PATH = Path(os.environ.get("LLM_MODEL_PATH", default_models_dir() / MODELS["smollm2"].filename))

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def client():
    assert reader_installed(), "llama-cpp-python is not installed (extra 'reader')"
    assert MODEL_PATH.is_file(), f"{MODEL_PATH} missing; run scripts/local_reader.py setup --model smollm2"
    from rootweaver_capabilities.readers.embedded import LlamaCppChatClient

    c = LlamaCppChatClient(MODEL_PATH, model="smollm2", context_window=2048, max_tokens=48, timeout_s=60)
    c.load()
    return c


def test_counted_prompt_tokens_are_what_the_model_evaluates(client):
    context = SynthContext((Fact("d", "Dune", "Dune is a 1965 novel by Frank Herbert.", 0),), ("q",), "facts")
    messages = answer_only_messages("Who wrote Dune?", context)
    completion = client.chat(messages, temperature=0.0, seed=0, max_tokens=8)
    assert completion.prompt_tokens == client.count_prompt_tokens(messages)
    assert completion.attempts == 1 and completion.model == "smollm2"


def test_the_model_is_loaded_once_per_process(client):
    from rootweaver_capabilities.readers.embedded import LlamaCppChatClient

    other = LlamaCppChatClient(MODEL_PATH, model="smollm2", context_window=2048, max_tokens=48)
    assert other._llama()[0] is client._llama()[0]


def test_generation_stops_at_the_deadline_and_degrades(client):
    from rootweaver_capabilities.readers.embedded import LlamaCppChatClient

    # generation stops before the token step that would cross the deadline, and load() has
    # readied the extractive fallback, so the answer arrives within the deadline + 10%
    slow = LlamaCppChatClient(MODEL_PATH, model="smollm2", context_window=2048, max_tokens=1900, timeout_s=5.0)
    synth = LLMSynthesizer(slow, mode="answer", temperature=0.8, seed=1)
    synth.load()
    started = time.monotonic()
    context = SynthContext((Fact("l", "Lighthouse", "A tower.", 0),), ("q",))
    answer = synth("Write a very long story about a lighthouse keeper, in many chapters.", context)
    elapsed = time.monotonic() - started
    assert answer.error_kind == "deadline" and answer.method == "extractive (reader failed: deadline)"
    assert elapsed <= 5.0 * 1.10


def test_ask_with_the_local_reader_prints_its_answer(capsys):
    assert main(["ask", "--reader", "local", "--model-path", str(MODEL_PATH), "--model", "smollm2", "--json",
                 "--compaction", "line", "--max-chars", "800"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"]["method"].startswith("local:smollm2:evidence")
    assert out["answer"]["reader"] == "local:smollm2" and out["answer"]["prompt_tokens"] > 0
    assert set(out["answer"]["cited_lines"]) <= set(out["synth_context"].split("\n"))


def test_quality_eval_runs_the_product_path_with_the_embedded_reader(tmp_path, capsys):
    code = main(["eval", "quality", "--rows", "odd", "--limit", "40", "--questions", "2", "--model-path",
                 str(MODEL_PATH), "--model", "smollm2", "--out", str(tmp_path), "--quiet"])
    assert code in (0, 1)  # the gate may fail with a 135M reader; the report must be complete
    rep = json.loads((tmp_path / "quality.json").read_text())
    assert rep["settings"]["reader"] == "local" and rep["settings"]["pool_passages"] > 100
    assert rep["trajectory_mismatches"] == 0 and len(rep["rows"]) == 4  # 2 questions x (on, off)
    for config in rep["configs"].values():
        assert config["mean_prompt_tokens"] > 0 and config["mean_seconds"] > 0
        assert config["errors"] == {}
    assert "F1 if AiC" in (tmp_path / "quality.md").read_text()
