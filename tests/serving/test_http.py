"""`rootweaver serve --http`: a real server process on 127.0.0.1, driven with httpx.

The reader is `none` (extractive) so every request takes milliseconds; the queue and the
deadline are tested on the answering core with a reader that waits on an event.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from rootweaver_capabilities.serving.answerer import MAX_VARIANTS, Answerer, AskOptions, Refusal
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_innovations.answer_rules.extractive import extractive_synthesizer
from rootweaver_innovations.loop.multihop import Answer
from servers import DEMO, REPO, free_port, sse_events, start, stop, write_config


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    proc = start(["serve", "--http", str(port)], write_config(tmp_path_factory.mktemp("http")), port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)


def ask_json(question: str) -> dict:
    """What `rootweaver ask --reader none --json` prints for ``question``."""
    out = subprocess.run([sys.executable, "-m", "rootweaver_capabilities.cli.main", "ask", question, "--reader", "none",
                          "--json"], env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


def test_ask_returns_the_record_of_ask_json(server):
    r = httpx.post(f"{server}/v1/ask", json={"question": DEMO}, timeout=30)
    assert r.status_code == 200
    assert r.json() == ask_json(DEMO)


def test_citations_carry_the_source_and_metadata_of_a_document(tmp_path):
    from fastapi.testclient import TestClient

    from rootweaver_capabilities.serving.http import create_app

    docs = REPO / "tests" / "data" / "meta" / "docs"
    config = MultiHopConfig.from_mapping({"llm": {"provider": "none"}, "retriever": {"corpus": str(docs)}}, source="t")
    with TestClient(create_app(config)) as client:
        record = client.post("/v1/ask", json={"question": "Who rebuilt the harbour of Velmora?"}).json()
    cited = record["answer"]["citations"][0]
    assert cited["source"] == {"path": "harbour.html", "headings": ["The Velmora harbour"], "position": 0,
                               "prev": None, "next": None, "meta": {"title": "The Velmora harbour", "source": "Coastal Courier",
                                        "published": "2023-10-06T21:31:00+02:00", "author": "Ines Halvorsen",
                                        "url": "https://courier.example/velmora-harbour"}}
    assert "meta" not in cited and record["answer"]["text"] == "Tomas Brandt"


def test_per_request_overrides(server):
    off = httpx.post(f"{server}/v1/ask", json={"question": DEMO, "compaction": "off"}, timeout=30).json()
    assert off["strategy"] == "off" and off["budget"] is None and off["context_chars"] == off["full_context_chars"]
    small = httpx.post(f"{server}/v1/ask", json={"question": DEMO, "max_tokens": 60, "compaction": "line"},
                       timeout=30).json()
    assert small["strategy"] == "line" and small["budget"]["limit"] == 60 and small["budget"]["used"] <= 60
    base = httpx.post(f"{server}/v1/ask", json={"question": DEMO}, timeout=30).json()
    assert base["strategy"] == "evidence" and base["budget"]["limit"] == 160  # overrides left the config alone
    assert off["hops"] == small["hops"] == base["hops"]  # the trajectory never depends on compaction


@pytest.mark.parametrize(("body", "status", "needle"), [
    (b'{"question":', 422, "malformed JSON"),
    (b"[1]", 422, "JSON object"),
    (b"", 422, "JSON object"),
    (b'{"q": "x"}', 422, "field 'question'"),
    (b'{"question": 5}', 422, "field 'question'"),
    (b'{"question": "   "}', 422, "field 'question': must not be empty"),
    (b'{"question": "x", "max_tokens": 0}', 422, "field 'max_tokens'"),
    (b'{"question": "x", "max_tokens": "many"}', 422, "field 'max_tokens'"),
    (b'{"question": "x", "compaction": "zip"}', 422, "field 'compaction'"),
    (b'{"question": "x", "colour": "red"}', 422, "field 'colour': not a known field"),
    (json.dumps({"question": "a" * 2001}).encode(), 413, "over the limit of 2,000"),
    (json.dumps({"question": "a" * 50_000}).encode(), 413, "bytes, over the limit"),
])
def test_bad_requests_get_their_status_and_one_line(server, body, status, needle):
    for route in ("/v1/ask", "/v1/ask/stream"):
        r = httpx.post(f"{server}{route}", content=body, headers={"content-type": "application/json"}, timeout=10)
        assert r.status_code == status, r.text
        assert list(r.json()) == ["error"] and "\n" not in r.json()["error"] and needle in r.json()["error"]


def test_wrong_content_type_and_unknown_routes(server):
    r = httpx.post(f"{server}/v1/ask", content=b'{"question": "x"}', headers={"content-type": "text/plain"})
    assert r.status_code == 422 and "Content-Type: application/json" in r.json()["error"]
    assert httpx.get(f"{server}/v1/ask").status_code == 405
    assert httpx.get(f"{server}/nope").json() == {"error": "Not Found"}


def test_concurrent_answers_equal_sequential(server, golden_questions):
    questions = [q.question for q in golden_questions][:8]
    with httpx.Client(timeout=30) as c:
        sequential = {q: c.post(f"{server}/v1/ask", json={"question": q}).json() for q in questions}

    def client(i: int) -> list[tuple[str, dict]]:
        with httpx.Client(timeout=30) as c:
            return [(q, c.post(f"{server}/v1/ask", json={"question": q}).json())
                    for q in questions[i:] + questions[:i]]

    with ThreadPoolExecutor(8) as pool:
        results = [pair for batch in pool.map(client, range(8)) for pair in batch]
    assert len(results) == 64
    assert all(record == sequential[q] for q, record in results)


def test_stream_sends_each_hop_then_the_answer(server):
    with httpx.stream("POST", f"{server}/v1/ask/stream", json={"question": DEMO}, timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.read().decode())
    kinds = [k for k, _ in events]
    record = httpx.post(f"{server}/v1/ask", json={"question": DEMO}, timeout=30).json()
    assert kinds == ["hop"] * record["hop_count"] + ["answer"]
    assert [(d["sub_query"], d["reason"], d["retrieved_ids"]) for _, d in events[:-1]] == [
        (h["sub_query"], h["reason"], h["retrieved_ids"]) for h in record["hops"]]
    assert [d["hop"] for _, d in events[:-1]] == list(range(1, record["hop_count"] + 1))
    assert events[-1][1] == record


def test_a_client_that_leaves_mid_stream_does_not_hurt_the_server(server):
    for _ in range(3):
        with httpx.stream("POST", f"{server}/v1/ask/stream", json={"question": DEMO}, timeout=30) as r:
            first = next(r.iter_bytes())
        assert first.startswith(b"event: hop\n")  # then the connection is dropped
    deadline = time.monotonic() + 30  # the three abandoned answers finish in the background
    while (health := httpx.get(f"{server}/healthz").json())["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert health["status"] == "ok" and health["in_flight"] == 0
    with httpx.stream("POST", f"{server}/v1/ask/stream", json={"question": DEMO}, timeout=30) as r:
        assert sse_events(r.read().decode())[-1][0] == "answer"


def test_healthz_metrics_openapi(server):
    health = httpx.get(f"{server}/healthz").json()
    assert health["status"] == "ok" and health["reader"] == "none"
    head = httpx.head(f"{server}/healthz")  # a load balancer's probe
    assert head.status_code == 200 and head.content == b""
    httpx.post(f"{server}/v1/ask", json={"question": DEMO}, timeout=30)
    metrics = httpx.get(f"{server}/metrics").text
    assert 'multi_hop_requests_total{status="executed"}' in metrics
    assert 'rootweaver_http_responses_total{path="/v1/ask",status="200"}' in metrics
    spec = httpx.get(f"{server}/openapi.json").json()
    assert {"/v1/ask", "/v1/ask/stream", "/healthz", "/metrics"} <= set(spec["paths"])
    assert spec["components"]["schemas"]["AskRequest"]["required"] == ["question"]


def test_two_workers_serve_from_two_processes(tmp_path):
    port = free_port()
    proc = start(["serve", "--http", f"127.0.0.1:{port}", "--workers", "2"], write_config(tmp_path), port)
    try:
        pids = set()
        with httpx.Client(timeout=10) as c:
            deadline = time.monotonic() + 90  # the second worker may still be loading when the first answers
            while len(pids) < 2 and time.monotonic() < deadline:
                pids.add(c.get(f"http://127.0.0.1:{port}/healthz", headers={"connection": "close"}).json()["pid"])
                time.sleep(0.05)
            assert c.post(f"http://127.0.0.1:{port}/v1/ask", json={"question": DEMO}).json()["hop_count"] >= 1
        assert len(pids) == 2 and proc.pid not in pids
    finally:
        stop(proc)


def test_serve_usage_errors_are_one_line():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args in (["--http", "99999"], ["--workers", "2"], ["--http", "8080", "--stdin"]):
        r = subprocess.run([sys.executable, "-m", "rootweaver_capabilities.cli.main", "serve", *args], env=env,
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("rootweaver: error:"), args


# -- the answering core: admission, deadline, variants ------------------------------------------


class GatedReader:
    """The extractive reader, held until ``gate`` is set (a slow model, without the model)."""

    def __init__(self):
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def __call__(self, question, context) -> Answer:
        self.started.release()
        self.gate.wait(timeout=30)
        return extractive_synthesizer(question, context)


def core(**service) -> tuple[Answerer, GatedReader]:
    reader = GatedReader()
    cfg = MultiHopConfig.from_mapping({"service": service})
    return Answerer(cfg, synthesizer=reader), reader


def test_a_full_queue_is_refused_at_once_with_retry_after():
    answerer, reader = core(concurrency=1, queue_depth=2, retry_after_s=3)
    try:
        running = [answerer.submit(DEMO) for _ in range(3)]
        assert reader.started.acquire(timeout=10)
        start = time.perf_counter()
        with pytest.raises(Refusal) as refused:
            answerer.submit(DEMO)
        assert time.perf_counter() - start < 0.1
        assert (refused.value.status, refused.value.retry_after) == (503, 3)
        reader.gate.set()
        assert all(f.result(timeout=30)["answer"]["text"] for f in running)
        assert answerer.in_flight == 0
        assert answerer.submit(DEMO).result(timeout=30)["hop_count"] >= 1  # room again
    finally:
        reader.gate.set()
        answerer.close()


def test_the_request_deadline_is_honoured():
    answerer, reader = core(request_timeout_s=0.3)
    try:
        start = time.perf_counter()
        with pytest.raises(Refusal) as late:
            asyncio.run(answerer.ask(DEMO))
        assert late.value.status == 504 and "0.3 s" in late.value.message
        assert 0.3 <= time.perf_counter() - start < 0.5
    finally:
        reader.gate.set()
        answerer.close()


def test_variants_are_built_from_the_config_and_bounded():
    answerer, reader = core()
    reader.gate.set()
    try:
        base = answerer.capability(AskOptions())
        assert answerer.capability(AskOptions(compaction="evidence")) is base
        # a budget the request names holds for every question, the default's 160 too
        assert answerer.capability(AskOptions(max_tokens=160)).config.compaction.budget == 160
        off = answerer.capability(AskOptions(compaction="off"))
        assert off.config.compaction.enabled is False and answerer.config.compaction.enabled is True
        assert answerer.capability(AskOptions(compaction="off")) is off
        for budget in range(1, MAX_VARIANTS + 3):
            answerer.capability(AskOptions(max_tokens=budget))
        assert len(answerer._variants) == MAX_VARIANTS
        assert answerer.capability(AskOptions(max_tokens=MAX_VARIANTS + 2)).config.compaction.budget == MAX_VARIANTS + 2
    finally:
        answerer.close()


def test_on_hop_sees_every_hop_in_order(demo_retriever):
    from rootweaver_innovations.loop.multihop import MultiHopRAG

    seen = []
    result = MultiHopRAG(demo_retriever).multi_hop_search(DEMO, on_hop=seen.append)
    assert tuple(seen) == result.hops and len(seen) >= 2
