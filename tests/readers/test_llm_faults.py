"""Fault suite of the reader edge.

Fake HTTP servers stand in only for faults a real llama.cpp / vLLM server does not
produce on demand: a trickling or hanging server, 500s, malformed JSON, an empty
``choices`` list, a connection closed mid-body, a 401 that echoes the request headers.
Each is a raw socket server, so the bytes on the wire are exactly the fault.

Checked: every request ends within its deadline + 10% (the deadline is the contract, the
margin is the issue's), the answer degrades to the extractive one with the error kind,
``serve`` answers every input line, and the API key appears in no message, no output and
no log record. The concurrency test runs 16 threads x 200 requests through one capability
whose reader fails on a third of the requests; each request's metadata must carry its own
outcome only.
"""

from __future__ import annotations

import io
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rootweaver_capabilities import MultiHopCapability, MultiHopConfig, RequestContext
from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
from rootweaver_capabilities.readers.redaction import scrub
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_innovations.conventions.wikipedia.questions import choice_options
from rootweaver_innovations.documents.demo import demo_passages, load_questions
from rootweaver_innovations.answer_rules.extractive import extractive_answer
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.records import Fact
from rootweaver_innovations.compaction.packing import QwenTokenCounter
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

KEY = "sk-test-4f7d1c9a0b2e6d8f"
DEADLINE_S = 1.5
MARGIN = 1.10
FACTS = (Fact("d", "Dune", "Dune is a 1965 novel by Frank Herbert.", 0, 0, "Dune author"),
         Fact("d", "Dune", "It won the Hugo Award.", 1, 0, "Dune author"))
CONTEXT = SynthContext(FACTS, ("Dune author",))
QUESTION = "Who wrote Dune?"


