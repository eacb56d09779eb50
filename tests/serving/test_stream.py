"""`POST /v1/ask/stream`: hop events as the loop takes them, then the record of `POST /v1/ask`
(or one error event), behind the API key; a client that leaves costs the server nothing.

The app runs in process (TestClient, extractive reader); the timing of the events is tested on
the answering core with a reader held on an event.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi.testclient import TestClient

from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.serving import http
from rootweaver_capabilities.serving.answerer import Answerer, AskOptions
from rootweaver_capabilities.serving.http import create_app
from rootweaver_capabilities.serving.stream import open_stream
from rootweaver_innovations.answer_rules.extractive import extractive_synthesizer
from servers import DEMO, sse_events

KEY = "stream-Key/0123+4567=89"
CONFIG = MultiHopConfig.from_mapping({"llm": {"provider": "none"}}, source="test")


def bearer(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(CONFIG, [KEY])) as c:
        yield c


def test_hops_in_order_then_the_record_of_ask(client, golden_questions, demo_passages):
    titles = {p.id: p.title for p in demo_passages}
    for question in [DEMO, *(q.question for q in golden_questions[:4])]:
        r = client.post("/v1/ask/stream", json={"question": question}, headers=bearer())
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.text)
        record = client.post("/v1/ask", json={"question": question}, headers=bearer()).json()
        assert [kind for kind, _ in events] == ["hop"] * record["hop_count"] + ["answer"], question
        hops = [data for _, data in events[:-1]]
        assert [h["hop"] for h in hops] == list(range(1, record["hop_count"] + 1))
        assert [{k: h[k] for k in ("sub_query", "reason", "retrieved_ids")} for h in hops] == record["hops"]
        assert all(h["titles"] == [titles[i] for i in h["retrieved_ids"]] for h in hops)
        assert events[-1][1] == record  # synth context, budget, dropped lines, answer: the same record


def test_the_overrides_reach_the_stream(client):
    body = {"question": DEMO, "max_tokens": 60, "compaction": "line"}
    final = sse_events(client.post("/v1/ask/stream", json=body, headers=bearer()).text)[-1]
    assert final == ("answer", client.post("/v1/ask", json=body, headers=bearer()).json())
    assert final[1]["budget"] == {"limit": 60, "unit": "tokens", "used": final[1]["budget"]["used"]}


def test_without_the_key_there_is_no_stream(client):
    for headers in ({}, bearer("wrong-key-0123456789"), {"Authorization": KEY}):
        r = client.post("/v1/ask/stream", json={"question": DEMO}, headers=headers)
        assert r.status_code == 401 and r.json() == {"error": "missing or invalid API key"}
        assert r.headers["content-type"] == "application/json" and r.headers["www-authenticate"] == "Bearer"


def test_the_key_never_comes_back_in_a_stream(client):
    r = client.post("/v1/ask/stream", json={"question": f"{DEMO} {KEY}"}, headers=bearer())
    events = sse_events(r.text)
    assert r.status_code == 200 and events[-1][0] == "answer"
    assert KEY not in r.text and KEY.replace("/", "\\/") not in r.text
    assert events[0][1]["sub_query"].endswith("[redacted]")  # hop 1 asks the question itself


def test_an_error_after_the_hops_is_one_last_error_event(monkeypatch):
    def failing(question, context):
        raise RuntimeError("the reader fell over")

    monkeypatch.setattr(http, "Answerer", lambda config, metrics: Answerer(config, metrics, synthesizer=failing))
    with TestClient(create_app(CONFIG)) as c:
        events = sse_events(c.post("/v1/ask/stream", json={"question": DEMO}).text)
        refused = c.post("/v1/ask", json={"question": DEMO})
        assert c.get("/healthz").json()["in_flight"] == 0
    assert [kind for kind, _ in events[:-1]] == ["hop"] * (len(events) - 1) and len(events) > 2
    message = "internal error: RuntimeError: the reader fell over"
    assert events[-1] == ("error", {"status": 500, "error": message})
    assert (refused.status_code, refused.json()) == (500, {"error": message})


# -- the answering core: timing, deadline, a client that leaves ---------------------------------


class HeldReader:
    """The extractive reader, held until ``gate`` is set; ``called`` is set when it is reached."""

    def __init__(self):
        self.gate = threading.Event()
        self.called = threading.Event()

    def __call__(self, question, context):
        self.called.set()
        self.gate.wait(timeout=10)
        return extractive_synthesizer(question, context)


@pytest.fixture()
def held(request):
    """An answerer whose reader is held; ``request_timeout_s`` from the test's parameter (else 5)."""
    timeout = getattr(request, "param", 5)
    reader = HeldReader()
    answerer = Answerer(MultiHopConfig.from_mapping({"service": {"request_timeout_s": timeout}}), synthesizer=reader)
    yield answerer, reader
    reader.gate.set()
    answerer.close()


def _record_lost_exceptions(loop: asyncio.AbstractEventLoop) -> list[str]:
    lost: list[str] = []
    loop.set_exception_handler(lambda _loop, context: lost.append(context["message"]))
    return lost


def test_each_hop_is_sent_before_the_answer_is_ready(held):
    answerer, reader = held

    async def run() -> tuple[list[bytes], list[bytes], list[str]]:
        lost = _record_lost_exceptions(asyncio.get_running_loop())
        chunks: list[bytes] = []
        events = open_stream(answerer, DEMO, AskOptions())

        async def consume() -> None:
            async for chunk in events:
                chunks.append(chunk)

        task = asyncio.create_task(consume())
        assert await asyncio.to_thread(reader.called.wait, 10)  # every hop taken, the reader not done
        await asyncio.sleep(0.2)
        before = list(chunks)
        reader.gate.set()
        await asyncio.wait_for(task, 10)
        return before, chunks, lost

    before, chunks, lost = asyncio.run(run())
    events = sse_events(b"".join(chunks).decode())
    assert len(before) == len(events) - 1 >= 2 and all(c.startswith(b"event: hop\n") for c in before)
    assert events[-1][0] == "answer" and events[-1][1]["hop_count"] == len(before)
    assert lost == []


@pytest.mark.parametrize("held", [0.3], indirect=True)
def test_past_the_deadline_the_stream_ends_with_a_504_event(held):
    answerer, _reader = held

    async def run() -> list[bytes]:
        return [chunk async for chunk in open_stream(answerer, DEMO, AskOptions())]

    events = sse_events(b"".join(asyncio.run(run())).decode())
    assert events[-1] == ("error", {"status": 504, "error": "request deadline of 0.3 s passed (service.request_timeout_s)"})
    assert {kind for kind, _ in events[:-1]} == {"hop"}


def test_a_client_that_leaves_closes_only_its_own_stream(held):
    answerer, reader = held

    async def run() -> tuple[bytes, list[str]]:
        lost = _record_lost_exceptions(asyncio.get_running_loop())
        events = open_stream(answerer, DEMO, AskOptions())
        first = await anext(events)
        await events.aclose()  # what the server does when the connection drops
        reader.gate.set()
        for _ in range(200):
            if answerer.in_flight == 0:
                break
            await asyncio.sleep(0.05)
        again = await answerer.ask(DEMO)  # the answerer still answers
        assert again["hop_count"] >= 1
        return first, lost

    first, lost = asyncio.run(run())
    assert first.startswith(b"event: hop\n") and answerer.in_flight == 0 and lost == []
