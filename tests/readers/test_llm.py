"""Unit tests: the chat client's retries and typed errors, the overflow check, prompt parsing.

``httpx.MockTransport`` is used only to inject faults (refused connections, timeouts,
5xx/429/4xx, a broken body); successful replies are exercised against the real local
server in tests/integration/test_llm_server.py.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.readers.chat import render_chatml
from rootweaver_capabilities.readers.errors import (
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
    PromptTooLongError,
)
from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer
from rootweaver_capabilities.readers.token_count import TOKENIZER_ENV, resolve_token_counter
from evals.scoring import gold_line_ids, score_ebg
from rootweaver_capabilities.readers.prompts import (
    is_refusal,
    EvidenceReply,
    MalformedReplyError,
    answer_only_messages,
    ask_with_evidence,
    evidence_messages,
    number_facts,
    parse_answer_only,
    parse_evidence_reply,
)
from rootweaver_innovations.compaction.budget import QwenTokenCounter
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.answer_rules.extractive import extractive_answer
from rootweaver_innovations.records import Fact
from rootweaver_innovations.compaction.strategies import make_compactor

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "Who wrote Dune?"}]
FACTS = (Fact("d", "Dune", "Dune is a 1965 novel by Frank Herbert.", 0, 0, "Dune author"),
         Fact("d", "Dune", "It won the Hugo Award.", 1, 0, "Dune author"))
CONTEXT = SynthContext(FACTS, ("Dune author",))


class Recorder:
    """A MockTransport handler that records requests and answers with ``respond(n)``."""

    def __init__(self, respond):
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(len(self.requests))


class CharCounter:
    """One token per character: makes prompt sizes easy to derive in the tests."""

    name = "chars"

    def __init__(self, fail: Exception | None = None):
        self.fail = fail
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        if self.fail is not None:
            raise self.fail
        return len(text)


def refuse(_n: int) -> httpx.Response:
    raise httpx.ConnectError("connection refused")


def make_client(handler, *, counter=None, window=2048, max_tokens=64, retries=2, sleeps=None):
    return OpenAIChatClient(
        "http://llm.test/v1", "reader", api_key_env=None, max_retries=retries, backoff_s=0.5,
        context_window=window, max_tokens=max_tokens, token_counter=counter or CharCounter(),
        transport=httpx.MockTransport(handler), sleep=(sleeps.append if sleeps is not None else lambda s: None),
    )


def test_connection_errors_retry_with_backoff_then_typed_error_keeps_packet():
    rec, sleeps = Recorder(refuse), []
    client = make_client(rec, sleeps=sleeps)
    with pytest.raises(LLMUnavailableError) as info:
        client.chat(MESSAGES, temperature=0.7, seed=11)
    err = info.value
    # 1 attempt + 2 retries; backoff 0.5 * 2**0, 0.5 * 2**1 before the retries.
    assert err.attempts == 3 and len(rec.requests) == 3
    assert sleeps == [0.5, 1.0]
    assert len(err.errors) == 3 and "ConnectError" in err.errors[-1]
    assert err.packet.messages == MESSAGES
    assert err.packet.body["temperature"] == 0.7 and err.packet.body["seed"] == 11
    assert err.packet.url == "http://llm.test/v1/chat/completions"
    # what was on the wire is exactly the packet body
    assert json.loads(rec.requests[0].content) == dict(err.packet.body)


@pytest.mark.parametrize("fault", [
    lambda n: (_ for _ in ()).throw(httpx.ReadTimeout("slow")),
    lambda n: httpx.Response(503, text="loading"),
    lambda n: httpx.Response(429, text="busy"),
])
def test_timeouts_5xx_and_429_are_retried(fault):
    rec = Recorder(fault)
    with pytest.raises(LLMUnavailableError) as info:
        make_client(rec, retries=1).chat(MESSAGES)
    assert len(rec.requests) == 2 and info.value.attempts == 2


def test_client_error_is_not_retried():
    rec = Recorder(lambda n: httpx.Response(400, text="bad model"))
    with pytest.raises(LLMRequestError) as info:
        make_client(rec).chat(MESSAGES)
    assert len(rec.requests) == 1 and info.value.status == 400
    assert info.value.packet.messages == MESSAGES


def test_non_completion_body_is_a_response_error():
    rec = Recorder(lambda n: httpx.Response(200, json={"unexpected": True}))
    with pytest.raises(LLMResponseError, match="choices"):
        make_client(rec).chat(MESSAGES)


def test_overflow_is_refused_before_sending():
    # CharCounter counts 1 token per character, so the prompt has exactly
    # len(render_chatml(MESSAGES)) tokens; a window of that + max_tokens fits exactly.
    n = len(render_chatml(MESSAGES))
    rec = Recorder(refuse)
    fits = make_client(rec, window=n + 64, max_tokens=64, retries=0)
    with pytest.raises(LLMUnavailableError, match="."):  # it fits, so it is sent (and the fault hits)
        fits.chat(MESSAGES)
    assert len(rec.requests) == 1
    too_small = make_client(rec, window=n + 63, max_tokens=64, retries=0)
    with pytest.raises(PromptTooLongError) as info:
        too_small.chat(MESSAGES)
    assert len(rec.requests) == 1  # nothing more went out
    err = info.value
    assert (err.prompt_tokens, err.context_window, err.reserved_output) == (n, n + 63, 64)
    assert err.packet.messages == MESSAGES


def test_unreachable_tokenizer_endpoint_is_retried_then_typed_error_without_sending():
    counter = CharCounter(fail=httpx.ConnectError("tokenize endpoint down"))
    rec = Recorder(refuse)
    with pytest.raises(LLMUnavailableError) as info:
        make_client(rec, counter=counter, retries=1).chat(MESSAGES)
    assert len(counter.texts) == 2 and rec.requests == []  # counted twice, never posted
    assert info.value.packet.prompt_tokens is None and info.value.packet.messages == MESSAGES
    assert info.value.errors[0].startswith("token count attempt 1")


def test_per_call_max_tokens_is_what_gets_reserved():
    n = len(render_chatml(MESSAGES))
    client = make_client(Recorder(refuse), window=n + 10, max_tokens=5)
    with pytest.raises(PromptTooLongError, match="prompt"):
        client.build_packet(MESSAGES, max_tokens=11)
    assert client.build_packet(MESSAGES, max_tokens=10).body["max_tokens"] == 10


def test_api_key_goes_in_the_header_not_the_packet(monkeypatch):
    monkeypatch.setenv("RW_TEST_KEY", "sekret")
    rec = Recorder(refuse)
    client = OpenAIChatClient("http://llm.test/v1", "reader", api_key_env="RW_TEST_KEY", max_retries=0,
                              token_counter=CharCounter(), transport=httpx.MockTransport(rec))
    with pytest.raises(LLMUnavailableError) as info:
        client.chat(MESSAGES)
    assert rec.requests[0].headers["authorization"] == "Bearer sekret"
    assert "sekret" not in json.dumps(dict(info.value.packet.body))


@pytest.mark.parametrize("kwargs", [
    {"base_url": "llm.test/v1"}, {"timeout_s": 0}, {"max_retries": -1}, {"context_window": 100, "max_tokens": 100},
])
def test_bad_settings_are_rejected(kwargs):
    args = {"base_url": "http://llm.test/v1", "model": "m", "token_counter": CharCounter()} | kwargs
    with pytest.raises(ValueError, match=r"(base_url must start|timeout_s must be|max_retries and backoff_s must|"
                                         r"need context_window)"):
        OpenAIChatClient(**args)


def test_bad_messages_are_rejected_before_counting():
    client = make_client(Recorder(refuse))
    for bad in ([], [{"role": "tool", "content": "x"}], [{"role": "user"}]):
        with pytest.raises(ValueError, match=r"messages must not be empty|each message needs exactly role"):
            client.build_packet(bad)


def test_token_counter_falls_back_to_tokenizer_file_when_server_has_no_endpoint(tmp_path, monkeypatch):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    monkeypatch.setenv(TOKENIZER_ENV, str(path))
    http = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    counter = resolve_token_counter("http://llm.test/v1", http=http)
    assert isinstance(counter, QwenTokenCounter)
    assert counter.count("hello world foo") == 3  # three whitespace words, "foo" as [UNK]


def test_synthesizer_degrades_to_extractive_with_its_own_outcome():
    synth = LLMSynthesizer(make_client(Recorder(refuse)), mode="evidence")
    answer = synth("Who wrote Dune?", CONTEXT)
    expected = extractive_answer("Who wrote Dune?", FACTS)
    assert answer.text == expected.text and answer.citations == expected.citations
    assert answer.method == "extractive (reader failed: unavailable)"
    assert answer.error_kind == "unavailable" and "after 3 attempt(s)" in answer.error
    assert answer.reader == "openai:reader" and answer.prompt_tokens is not None
    assert not hasattr(synth, "last_error")


class _Recording:
    """A compactor that records the budgets it is asked for, then runs ``inner``."""

    def __init__(self, inner):
        self.inner, self.budgets = inner, []

    def __call__(self, request):
        self.budgets.append(request.budget)
        return self.inner(request)


@pytest.mark.parametrize("mode", ["evidence", "answer"])
def test_synthesizer_fits_an_overlong_context_with_the_configured_strategy(mode):
    def reply(n):
        return httpx.Response(200, json={"choices": [{"message": {"content": '{"answer": "Frank Herbert", '
                                                                             '"evidence": [1]}'}}]})

    facts = [Fact("d", "Dune", "Dune is a 1965 novel by Frank Herbert.", 0, hop=0, sub_query="Dune author")]
    facts += [Fact(f"f{i}", f"Filler {i}", f"Filler sentence number {i} about nothing.", 0, hop=0, sub_query="Dune author")
              for i in range(60)]
    context = SynthContext(tuple(facts), ("Dune author",))
    small = LLMSynthesizer(make_client(Recorder(reply)), mode="evidence")("Who wrote Dune?", context.with_facts(facts[:2], "facts"))
    assert small.citations == (facts[0],)

    recorder, compactor = Recorder(reply), _Recording(make_compactor("line"))
    answer = LLMSynthesizer(make_client(recorder, window=900, max_tokens=64), mode=mode, compactor=compactor)(
        "Who wrote Dune?", context)
    (sent,) = [json.loads(r.content) for r in recorder.requests]
    shown = sent["messages"][-1]["content"]
    assert compactor.budgets and all(b.unit == "tokens" for b in compactor.budgets)  # the strategy it was given
    assert "Dune | Dune is a 1965 novel by Frank Herbert." in shown  # the line compactor kept the answer
    assert answer.context_chars < len(context.text) and answer.prompt_tokens <= 900 - 64
    assert len(render_chatml(sent["messages"])) == answer.prompt_tokens  # CharCounter: 1 token per char
    assert shown.count("Filler") < 60 and ("From query:" in shown) == (mode == "answer")
    if mode == "evidence":
        assert answer.citations == (facts[0],) and "1: Dune | Dune is a 1965 novel" in shown


def test_number_facts_renders_each_fact_once_and_skips_blank_ones():
    facts = [Fact("a", "Dune", "Dune is a novel.", 0), Fact("a", "Dune", "   ", 1), Fact("b", "Hugo", "An award.", 0, 1)]
    numbered = number_facts(SynthContext(tuple(facts), ("q", "r")))
    assert numbered.text == "1: Dune | Dune is a novel.\n2: Hugo | An award."
    assert numbered.facts == (facts[0], facts[2])
    assert numbered.cited([2, 1, 2, 9, 0]) == (facts[2], facts[0])
    assert gold_line_ids(numbered, {("Hugo", "An award."), ("Dune", "absent")}) == {2}


def test_both_prompts_name_the_options_of_a_choice_question_and_only_then():
    context = SynthContext((Fact("a", "Dune", "Dune is a novel.", 0),), ("q",))
    numbered = number_facts(context)
    for question, line in [("Which band has more members, A Silent Film or The Frames?",
                            "The answer is one of: A Silent Film; The Frames."),
                           ("Are Dune and Hyperion both novels?", None), ("Who wrote Dune?", None)]:
        for messages in (evidence_messages(question, numbered), answer_only_messages(question, context)):
            user = messages[-1]["content"]
            assert f"Question: {question}\n" in user
            assert ("The answer is one of:" in user) == (line is not None)
            assert line is None or f"{question}\n{line}\n" in user


def test_synthesizer_degrades_when_even_an_empty_context_cannot_fit():
    recorder = Recorder(refuse)
    answer = LLMSynthesizer(make_client(recorder, window=100, max_tokens=64), mode="answer")("Who wrote Dune?",
                                                                                            CONTEXT)
    assert answer.error_kind == "prompt_too_long" and recorder.requests == []
    assert answer.method == "extractive (reader failed: prompt_too_long)"


def test_synthesizer_rejects_unknown_mode():
    with pytest.raises(ValueError, match="essay"):
        LLMSynthesizer(make_client(Recorder(refuse)), mode="essay")


# ---- prompts -------------------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ('{"answer": "Frank Herbert", "evidence": [1]}', ("Frank Herbert", (1,))),
    ('```json\n{"answer": "Frank Herbert", "evidence": ["1", "line 2"]}\n```', ("Frank Herbert", (1, 2))),
    ('Here you go: {"answer": 1965, "evidence": 1} hope it helps {"answer": "x"}', ("1965", (1,))),
    ('{"answer": true, "evidence": ["[2]", 3.0]}', ("yes", (2, 3))),
    ('```json\n{\n  "answer": "October 10, 2010",\n  "evidence": [1, 4,', ("October 10, 2010", (1, 4))),
    ('{"answer": "a \\"b\\"", "evidence": [12, "3", 45', ('a "b"', (12, 3))),
    ('{"answer": "x", "evidence": [', ("x", ())),
])
def test_parse_evidence_reply_tolerates_common_shapes(reply, expected):
    parsed = parse_evidence_reply(reply)
    assert (parsed.answer, parsed.evidence) == expected


@pytest.mark.parametrize("reply", [
    "Frank Herbert", '{"answer": "x"}', '{"evidence": [1]}', '{"answer": "x", "evidence": ["one"]}',
    '{"answer": ["x"], "evidence": [1]}', '{"answer": "x", "evidence": [true]}', "{not json}",
    '{"answer": "x", "evid', '{"answer": "cut off', '{"answer": "x", "evidence": [one, 2',
    '{"answer": "a\\x", "evidence": [1, 2',
])
def test_parse_evidence_reply_rejects_malformed(reply):
    with pytest.raises(MalformedReplyError) as info:
        parse_evidence_reply(reply)
    assert info.value.reply == reply


@settings(max_examples=300, deadline=None)
@given(answer=st.text(max_size=40), ids=st.lists(st.integers(0, 10_000), max_size=8),
       prose=st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=30), fenced=st.booleans())
def test_parse_evidence_reply_round_trips(answer, ids, prose, fenced):
    body = json.dumps({"answer": answer, "evidence": ids})
    reply = f"{prose}```json\n{body}\n```" if fenced else f"{prose}{body}{prose}"
    parsed = parse_evidence_reply(reply)
    assert parsed == parse_evidence_reply(body)
    assert (parsed.answer, parsed.evidence) == (answer.strip(), tuple(ids))


@settings(max_examples=300, deadline=None)
@given(answer=st.text(max_size=40), ids=st.lists(st.integers(0, 10_000), max_size=8), data=st.data())
def test_a_reply_cut_inside_its_evidence_keeps_the_answer_and_a_prefix_of_the_ids(answer, ids, data):
    body = json.dumps({"answer": answer, "evidence": ids})
    start = body.index('"evidence": [') + len('"evidence": [')
    cut = body[: data.draw(st.integers(start, len(body) - 2))]  # ends before the closing "]"
    parsed = parse_evidence_reply(cut)
    assert parsed.answer == answer.strip()
    assert parsed.evidence == tuple(ids[: len(parsed.evidence)])


def test_a_cut_reply_whose_answer_holds_a_json_object_is_still_read_as_cut():
    # the only whole object in it is the answer's "{}": found first, it must not make the reply malformed
    assert parse_evidence_reply('{"answer": "{}", "evidence": [') == EvidenceReply("{}", ())
    assert parse_evidence_reply('{"answer": "set {\\"a\\": 1}", "evidence": [2, 7') == EvidenceReply('set {"a": 1}', (2,))


def test_malformed_reply_is_retried_once_then_reported():
    calls = []

    def complete(replies):
        def fn(messages):
            calls.append(messages)
            return replies[len(calls) - 1]
        return fn

    numbered = number_facts(CONTEXT)
    ok = ask_with_evidence(complete(["Frank Herbert", '{"answer": "Frank Herbert", "evidence": [1]}']), "q", numbered)
    assert not ok.malformed and ok.answer == "Frank Herbert" and ok.evidence == (1,) and len(calls) == 2
    # the retry carries the bad reply and a correction
    assert calls[1][-2] == {"role": "assistant", "content": "Frank Herbert"} and calls[1][-1]["role"] == "user"
    calls.clear()
    bad = ask_with_evidence(complete(["nope", "still nope"]), "q", numbered)
    assert bad.malformed and bad.replies == ("nope", "still nope") and len(calls) == 2
    calls.clear()
    first_ok = ask_with_evidence(complete(['{"answer": "a", "evidence": []}']), "q", numbered)
    assert not first_ok.malformed and len(calls) == 1


def test_parse_answer_only():
    assert parse_answer_only('\n  Answer: "Frank Herbert"\nBecause line 1 says so.') == "Frank Herbert"
    assert parse_answer_only("   ") == ""


def test_score_ebg_strict_evidence():
    # Ans: "frank herbert" occurs in "it was frank herbert" after normalisation.
    s = score_ebg("It was Frank Herbert.", ["Frank Herbert"], [1, 2, 5], [1, 2])
    assert (s.ans, s.evid, s.joint) == (True, True, True)
    # one of two gold lines missing -> strict Evid false, Joint false
    s = score_ebg("Frank Herbert", ["Frank Herbert"], [1], [1, 2])
    assert (s.ans, s.evid, s.joint) == (True, False, False)
    # no gold line in the context: Evid cannot be true
    assert not score_ebg("x", ["x"], [1], []).evid
    assert not score_ebg("nothing", ["no"], [1], [1]).ans and score_ebg("No.", ["no"], [1], [1]).joint


@pytest.mark.parametrize("mode, content", [
    ("evidence", '{"answer": "Insufficient information.", "evidence": []}'),
    ("answer", "insufficient information"),
    ("answer", "Unknown"),
])
def test_a_reader_that_finds_no_answer_abstains_in_the_fixed_phrase(mode, content):
    def reply(n):
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    answer = LLMSynthesizer(make_client(Recorder(reply)), mode=mode)("Who wrote Solaris?", CONTEXT)
    assert (answer.text, answer.method, answer.citations) == ("insufficient information",
                                                              "abstained (the reader found no answer)", ())
    assert answer.reader == "openai:reader" and answer.prompt_tokens is not None


def test_an_empty_synth_context_abstains_without_asking_the_reader():
    recorder = Recorder(refuse)
    answer = LLMSynthesizer(make_client(recorder), mode="evidence")("Who wrote Dune?", CONTEXT.with_facts((), "facts"))
    assert (answer.text, answer.method) == ("insufficient information", "abstained (nothing read)")
    assert recorder.requests == []


@given(st.text(max_size=40))
def test_only_answers_that_begin_with_a_refusal_are_refusals(text):
    assert is_refusal("Insufficient information: " + text)
    assert not is_refusal("Frank Herbert " + text)
