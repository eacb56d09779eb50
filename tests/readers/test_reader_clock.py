"""The reader's deadline covers one answer, not the one-off load: `ask` loads
the model and tokenizer before the clock starts, and a reader that misses its deadline
says so once, on stderr, with the measured load and answer times.

The servers are tests/readers/test_llm_faults.py's raw sockets: an instant healthy one (the issue's
`--reader openai --timeout 2` fell back "after 0 attempts" while the tokenizer loaded) and
a hanging one (a reader too slow for its deadline).
"""

from __future__ import annotations

import re

from test_llm_faults import FaultServer, _completion, _response, hang

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.readers.clock import (
    TimedSynthesizer,
    deadline_note,
    load_reader,
)


def instant(conn, _req, _stop):
    conn.sendall(_response("200 OK", _completion('{"answer": "Japan and Hong Kong", "evidence": [1]}')))


def test_a_short_deadline_against_an_instant_server_is_the_servers_answer(capsys):
    server = FaultServer(instant)
    try:
        code = main(["ask", "--reader", "openai", "--base-url", server.url, "--timeout", "2"])
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert code == 0 and server.chat_requests >= 1
    assert "Answer [openai:reader:evidence]: Japan and Hong Kong" in out
    assert "reader failed" not in out and "note:" not in err


def test_a_missed_deadline_is_said_once_with_the_measured_times(capsys):
    server = FaultServer(hang)
    try:
        code = main(["ask", "--reader", "openai", "--base-url", server.url, "--timeout", "1"])
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert code == 0 and "Answer [extractive (reader failed: deadline)]" in out
    notes = [line for line in err.splitlines() if "note:" in line]
    assert len(notes) == 1
    m = re.search(r"its 1 s deadline on this machine \(model load (\d+\.\d) s, before the deadline; "
                  r"answer stopped after (\d+\.\d) s\)", notes[0])
    assert m and float(m.group(2)) >= 1.0


def test_load_reader_times_the_load_and_timed_synthesizer_times_the_answer():
    class Reader:
        loaded = 0

        def load(self):
            self.loaded += 1

        def __call__(self, question, context, facts=()):
            return f"{question}|{context}|{len(facts)}"

    reader = Reader()
    assert load_reader(reader) >= 0 and reader.loaded == 1
    assert load_reader(len) >= 0  # nothing to load
    timed = TimedSynthesizer(reader)
    assert timed.seconds is None and timed("q", "c") == "q|c|0" and timed.seconds >= 0
    assert deadline_note({"error_kind": "unavailable"}, 1.0, 2.0, 60) is None
    assert deadline_note(None, 1.0, 2.0, 60) is None
    assert "model load 12.3 s" in deadline_note({"error_kind": "deadline"}, 12.34, 60.0, 60)
