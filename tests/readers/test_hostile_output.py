"""Hostile output: what a corpus, a reader or a server sends back is printed
safely, and the API key never comes back out.

- Terminal: passages with ESC, BEL, NUL, DEL, C1 controls, bidi overrides and line
  separators reach `ask`'s human output only as visible escapes.
- JSON: `ask --json` and `serve` print ASCII JSON (U+2028, U+2029, NEL escaped), which
  parses back to the exact text.
- Secrets: a server that echoes the key raw, JSON-escaped, percent-encoded or in base64
  (at any alignment) in an error body or in the answer itself: the key is in no output,
  by an oracle that decodes every base64 run and percent escape it finds.
- Replies: a gzip bomb is refused at ``max_reply_bytes``; ``null`` content has its own kind.

The echoing servers are raw sockets (``tests/readers/test_llm_faults.py``'s): no real server echoes
a key, so that fault is injected.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import sys
import tracemalloc
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm_faults import (
    CONTEXT,
    FACTS,
    QUESTION,
    FaultServer,
    _completion,
    _response,
)

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.readers.errors import LLMNullContentError, LLMReplyTooLargeError
from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
from rootweaver_capabilities.readers.redaction import redact, scrub
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_capabilities.cli.safe_output import UNSAFE, json_text, terminal_safe
from rootweaver_innovations.compaction.synth_context import SynthContext

HOSTILE = "\x1b[31mred\x1b[0m \x07bell \x00nul \x7fdel \x85nel \x9b31m \u202eevil\u202c \u2066iso\u2069 \u2028ls \u2029ps"
KEY = "sk-live-Zx9/Qa+7Lm3=Tt0_Rr8-Ww5"


# --- terminal and JSON output -------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_terminal_safe_leaves_no_unsafe_character_and_changes_nothing_else(text):
    safe = terminal_safe(text)
    assert not UNSAFE.search(safe)
    assert "\n" not in terminal_safe(text, one_line=True)
    if not UNSAFE.search(text):
        assert safe == text
    assert re.sub(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}", "", safe).replace("\\", "") == \
        UNSAFE.sub("", text).replace("\\", "")  # only the unsafe characters were replaced


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12))
def test_json_text_is_one_ascii_line_that_round_trips(value):
    line = json_text(value)
    assert line.isascii() and "\n" not in line and not UNSAFE.search(line)
    assert json.loads(line) == value


@pytest.fixture
def hostile_corpus(tmp_path):
    path = tmp_path / "hostile.jsonl"
    rows = [{"id": "h1", "title": "Acme \u202eRocket", "text": f"Acme Rocket was launched in Paris. {HOSTILE}."},
            {"id": "h2", "title": "Paris", "text": f"Paris is a city on the river. {HOSTILE}."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ask_human_output_has_no_raw_control_or_bidi_character(hostile_corpus, capsys):
    question = "Where was Acme \u202eRocket launched?\x1b]0;pwned\x07"
    assert main(["ask", question, "--reader", "none", "--corpus", str(hostile_corpus),
                 "--compaction", "off"]) == 0
    out, err = capsys.readouterr()
    assert "\\x1b[31mred" in out and "\\u202eevil" in out  # shown, as escapes
    assert not UNSAFE.search(out) and not UNSAFE.search(err)


def test_ask_json_is_ascii_and_carries_the_exact_text(hostile_corpus, capsys):
    assert main(["ask", "Where was Acme Rocket launched?", "--reader", "none", "--json",
                 "--corpus", str(hostile_corpus), "--compaction", "off"]) == 0
    out = capsys.readouterr().out
    assert out.isascii() and not UNSAFE.search(out)
    context = json.loads(out)["synth_context"]  # the loop folds whitespace (NEL, U+2028/9); the rest is exact
    assert "\x1b[31mred\x1b[0m \x07bell \x00nul \x7fdel" in context and "\u202eevil\u202c" in context


def test_serve_prints_one_ascii_json_line_per_question(hostile_corpus, tmp_path, capsys, monkeypatch):
    config = tmp_path / "c.yaml"
    config.write_text(f"retriever:\n  corpus: {hostile_corpus}\nllm:\n  provider: none\n", encoding="utf-8")
    questions = ["Where was Acme Rocket launched?\u2028second line", "Paris\x85river\u2029?"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(q + "\n" for q in questions)))
    assert main(["serve", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.isascii() for line in lines)
    assert [json.loads(line)["question"] for line in lines] == questions


def test_an_error_line_about_hostile_input_is_one_safe_line(tmp_path, capsys):
    bad = tmp_path / "bad\u202e\x1b.jsonl"
    bad.write_text('{"id": "a", "title": "A"}\n', encoding="utf-8")
    assert main(["ask", "q?", "--reader", "none", "--corpus", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not UNSAFE.search(err) and "bad\\u202e\\x1b.jsonl:1" in err


# --- the key in every encoding ------------------------------------------------------------------


def leaks(text: str, key: str) -> bool:
    """Whether ``key`` can be read back from ``text``: raw, after JSON or percent unescaping,
    or inside any base64 / URL-safe base64 run at any of its 4 alignments."""
    candidates = {text, unquote(text), unquote_plus(text), text.replace("\\/", "/")}
    try:
        candidates.add(json.loads(f'"{text}"'))
    except ValueError:
        pass
    if any(key in c for c in candidates):
        return True
    raw = key.encode()
    for run in re.findall(r"[A-Za-z0-9+/_-]{8,}", text):
        for start in range(4):
            part = run[start:]
            part = part[: len(part) - 1] if len(part) % 4 == 1 else part
            part += "=" * (-len(part) % 4)
            for alt in (b"+/", b"-_"):
                try:
                    if raw in base64.b64decode(part, altchars=alt, validate=False):
                        return True
                except ValueError:
                    pass
    return False


def encodings(key: str) -> list[str]:
    return [key, json.dumps(key)[1:-1], json.dumps(key)[1:-1].replace("/", "\\/"), quote(key, safe=""),
            quote_plus(key), base64.b64encode(key.encode()).decode(),
            base64.urlsafe_b64encode(key.encode()).decode(),
            base64.b64encode(f'{{"Authorization": "Bearer {key}"}}'.encode()).decode(),
            base64.b64encode(f"x{key}".encode()).decode(), base64.b64encode(f"xy{key}".encode()).decode()]


def test_the_oracle_finds_every_encoding():
    for form in encodings(KEY):
        assert leaks(f"before {form} after", KEY), form


keys = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=12, max_size=48)


@settings(max_examples=300, deadline=None)
@given(key=keys, prefix=st.text(max_size=20), suffix=st.text(max_size=20), which=st.integers(0, 9),
       pad=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=5))
def test_redact_leaves_no_readable_key_in_any_encoding(key, prefix, suffix, which, pad):
    form = encodings(pad + key)[which] if which >= 5 else encodings(key)[which]
    assert not leaks(redact(prefix + form + suffix, [key]), key)
    assert not leaks(scrub(prefix + form + suffix, [key]), key)


def echo_everywhere(status: str):
    """A server that answers ``status`` with the request's Authorization value in every encoding."""
    def fault(conn, req, _stop):
        head = req.partition(b"\r\n\r\n")[0].decode("latin-1")
        key = re.search(r"(?i)authorization: bearer (\S+)", head).group(1)
        echoed = " | ".join(encodings(key))
        body = (_completion(f"The answer is Frank Herbert. {echoed}") if status.startswith("200")
                else json.dumps({"error": f"bad key {echoed}"}).encode())
        conn.sendall(_response(status, body))
    return fault


