"""Flag providers: static values, and the Unleash provider against a small fake server.

The fake speaks just enough of Unleash's client API (``GET /api/client/features``,
``POST /api/client/register|metrics``) for the real ``UnleashClient`` SDK to poll it;
the real server is exercised in ``tests/integration/test_unleash.py``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rootweaver_capabilities.config import FlagsConfig, MultiHopConfig, UnleashConfig
from rootweaver_capabilities.flags import (
    StaticFlagProvider,
    UnleashFlagProvider,
    bootstrap_payload,
    build_flag_provider,
)

pytest.importorskip("UnleashClient")

FLAG = "eip.capabilities.retrieval.multi_hop.enabled"


def test_static_provider_answers_from_its_mapping_and_ignores_context():
    p = StaticFlagProvider({"a": True, "b": False})
    assert p.is_enabled("a") and p.is_enabled("a", {"userId": "u1"})
    assert not p.is_enabled("b") and not p.is_enabled("never-declared")
    with pytest.raises(ValueError, match="must be true or false"):
        StaticFlagProvider({"a": "yes"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="non-empty"):
        StaticFlagProvider({"": True})


def test_static_provider_from_json_file_and_its_errors(tmp_path):
    good = tmp_path / "flags.json"
    good.write_text(json.dumps({FLAG: True, "other": False}))
    p = StaticFlagProvider.from_json_file(good)
    assert p.is_enabled(FLAG) and not p.is_enabled("other")
    for name, text in {"bad.json": "{nope", "list.json": "[1]", "type.json": '{"x": 1}'}.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=rf"^{tmp_path / name}(:\d+)?: "):
            StaticFlagProvider.from_json_file(tmp_path / name)
    (tmp_path / "latin1.json").write_bytes(b'{"a": true,\n "\xe9": false}')
    with pytest.raises(ValueError, match=r"latin1\.json:2: not valid UTF-8"):
        StaticFlagProvider.from_json_file(tmp_path / "latin1.json")
    with pytest.raises(ValueError, match="cannot read"):
        StaticFlagProvider.from_json_file(tmp_path / "absent.json")


def test_build_flag_provider_static_inline_and_file(tmp_path):
    assert build_flag_provider(FlagsConfig()).is_enabled(FLAG)  # the shipped default: capability on
    path = tmp_path / "f.json"
    path.write_text(json.dumps({FLAG: False}))
    cfg = MultiHopConfig.from_mapping({"flags": {"static_file": str(path)}})
    assert not build_flag_provider(cfg.flags).is_enabled(FLAG)


class FakeUnleash:
    """A threaded HTTP server serving ``payload`` as the client features document."""

    def __init__(self, payload: dict):
        self.payload = payload
        self.auth_headers: list[str | None] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                fake.auth_headers.append(self.headers.get("Authorization"))
                if self.path.split("?")[0] != "/api/client/features":
                    self.send_response(404)
                    self.end_headers()
                    return
                body = json.dumps(fake.payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(202)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/api"


def _wait_for(pred, timeout=8.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


@pytest.fixture
def providers():
    made: list[UnleashFlagProvider] = []

    def make(**settings) -> UnleashFlagProvider:
        p = UnleashFlagProvider(UnleashConfig(**settings), disable_metrics=True)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def test_unleash_provider_polls_sends_the_token_and_keeps_last_values_when_the_server_dies(
    tmp_path, monkeypatch, providers
):
    token = "default:development.unit-test-token"
    monkeypatch.setenv("RW_TEST_TOKEN", token)
    fake = FakeUnleash(bootstrap_payload({FLAG: True, "off.flag": False}))
    bootstrap = tmp_path / "bootstrap.json"
    bootstrap.write_text(json.dumps(bootstrap_payload({FLAG: False})))
    try:
        p = providers(url=fake.url, refresh_interval=1, cache_dir=str(tmp_path / "cache"),
                      bootstrap_file=str(bootstrap), token_env="RW_TEST_TOKEN")
        assert p.is_enabled(FLAG, {"userId": "u1"}) and not p.is_enabled("off.flag")
        assert token in fake.auth_headers
        assert token not in repr(p)
        fake.payload = bootstrap_payload({FLAG: False})  # toggled on the server
        assert _wait_for(lambda: not p.is_enabled(FLAG))
        fake.payload = bootstrap_payload({FLAG: True})
        assert _wait_for(lambda: p.is_enabled(FLAG))
    finally:
        fake.stop()
    time.sleep(2.5)  # at least two failed polls
    assert p.is_enabled(FLAG)  # last known value, not the bootstrap (off)

    # A new process with the server still down: the on-disk cache beats the bootstrap file.
    again = providers(url=fake.url, refresh_interval=1, cache_dir=str(tmp_path / "cache"),
                      bootstrap_file=str(bootstrap), token_env="RW_TEST_TOKEN")
    assert again.initial_source == "cache"
    assert again.is_enabled(FLAG)


def test_cold_start_without_a_server_uses_the_bootstrap_else_everything_is_off(tmp_path, providers):
    bootstrap = tmp_path / "bootstrap.json"
    bootstrap.write_text(json.dumps(bootstrap_payload({FLAG: True, "b": False})))
    url = _closed_port_url()
    booted = providers(url=url, refresh_interval=1, cache_dir=str(tmp_path / "c1"), bootstrap_file=str(bootstrap))
    assert booted.initial_source == "bootstrap"
    assert booted.is_enabled(FLAG) and not booted.is_enabled("b") and not booted.is_enabled("unknown")
    bare = providers(url=url, refresh_interval=1, cache_dir=str(tmp_path / "c2"), bootstrap_file=None)
    assert bare.initial_source == "none"
    assert not bare.is_enabled(FLAG)


def test_the_request_context_reaches_the_strategy(tmp_path, providers):
    payload = {
        "version": 2,
        "features": [{
            "name": "only.alice", "type": "release", "enabled": True, "variants": [],
            "strategies": [{"name": "userWithId", "parameters": {"userIds": "alice"}, "constraints": []}],
        }],
    }
    fake = FakeUnleash(payload)
    try:
        p = providers(url=fake.url, refresh_interval=1, cache_dir=str(tmp_path / "c"))
        assert p.is_enabled("only.alice", {"userId": "alice"})
        assert not p.is_enabled("only.alice", {"userId": "bob"})
        assert not p.is_enabled("only.alice", None)
    finally:
        fake.stop()


def test_an_sdk_failure_is_reported_as_off_never_raised(tmp_path, providers):
    p = providers(url=_closed_port_url(), refresh_interval=1, cache_dir=str(tmp_path / "c"))

    class Exploding:
        def is_enabled(self, *a, **k):
            raise RuntimeError("engine blew up")

        def destroy(self):
            raise RuntimeError("and again")

    real = p._client
    p._client = Exploding()
    assert p.is_enabled(FLAG, {"userId": "x"}) is False
    p.close()  # a failing shutdown is logged, not raised
    p._client = real


def test_the_token_never_reaches_the_logs(tmp_path, monkeypatch, providers, caplog):
    token = "default:development.log-leak-canary"
    monkeypatch.setenv("RW_TEST_TOKEN", token)
    fake = FakeUnleash(bootstrap_payload({FLAG: True}))
    caplog.set_level("DEBUG")
    try:
        p = providers(url=fake.url, refresh_interval=1, cache_dir=str(tmp_path / "c"), token_env="RW_TEST_TOKEN")
        assert p.is_enabled(FLAG)
    finally:
        fake.stop()
    down = providers(url=_closed_port_url(), refresh_interval=1, cache_dir=str(tmp_path / "d"),
                     token_env="RW_TEST_TOKEN")
    assert not down.is_enabled(FLAG)
    assert token in fake.auth_headers  # it was used...
    assert caplog.records and token not in caplog.text  # ...but never logged