def _read_request(conn: socket.socket) -> bytes:
    """Headers and body of one HTTP/1.1 request (Content-Length bodies only)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    need = int(m.group(1)) if m else 0
    while len(body) < need:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _response(status: str, body: bytes, extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}"
            f"Connection: close\r\n\r\n").encode() + body


def _completion(text: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                       "model": "fake"}).encode()


# Each fault: (conn, raw request, stop event) -> None; the connection is closed afterwards.
def trickle_body(conn, _req, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n")
    while not stop.wait(0.2):
        conn.sendall(b" ")


def trickle_headers(conn, _req, stop):
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
        if stop.wait(0.2):
            return
        conn.sendall(bytes([byte]))


def hang(_conn, _req, stop):
    stop.wait(60)


def error_500(conn, _req, _stop):
    conn.sendall(_response("500 Internal Server Error", b'{"error": "boom"}'))


def malformed_json(conn, _req, _stop):
    conn.sendall(_response("200 OK", b'{"choices": [{"message": '))


def empty_choices(conn, _req, _stop):
    conn.sendall(_response("200 OK", b'{"choices": [], "model": "fake"}'))


def mid_body_close(conn, _req, _stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                 + _completion("Frank")[:20])


def header_echo(conn, req, _stop):
    head = req.partition(b"\r\n\r\n")[0]
    conn.sendall(_response("401 Unauthorized", b'{"error": "bad key", "request_headers": ' +
                           json.dumps(head.decode("latin-1")).encode() + b"}"))


FAULTS: dict[str, tuple[Callable, str]] = {  # name -> (fault, expected error kind)
    "trickle_body": (trickle_body, "deadline"),
    "trickle_headers": (trickle_headers, "deadline"),
    "hang": (hang, "deadline"),
    "500s": (error_500, "unavailable"),
    "malformed_json": (malformed_json, "bad_response"),
    "empty_choices": (empty_choices, "bad_response"),
    "mid_body_close": (mid_body_close, "unavailable"),
    "header_echo": (header_echo, "refused"),
}


class FaultServer:
    """A socket server on 127.0.0.1 answering chat requests with ``fault``; the llama.cpp
    tokenize probe gets a 404 (the client then counts with the Qwen tokenizer) unless
    ``probe_faults`` sends it to the fault too."""

    def __init__(self, fault: Callable, probe_faults: bool = False):
        self.fault = fault
        self.probe_faults = probe_faults
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.chat_requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                req = _read_request(conn)
                if not self.probe_faults and b"/extras/tokenize" in req.split(b"\r\n", 1)[0]:
                    conn.sendall(_response("404 Not Found", b"{}"))
                    return
                self.chat_requests += 1
                self.fault(conn, req, self.stop)
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def fault_server() -> Iterator[Callable[..., FaultServer]]:
    servers: list[FaultServer] = []

    def start(fault: Callable, probe_faults: bool = False) -> FaultServer:
        servers.append(FaultServer(fault, probe_faults))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _client(url: str, **kw) -> OpenAIChatClient:
    return OpenAIChatClient(url, "reader", api_key_env="ROOTWEAVER_TEST_KEY", timeout_s=DEADLINE_S, max_retries=2,
                            backoff_s=0.05, context_window=2048, max_tokens=32, **kw)


@pytest.mark.parametrize("name", sorted(FAULTS))
@pytest.mark.parametrize("mode", ["answer", "evidence"])
def test_every_fault_ends_within_the_deadline_degraded_labelled_and_without_the_key(
        name, mode, fault_server, monkeypatch, caplog):
    monkeypatch.setenv("ROOTWEAVER_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    fault, kind = FAULTS[name]
    server = fault_server(fault)
    synth = LLMSynthesizer(_client(server.url, token_counter=QwenTokenCounter()), mode=mode)
    synth.load()  # as `ask` and `serve` do before any deadline: tokenizer and extractive fallback
    started = time.monotonic()
    answer = synth(QUESTION, CONTEXT)
    elapsed = time.monotonic() - started
    assert elapsed <= DEADLINE_S * MARGIN, f"{name}: {elapsed:.2f} s for a {DEADLINE_S} s deadline"
    assert answer.error_kind == kind, answer.error
    assert answer.method == f"extractive (reader failed: {kind})"
    assert answer.text == extractive_answer(QUESTION, FACTS).text
    assert server.chat_requests >= 1
    assert KEY not in answer.error and KEY not in caplog.text
    assert "\n" not in answer.error


def test_after_load_even_a_hanging_tokenize_probe_leaves_requests_their_deadline(fault_server):
    for server in (fault_server(hang), fault_server(hang, probe_faults=True)):  # probe: 404, or hangs too
        client = _client(server.url)
        client.load()  # the probe (bounded by its own deadline) and the tokenizer file, once
        started = time.monotonic()
        answer = LLMSynthesizer(client, mode="answer")(QUESTION, CONTEXT)
        assert time.monotonic() - started <= DEADLINE_S * MARGIN
        assert answer.error_kind == "deadline"


def test_header_echo_body_is_scrubbed_of_key_and_authorization(fault_server, monkeypatch):
    monkeypatch.setenv("ROOTWEAVER_TEST_KEY", KEY)
    server = fault_server(header_echo)
    answer = LLMSynthesizer(_client(server.url, token_counter=QwenTokenCounter()), mode="answer")(QUESTION, CONTEXT)
    assert "HTTP 401" in answer.error and "[redacted]" in answer.error
    assert KEY not in answer.error and "Bearer sk" not in answer.error


@pytest.mark.parametrize("text", [
    f"Authorization: Bearer {KEY}", f'{{"authorization": "Bearer {KEY}"}}', f"'Authorization': 'Basic {KEY}'",
    f"token={KEY} and more", f"bearer {KEY}",
])
def test_scrub_removes_the_key_and_authorization_values(text):
    out = scrub(text, (KEY,))
    assert KEY not in out and "[redacted]" in out


def test_scrub_leaves_ordinary_text_alone():
    text = "token count attempt 1: timeout (ReadTimeout); HTTP 500: boom"
    assert scrub(text, (KEY,)) == text


def test_serve_answers_every_line_through_every_fault(fault_server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ROOTWEAVER_LLM_API_KEY", KEY)
    questions = [q.question for q in load_questions()][1:3]  # [0] is a date comparison: answered without the LLM
    lines, expected = [], []
    for name in ("hang", "500s", "malformed_json", "empty_choices", "mid_body_close", "header_echo"):
        fault, kind = FAULTS[name]
        cfg = tmp_path / f"{name}.yaml"
        # 4 s: room for the default retry policy (backoff 0.5 s + 1 s) before the deadline
        cfg.write_text(f"llm:\n  provider: openai\n  base_url: {fault_server(fault).url}\n  timeout_s: 4.0\n"
                       "  max_tokens: 32\n")
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(questions) + "\n\n"))
        assert main(["serve", "--config", str(cfg)]) == 0  # per-request deadlines: the test above
        out, err = capsys.readouterr()
        got = [json.loads(x) for x in out.splitlines()]
        assert [g["question"] for g in got] == questions, name
        lines += got
        expected += [kind] * len(questions)
        assert KEY not in out and KEY not in err
    assert [g["multi_hop"]["answer"]["error_kind"] for g in lines] == expected
    assert all(g["answer"] and g["method"].startswith("extractive (reader failed:") for g in lines)


def test_serve_survives_a_prompt_over_the_window_by_shrinking_it(fault_server, tmp_path, monkeypatch, capsys):
    # the first golden question's prompt (1994 tokens) did not fit 2048 - 256.
    seen: list[int] = []

    def ok(conn, req, _stop):
        seen.append(len(req))
        conn.sendall(_response("200 OK", _completion('{"answer": "Japan and Hong Kong", "evidence": [1]}')))

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"llm:\n  provider: openai\n  base_url: {fault_server(ok).url}\n  context_window: 600\n"
                   "  max_tokens: 256\n")
    question = load_questions()[2].question
    monkeypatch.setattr("sys.stdin", io.StringIO(question + "\n"))
    assert main(["serve", "--config", str(cfg)]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert line["answer"] == "Japan and Hong Kong" and line["multi_hop"]["answer"]["error_kind"] is None
    assert line["multi_hop"]["answer"]["prompt_tokens"] <= 600 - 256 and len(seen) == 1


# ---- concurrency: 16 threads x 200 requests, a third of them failing -----------------------------------------

_REQ = re.compile(r"\[req (\d+)\]")


class _ThirdFails(BaseHTTPRequestHandler):
    """Answers ``req-N`` for a question tagged ``[req N]``; HTTP 400 when N % 3 == 0."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/extras/tokenize/count"):
            self._send(404, b"{}")
            return
        n = int(_REQ.findall(body["messages"][-1]["content"])[-1])
        if n % 3 == 0:
            self._send(400, json.dumps({"error": f"refused req {n}"}).encode())
        else:
            self._send(200, _completion(f"req-{n}"))

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_sixteen_threads_each_request_carries_only_its_own_outcome():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ThirdFails)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client = OpenAIChatClient(url, "reader", api_key_env=None, timeout_s=30, max_retries=0, max_tokens=16,
                                  token_counter=QwenTokenCounter())
        cap = MultiHopCapability(MultiHopConfig(), retriever=BM25Retriever(demo_passages()),
                                 synthesizer=LLMSynthesizer(client, mode="answer"))
        questions = [q.question for q in load_questions() if choice_options(q.question) is None]  # reader-only

        def one(n: int) -> tuple[int, dict]:
            ctx = RequestContext(query=f"{questions[n % len(questions)]} [req {n}]")
            cap.execute(ctx)
            return n, ctx.metadata["multi_hop"]["answer"]

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(one, range(16 * 200)))
    finally:
        server.shutdown()
        server.server_close()
    assert len(results) == 3200
    wrong = []
    for n, rec in results:
        if n % 3 == 0:
            ok = (rec["error_kind"] == "refused" and f"refused req {n}" in rec["error"]
                  and rec["method"] == "extractive (reader failed: refused)")
        else:
            ok = rec["error_kind"] is None and rec["error"] is None and rec["text"] == f"req-{n}"
        if not ok:
            wrong.append((n, rec))
    assert wrong == []
