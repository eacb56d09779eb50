"""Integration: the chat client against a real llama.cpp OpenAI-compatible server.

Needs ``LLM_BASE_URL`` (e.g. ``http://127.0.0.1:8765/v1``, started by
``scripts/local_reader.py start``). The kill test starts and kills its own second server
on ``LLM_KILL_PORT`` (default 8766) from the model at ``LLM_MODEL_PATH`` (default: the
SmolLM2 file that ``scripts/local_reader.py setup --model smollm2`` assembles into the
model cache), so the
shared server stays up. ``LLM_CONTEXT_WINDOW`` must match the server's ``--n_ctx``
(default 2048).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from rootweaver_capabilities.readers.errors import LLMUnavailableError, PromptTooLongError
from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_capabilities.readers.token_count import LlamaCppServerCounter
from rootweaver_capabilities.readers.prompts import answer_only_messages
from rootweaver_capabilities.readers.models import MODELS, default_models_dir
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.records import Fact
from rootweaver_innovations.documents.demo import demo_passages, load_questions
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.compaction.packing import Budget
from rootweaver_innovations.retrieval.retrievers import BM25Retriever
from rootweaver_innovations.compaction.strategies import make_compactor

BASE_URL = os.environ.get("LLM_BASE_URL", "")
MODEL_PATH = Path(os.environ.get("LLM_MODEL_PATH", default_models_dir() / MODELS["smollm2"].filename))
CONTEXT_WINDOW = int(os.environ.get("LLM_CONTEXT_WINDOW", "2048"))
KILL_PORT = int(os.environ.get("LLM_KILL_PORT", "8766"))

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not BASE_URL, reason="set LLM_BASE_URL to a running llama.cpp server "
                       "(python scripts/local_reader.py setup/start; .ci/run does this)"),
]


class RecordingTransport(httpx.HTTPTransport):
    """The real HTTP transport, noting every URL it sends (observation only)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url))
        return super().handle_request(request)


def served_model(base_url: str) -> str:
    return httpx.get(f"{base_url}/models", timeout=10).json()["data"][0]["id"]


def make_client(base_url: str, **kw) -> OpenAIChatClient:
    return OpenAIChatClient(base_url, served_model(base_url), api_key_env=None, context_window=CONTEXT_WINDOW,
                            max_tokens=kw.pop("max_tokens", 48), timeout_s=kw.pop("timeout_s", 120), **kw)


@pytest.fixture(scope="module")
def rag_parts():
    passages = demo_passages()
    return BM25Retriever(passages), load_questions()[:2]


def test_question_answered_through_multihop_and_the_server(rag_parts):
    retriever, questions = rag_parts
    client = make_client(BASE_URL)
    assert isinstance(client.token_counter, LlamaCppServerCounter)  # the server's own tokenizer
    for mode in ("answer", "evidence"):
        synth = LLMSynthesizer(client, mode=mode, temperature=0.0, seed=0)
        rag = MultiHopRAG(retriever, synthesizer=synth, compaction_enabled=True, compaction_budget=Budget.chars(800), compactor=make_compactor("line"))
        result = rag.multi_hop_search(questions[0].question)
        assert result.answer is not None and result.answer.error_kind == ""
        assert result.answer.method.startswith(f"openai:{client.model}:{mode}")
        if mode == "answer":
            assert result.answer.text  # a real reply from the reader
        elif not result.answer.method.endswith("(malformed reply)"):
            assert set(result.answer.citations) <= set(result.synth.facts)


def test_counted_prompt_tokens_match_the_server(rag_parts):
    retriever, questions = rag_parts
    client = make_client(BASE_URL, max_tokens=8)
    full = MultiHopRAG(retriever).multi_hop_search(questions[1].question).full
    messages = answer_only_messages(questions[1].question, full.with_facts(full.facts[:8], "headed"))
    completion = client.chat(messages, temperature=0.0, seed=0)
    assert completion.attempts == 1
    assert completion.prompt_tokens == client.count_prompt_tokens(messages)


def test_over_long_prompt_is_refused_before_sending():
    transport = RecordingTransport()
    client = make_client(BASE_URL, transport=transport, max_tokens=64)
    long_context = SynthContext(tuple(Fact(f"d{i}", f"Doc {i}", f"Sentence number {i} says something about topic {i}.", 0)
                                      for i in range(400)), (), "facts")
    messages = answer_only_messages("What does sentence 7 say?", long_context)
    with pytest.raises(PromptTooLongError) as info:
        client.chat(messages)
    assert info.value.prompt_tokens + 64 > CONTEXT_WINDOW
    assert info.value.packet.messages == messages
    assert not any(u.endswith("/chat/completions") for u in transport.urls)  # only tokenize calls went out


@pytest.fixture()
def own_server():
    """A second llama.cpp server owned by this test (killed by its PID)."""
    if not MODEL_PATH.is_file():
        pytest.skip(f"model not found at {MODEL_PATH}; run scripts/local_reader.py setup --model smollm2")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(MODEL_PATH), "--host", "127.0.0.1",
           "--port", str(KILL_PORT), "--n_ctx", "2048", "--n_threads", "2", "--chat_format", "chatml"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{KILL_PORT}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("own llama.cpp server did not come up in 60 s")
    yield base, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def test_server_killed_mid_run_gives_typed_error_with_packet(own_server, rag_parts):
    base, proc = own_server
    retriever, questions = rag_parts
    sleeps: list[float] = []
    client = make_client(base, max_retries=2, backoff_s=0.2, max_tokens=400, timeout_s=30,
                         sleep=lambda s: (sleeps.append(s), time.sleep(s)))
    # Run 1: the server is up and answers.
    synth = LLMSynthesizer(client, mode="answer", temperature=0.0, seed=0, max_tokens=32)
    first = MultiHopRAG(retriever, synthesizer=synth, compaction_enabled=True,
                       compaction_budget=Budget.chars(800), compactor=make_compactor("line")).multi_hop_search(questions[0].question)
    assert first.answer.method.startswith("openai:") and first.answer.error_kind == ""
    sleeps.clear()

    # Run 2: a long generation is in flight when the server is killed.
    messages = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
    caught: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(caught, client.chat, messages, temperature=0.8, seed=7))
    worker.start()
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    worker.join(timeout=60)
    assert len(caught) == 1 and isinstance(caught[0], LLMUnavailableError), caught
    err = caught[0]
    assert err.attempts == 3 and len(err.errors) == 3 and sleeps == [0.2, 0.4]
    assert err.packet.messages == messages and err.packet.body["seed"] == 7
    assert err.packet.body["max_tokens"] == 400 and err.packet.prompt_tokens > 0

    # Run 3: the synthesizer degrades to the extractive answer, this call's outcome in the answer.
    third = MultiHopRAG(retriever, synthesizer=synth).multi_hop_search(questions[1].question)
    assert third.answer.method == "extractive (reader failed: unavailable)"
    assert third.answer.error_kind == "unavailable" and "after 3 attempt(s)" in third.answer.error


def _capture(sink: list[BaseException], fn, *args, **kwargs) -> None:
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread for assertions
        sink.append(exc)