@pytest.mark.parametrize("status", ["200 OK", "401 Unauthorized", "500 Internal Server Error"])
@pytest.mark.parametrize("as_json", [False, True])
def test_no_key_in_any_output_of_ask_in_any_encoding(status, as_json, monkeypatch, capsys):
    monkeypatch.setenv("ROOTWEAVER_LLM_API_KEY", KEY)
    server = FaultServer(echo_everywhere(status))
    try:
        argv = ["ask", "Who wrote Dune?", "--reader", "openai", "--base-url", server.url, "--mode", "answer",
                "--timeout", "5", *(["--json"] if as_json else [])]
        assert main(argv) == 0
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert server.chat_requests >= 1
    assert not leaks(out, KEY) and not leaks(err, KEY)
    assert "[redacted]" in out


# --- replies: size cap and null content ---------------------------------------------------------


def test_a_gzip_bomb_is_refused_at_the_cap_without_inflating_it():
    bomb = gzip.compress(_completion("x" * (64 << 20)), compresslevel=9)  # 64 MiB inflated, ~65 KiB sent
    def fault(conn, _req, _stop):
        conn.sendall(_response("200 OK", bomb, extra="Content-Encoding: gzip\r\n"))
    server = FaultServer(fault)
    client = OpenAIChatClient(server.url, "reader", api_key_env=None, timeout_s=10, max_retries=0,
                              max_reply_bytes=1 << 20, max_tokens=32)
    tracemalloc.start()
    try:
        with pytest.raises(LLMReplyTooLargeError, match="reply passed 1,048,576 bytes .*gzip"):
            client.chat([{"role": "user", "content": "hi"}])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
    assert len(bomb) < 1 << 20 and peak < 16 << 20  # held: the cap and httpx's buffers, not 64 MiB
    server = FaultServer(fault)
    answer = LLMSynthesizer(OpenAIChatClient(server.url, "reader", api_key_env=None, max_retries=0,
                                             max_reply_bytes=1 << 20, max_tokens=32), mode="answer")
    try:
        result = answer(QUESTION, CONTEXT)
    finally:
        server.close()
    assert result.error_kind == "reply_too_large" and result.method == "extractive (reader failed: reply_too_large)"


def test_null_content_is_a_reader_error_with_its_own_kind():
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "stop"}],
                       "model": "fake"}).encode()
    server = FaultServer(lambda conn, _req, _stop: conn.sendall(_response("200 OK", body)))
    client = OpenAIChatClient(server.url, "reader", api_key_env=None, max_retries=0, max_tokens=32)
    try:
        with pytest.raises(LLMNullContentError, match="content is null"):
            client.chat([{"role": "user", "content": "hi"}])
        result = LLMSynthesizer(client, mode="answer")(QUESTION, SynthContext(FACTS, ("q",)))
    finally:
        server.close()
    assert result.error_kind == "null_content" and result.method == "extractive (reader failed: null_content)"
    assert result.text and result.citations  # the extractive fallback, not an empty answer
