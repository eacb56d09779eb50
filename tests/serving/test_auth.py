"""API keys on `serve --http` and `mcp --http`: where keys come from, who is let in, and that a
key never comes back out (responses, log records, server stderr, error messages).

The FastAPI app runs in process (TestClient) and as a real `rootweaver serve --http` process;
the MCP server as a real `rootweaver mcp --http` process driven by the SDK's client.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rootweaver_capabilities.cli.argtypes import UsageError
from rootweaver_capabilities.cli.options import service_keys
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.serving import auth
from rootweaver_capabilities.serving.auth import API_KEY_ENV, ApiKeyError, ApiKeyGate, is_loopback, load_api_keys
from rootweaver_capabilities.serving.http import create_app
from servers import DEMO, REPO, free_port, start, stop, write_config

KEY = "rw-Key/Qa+7Lm3=Tt0_Rr8x9"  # '/', '+' and '=' change under JSON and URL encoding
OTHER_KEY = "second-key-0123456789abcdef"
UNAUTHORIZED = {"error": "missing or invalid API key"}
ENV = {k: v for k, v in os.environ.items() if k != API_KEY_ENV}


def leaks(text: str) -> bool:
    """Whether ``text`` holds a key as sent, JSON-escaped or URL-encoded."""
    forms = {KEY, KEY.replace("/", "\\/"), quote(KEY, safe=""), quote_plus(KEY), quote(KEY, safe="").lower()}
    return any(f in text for f in forms | {OTHER_KEY})


def response_leaks(r: httpx.Response) -> bool:
    return leaks(r.text) or any(leaks(f"{k}: {v}") for k, v in r.headers.items())


def bearer(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# -- where keys come from ------------------------------------------------------------------------


def test_keys_from_the_environment_a_file_and_the_option(tmp_path):
    path = tmp_path / "keys"
    path.write_text(f"# service keys\n\n  {OTHER_KEY}  \n   # rotated out: old-key-0000000000000\n{KEY}\n")
    assert load_api_keys(path, environ={}) == (OTHER_KEY, KEY)
    assert load_api_keys(path, "third-key-0123456789", environ={API_KEY_ENV: KEY}) == (
        KEY, OTHER_KEY, "third-key-0123456789")
    assert load_api_keys(environ={API_KEY_ENV: "  "}) == ()


def test_an_empty_or_unreadable_key_file_is_one_line_naming_it(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n# nothing yet\n   \n")
    with pytest.raises(ApiKeyError, match=rf"^--api-key-file {empty}: no key in it \(one key a line"):
        load_api_keys(empty, environ={})
    with pytest.raises(ApiKeyError, match=rf"^--api-key-file {tmp_path / 'missing'}: cannot read it \(No such file"):
        load_api_keys(tmp_path / "missing", environ={})
    with pytest.raises(ApiKeyError, match=rf"^--api-key-file {tmp_path}: cannot read it \("):
        load_api_keys(tmp_path, environ={})
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe" + KEY.encode())
    with pytest.raises(ApiKeyError, match=r"cannot read it \(not UTF-8 text\)$"):
        load_api_keys(binary, environ={})


@pytest.mark.parametrize("bad", ["short-key", "has a space in the middle!", "non-ascii-key-" + "\u00e9" * 5])
def test_a_malformed_key_is_named_by_where_it_is_never_shown(tmp_path, bad):
    path = tmp_path / "keys"
    path.write_text(f"{KEY}\n{bad}\n")
    with pytest.raises(ApiKeyError, match=rf"^--api-key-file {path}:2: an API key must be at least 16 visible") as err:
        load_api_keys(path, environ={})
    assert bad not in str(err.value)
    with pytest.raises(ApiKeyError, match=rf"^\${API_KEY_ENV}: an API key must be") as err:
        load_api_keys(environ={API_KEY_ENV: bad})
    assert bad not in str(err.value)
    with pytest.raises(ApiKeyError, match=r"^--api-key: an API key must be at least 16 visible") as err:
        load_api_keys(key=bad, environ={})
    assert bad not in str(err.value)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("localhost", True), ("LocalHost", True),
    ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("192.168.0.7", False), ("fe80::1", False),
    ("example.org", False), ("localhost.example.org", False),
])
def test_only_loopback_addresses_count_as_local(host, loopback):
    assert is_loopback(host) is loopback


def _args(http: tuple[str, int] | None, key_file: Path | None = None, key: str | None = None,
          insecure: bool = False) -> argparse.Namespace:
    return argparse.Namespace(http=http, api_key_file=key_file, api_key=key, insecure_no_key=insecure)


def test_a_public_address_without_a_key_is_refused_unless_insecure(monkeypatch):
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    with pytest.raises(UsageError, match=r"^0\.0\.0\.0 is reachable from other machines and no API key is set"):
        service_keys(_args(("0.0.0.0", 8080)))
    assert service_keys(_args(("0.0.0.0", 8080), insecure=True)) == ()
    assert service_keys(_args(("127.0.0.1", 8080))) == ()
    assert service_keys(_args(("0.0.0.0", 8080), key=KEY)) == (KEY,)
    monkeypatch.setenv(API_KEY_ENV, KEY)
    assert service_keys(_args(("10.0.0.5", 8080))) == (KEY,)
    with pytest.raises(UsageError, match=r"^--api-key, --insecure-no-key: for --http only"):
        service_keys(_args(None, key=KEY, insecure=True))
    assert service_keys(_args(None)) == ()  # the ambient variable alone does not refuse stdio / stdin


def test_the_command_line_refuses_in_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("# no key\n")
    cases = [
        (["serve", "--http", "0.0.0.0:1"], "0.0.0.0 is reachable from other machines and no API key is set"),
        (["mcp", "--http", "0.0.0.0:1"], "0.0.0.0 is reachable from other machines and no API key is set"),
        (["serve", "--http", "1", "--api-key-file", str(empty)], f"--api-key-file {empty}: no key in it"),
        (["mcp", "--http", "1", "--api-key-file", str(tmp_path / "nope")], f"--api-key-file {tmp_path / 'nope'}: "
                                                                           "cannot read it"),
        (["serve", "--api-key-file", str(empty)], "--api-key-file: for --http only"),
        (["serve", "--http", "1", "--api-key", "too-short"], "--api-key: an API key must be at least 16"),
    ]
    for argv, message in cases:
        r = subprocess.run([sys.executable, "-m", "rootweaver_capabilities.cli.main", *argv],
                           env={**ENV, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (argv, r.stderr)
        assert r.stderr.startswith("rootweaver: error: ") and message in r.stderr, (argv, r.stderr)
        assert "too-short" not in r.stderr


# -- the gate on its own: which requests are public, every key compared ---------------------------


async def _ok(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _through(gate: ApiKeyGate, method: str, path: str, headers: list[tuple[bytes, bytes]] = ()) -> int:
    """The status ``gate`` answers a request with (200 when it lets it through to the app)."""
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": method, "path": path, "headers": list(headers), "query_string": b""}
    asyncio.run(gate(scope, receive, send))
    return sent[0]["status"]


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/healthz", 200), ("HEAD", "/healthz", 200), ("GET", "/", 200), ("GET", "/static/app.js", 200),
    ("GET", "/static/css/site.css", 200), ("POST", "/healthz", 401), ("GET", "/healthz/", 401),
    ("GET", "/static/../v1/ask", 401), ("GET", "/static", 401), ("POST", "/static/x", 401),
    ("GET", "/metrics", 401), ("GET", "/openapi.json", 401), ("GET", "/docs", 401), ("POST", "/mcp", 401),
])
def test_only_get_of_health_the_page_and_static_files_is_public(method, path, status):
    assert _through(ApiKeyGate(_ok, [KEY]), method, path) == status


def test_metrics_public_opens_metrics_only():
    gate = ApiKeyGate(_ok, [KEY], metrics_public=True)
    assert _through(gate, "GET", "/metrics") == 200
    assert _through(gate, "GET", "/openapi.json") == 401 and _through(gate, "POST", "/v1/ask") == 401


def test_every_configured_key_is_compared_in_constant_time(monkeypatch):
    calls: list[bytes] = []
    compare = hmac.compare_digest

    def counting(a, b):
        calls.append(b)
        return compare(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    keys = [KEY, OTHER_KEY, "third-key-0123456789"]
    gate = ApiKeyGate(_ok, keys)
    for token, status in ((KEY, 200), ("third-key-0123456789", 200), ("wrong-key-0123456789", 401)):
        calls.clear()
        assert _through(gate, "POST", "/v1/ask", [(b"authorization", f"Bearer {token}".encode())]) == status
        assert calls == [k.encode() for k in keys]  # all of them, whichever matched
    with pytest.raises(ValueError, match="needs at least one key"):
        ApiKeyGate(_ok, [])


# -- the real app, in process --------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    config = MultiHopConfig.from_mapping({"llm": {"provider": "none"}}, source="test")
    with TestClient(create_app(config, [KEY, OTHER_KEY])) as c:
        yield c


ROUTES = [("POST", "/v1/ask"), ("POST", "/v1/ask/stream"), ("GET", "/metrics"), ("GET", "/openapi.json"),
          ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/no-such-route"), ("DELETE", "/healthz")]
NOT_A_KEY = [{}, bearer("wrong-key-0123456789"), bearer(KEY + "x"), bearer(KEY[:-1]), {"Authorization": KEY},
             {"Authorization": f"Basic {KEY}"}, {"Authorization": f"Token {KEY}"}, {"X-API-Key": KEY},
             {"Authorization": "Bearer "}]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_but_health_needs_the_key(client, method, path):
    for headers in NOT_A_KEY:
        r = client.request(method, path, headers=headers, json={"question": DEMO}, params={"api_key": KEY})
        assert r.status_code == 401, (headers, r.text)
        assert r.json() == UNAUTHORIZED and r.headers["www-authenticate"] == "Bearer"
        assert not response_leaks(r)


def test_health_is_open_and_the_key_opens_the_rest(client):
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get("/").status_code == 200 and client.get("/static/page.js").status_code == 200  # the page
    assert client.get("/static/app.js").json() == {"error": "Not Found"}  # public, not there
    for key in (KEY, OTHER_KEY):
        r = client.post("/v1/ask", json={"question": DEMO}, headers=bearer(key))
        assert r.status_code == 200 and r.json()["hop_count"] >= 1
    lower = client.post("/v1/ask", json={"question": DEMO}, headers={"authorization": f"bearer {KEY}"})
    assert lower.status_code == 200
    stream = client.post("/v1/ask/stream", json={"question": DEMO}, headers=bearer())
    assert stream.status_code == 200 and "event: answer" in stream.text
    assert client.get("/openapi.json", headers=bearer()).json()["info"]["title"] == "rootweaver"
    client.post("/v1/ask", json={"question": DEMO})
    metrics = client.get("/metrics", headers=bearer()).text
    assert 'rootweaver_http_responses_total{path="/v1/ask",status="401"}' in metrics  # refusals are counted


def test_the_key_comes_back_in_no_response_log_or_stderr(client, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    long_question = f"{KEY} " * 200
    requests = [
        ("POST", "/v1/ask", {"json": {"question": f"Who holds {KEY}?", "user_id": KEY, "session_id": KEY}}),
        ("POST", "/v1/ask/stream", {"json": {"question": f"Who holds {KEY}?"}}),
        ("POST", "/v1/ask", {"json": {"question": DEMO, KEY: 1}}),  # unknown field: its name in the error
        ("POST", "/v1/ask", {"content": f'{{"question": "{KEY}', "headers": {"content-type": "application/json"}}),
        ("POST", "/v1/ask", {"json": {"question": DEMO, "max_tokens": KEY}}),
        ("POST", "/v1/ask", {"json": {"question": DEMO, "compaction": KEY}}),
        ("POST", "/v1/ask", {"json": {"question": long_question}}),  # 413
        ("POST", "/v1/ask/stream", {"json": {"question": "  "}, "params": {"key": KEY}}),  # 422, key in the query
        ("GET", f"/v1/{KEY}", {}),  # 404, key in the path
        ("GET", "/healthz/", {"params": {"token": KEY}, "follow_redirects": False}),  # 307: Location has the query
        ("GET", "/healthz", {"params": {"token": KEY}, "headers": {"X-Echo": KEY}}),
        ("PUT", "/v1/ask", {"json": {"question": KEY}}),  # 405
    ]
    statuses = []
    for method, path, kwargs in requests:
        headers = {**bearer(), **kwargs.pop("headers", {})}
        r = client.request(method, path, headers=headers, **kwargs)
        statuses.append(r.status_code)
        assert not response_leaks(r), (method, path, r.status_code, r.text, dict(r.headers))
    assert statuses == [200, 200, 422, 422, 422, 422, 413, 422, 404, 307, 200, 405]
    try:  # what a component would log: the key in the arguments and in an exception's message
        raise RuntimeError(f"upstream refused {KEY}")
    except RuntimeError:
        logging.getLogger("rootweaver.test").exception("request for %s failed", KEY)
    logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/1.1" %d', "127.0.0.1", "GET", f"/v1/ask?key={KEY}", 401)
    assert "[redacted]" in caplog.text and not leaks(caplog.text)
    assert all(not leaks(r.getMessage()) for r in caplog.records)
    out, err = capfd.readouterr()
    assert not leaks(out) and not leaks(err)


def test_metrics_public_is_read_from_the_config():
    config = MultiHopConfig.from_mapping({"llm": {"provider": "none"}, "service": {"metrics_public": True}})
    with TestClient(create_app(config, [KEY])) as c:
        assert c.get("/metrics").status_code == 200
        assert c.get("/openapi.json").status_code == 401


# -- real server processes -----------------------------------------------------------------------


def test_serve_with_a_key_file_and_the_environment(tmp_path):
    """Two workers: the keys reach the worker processes too."""
    keys = tmp_path / "keys"
    keys.write_text(f"# rootweaver\n{OTHER_KEY}\n")
    port = free_port()
    proc = start(["serve", "--http", f"127.0.0.1:{port}", "--workers", "2", "--api-key-file", str(keys)],
                 write_config(tmp_path), port, timeout=60, env={API_KEY_ENV: KEY})
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=30) as c:
            refused = c.post(f"{base}/v1/ask", json={"question": DEMO}, params={"api_key": KEY})
            assert refused.status_code == 401 and refused.json() == UNAUTHORIZED
            assert refused.headers["www-authenticate"] == "Bearer"
            assert c.get(f"{base}/metrics").status_code == 401
            for key in (KEY, OTHER_KEY) * 3:  # new connections: either worker may answer
                r = c.post(f"{base}/v1/ask", json={"question": f"{DEMO} {KEY}"}, params={"key": KEY},
                           headers={**bearer(key), "connection": "close"})
                assert r.status_code == 200 and not response_leaks(r)
            bad = c.post(f"{base}/v1/ask", content=f'{{"{KEY}": ',
                         headers={**bearer(), "content-type": "application/json"})
            assert bad.status_code == 422 and not response_leaks(bad)
    finally:
        err = stop(proc)
    assert "ready" in err and not leaks(err)


def test_mcp_over_streamable_http_needs_the_key(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rootweaver_capabilities.cli.main", "mcp", "--http", str(port),
                             "--api-key", KEY, "--config", str(write_config(tmp_path))],
                            env={**ENV, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    refused = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert proc.poll() is None and refused is not None
        assert refused.status_code == 401 and refused.json() == UNAUTHORIZED
        assert refused.headers["www-authenticate"] == "Bearer"

        async def main() -> None:
            async with httpx.AsyncClient(headers=bearer(), timeout=30) as http, \
                    streamable_http_client(url, http_client=http) as (read, write, _), \
                    ClientSession(read, write) as session:
                await session.initialize()
                assert [t.name for t in (await session.list_tools()).tools] == ["multi_hop_answer"]
                res = await session.call_tool("multi_hop_answer", {"question": f"{DEMO} {KEY}"})
                assert not res.isError and res.structuredContent["hops"]
                assert not leaks(str(res.structuredContent)) and not leaks(str(res.content))
                bad = await session.call_tool("multi_hop_answer", {"question": KEY * 100})
                assert bad.isError and not leaks(str(bad.content))

        asyncio.run(asyncio.wait_for(main(), 60))
        with pytest.raises(httpx.HTTPStatusError, match="401 Unauthorized"):
            httpx.post(url, json={}, headers=bearer("wrong-key-0123456789")).raise_for_status()
    finally:
        err = stop(proc)
    assert not leaks(err)
