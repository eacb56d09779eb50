"""MultiHopCapability: flag gating, per-request compaction, metadata, metrics, threads."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections import Counter as Tally

import pytest

import rootweaver_capabilities
from rootweaver_capabilities import assembly as assembly_module
from rootweaver_capabilities.config import CAPABILITY_FLAG, MultiHopConfig
from rootweaver_capabilities.flags import StaticFlagProvider
from rootweaver_capabilities.metrics import Metrics
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_innovations.loop.multihop import MultiHopRAG

ROLLOUT = "eip.capabilities.retrieval.multi_hop.compaction"


class FakeFlags:
    """Per-request flags: ``users[name]`` = user ids for whom ``name`` is on, else ``values``."""

    def __init__(self, values=None, users=None):
        self.values = dict(values or {})
        self.users = dict(users or {})
        self.calls: list[tuple[str, dict]] = []
        self._lock = threading.Lock()

    def is_enabled(self, name, context=None):
        with self._lock:
            self.calls.append((name, dict(context or {})))
        if name in self.users:
            return (context or {}).get("userId") in self.users[name]
        return self.values.get(name, False)


class CountingRetriever:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def search(self, query, k):
        self.calls += 1
        return self.inner.search(query, k)


def _config(**compaction) -> MultiHopConfig:
    mapping = {"flags": {"compaction_flag": ROLLOUT}}
    if compaction:
        mapping["compaction"] = compaction
    return MultiHopConfig.from_mapping(mapping)


def _baseline(retriever, cfg: MultiHopConfig) -> MultiHopRAG:
    """The plain loop with the config's settings and compaction off: the reference trajectory."""
    return MultiHopRAG(retriever, max_hops=cfg.max_hops, passages_per_hop=cfg.passages_per_hop,
                       answerability_threshold=cfg.answerability_threshold)


@pytest.fixture(scope="module")
def questions(golden_questions):
    return [q.question for q in golden_questions[:8]]


def test_public_api_is_pinned():
    assert sorted(rootweaver_capabilities.__all__) == [
        "CapabilityContext", "ConfigError", "FlagProvider", "Metrics", "MultiHopCapability", "MultiHopConfig",
        "RequestContext", "StaticFlagProvider", "UnleashFlagProvider", "build_flag_provider",
    ]


def test_capability_flag_off_is_a_no_op(demo_retriever, questions):
    spy, metrics = CountingRetriever(demo_retriever), Metrics()
    cap = MultiHopCapability(_config(enabled=True), FakeFlags({CAPABILITY_FLAG: False, ROLLOUT: True}), spy,
                             metrics=metrics)
    ctx = RequestContext(questions[0], user_id="u1", metadata={"kept": 1})
    assert cap.execute(ctx) is None
    assert ctx.metadata == {"kept": 1}
    assert spy.calls == 0
    assert metrics.value("multi_hop_requests_total", {"status": "disabled"}) == 1
    assert metrics.value("multi_hop_requests_total", {"status": "executed"}) == 0
    assert metrics.value("multi_hop_context_chars_count", {"strategy": "off"}) == 0


def test_flags_are_read_per_request(demo_retriever, questions):
    flags = FakeFlags({CAPABILITY_FLAG: True})
    cap = MultiHopCapability(_config(enabled=False), flags, demo_retriever)
    assert cap.execute(RequestContext(questions[0])) is not None
    flags.values[CAPABILITY_FLAG] = False
    assert cap.execute(RequestContext(questions[0])) is None
    flags.values[CAPABILITY_FLAG] = True
    assert cap.execute(RequestContext(questions[0])) is not None
    assert [name for name, _ in flags.calls] == [CAPABILITY_FLAG] * 3  # compaction off in config: no rollout ask


def test_a_raising_flag_provider_means_off_not_an_exception(demo_retriever, questions):
    class Broken:
        def is_enabled(self, name, context=None):
            raise ConnectionError("flag service down")

    ctx = RequestContext(questions[0])
    assert MultiHopCapability(_config(enabled=True), Broken(), demo_retriever).execute(ctx) is None
    assert "multi_hop" not in ctx.metadata


def test_record_without_compaction(demo_retriever, questions):
    cap = MultiHopCapability(_config(enabled=False), FakeFlags({CAPABILITY_FLAG: True, ROLLOUT: True}), demo_retriever)
    ctx = RequestContext(questions[0], user_id="u", session_id="s")
    result = cap.execute(ctx)
    rec = ctx.metadata["multi_hop"]
    assert rec["hop_count"] == len(rec["hops"]) == result.hop_count >= 1
    assert rec["stop_reason"] == result.stop_reason
    assert rec["context_chars"] == rec["full_context_chars"] == len(result.full_context)
    assert rec["compaction"] is False and rec["compaction_configured"] is False and rec["strategy"] == "off"
    assert rec["kept_lines"] is rec["kept_ids"] is rec["dropped_lines"] is rec["compaction_latency_ms"] is None
    assert rec["flags"] == {CAPABILITY_FLAG: True}
    json.dumps(rec)  # plain values only


def test_compaction_is_decided_per_request_and_never_changes_the_trajectory(demo_retriever, questions):
    flags = FakeFlags({CAPABILITY_FLAG: True}, users={ROLLOUT: {"alice"}})
    cap = MultiHopCapability(_config(enabled=True, strategy="line", unit="chars", budget=400), flags, demo_retriever)
    compacted_somewhere = False
    for q in questions:
        on_ctx = RequestContext(q, user_id="alice", session_id="s1")
        off_ctx = RequestContext(q, user_id="bob", session_id="s2")
        on, off = cap.execute(on_ctx), cap.execute(off_ctx)
        assert on.trajectory() == off.trajectory()
        assert on.full_context == off.full_context and on.stop_reason == off.stop_reason
        assert off.synth_context == off.full_context and off.compaction is None
        rec_on, rec_off = on_ctx.metadata["multi_hop"], off_ctx.metadata["multi_hop"]
        assert rec_on["compaction"] and rec_on["strategy"] == "line" and rec_on["budget"]["limit"] == 400
        assert rec_on["context_chars"] == len(on.synth_context) <= 400
        assert rec_on["kept_lines"] + rec_on["dropped_lines"] == len(on.full_context.split("\n"))
        kept = [f.passage_id for f in on.synth.facts]
        assert rec_on["kept_ids"] == sorted(set(kept), key=kept.index)
        assert set(rec_on["kept_ids"]) <= {pid for h in rec_on["hops"] for pid in h["retrieved_ids"]}
        assert rec_on["compaction_latency_ms"] >= 0
        assert rec_on["flags"] == {CAPABILITY_FLAG: True, ROLLOUT: True}
        assert not rec_off["compaction"] and rec_off["flags"] == {CAPABILITY_FLAG: True, ROLLOUT: False}
        assert rec_on["hops"] == rec_off["hops"] and rec_on["full_context_chars"] == rec_off["full_context_chars"]
        compacted_somewhere |= rec_on["dropped_lines"] > 0
    assert compacted_somewhere  # the 400-char budget bites on at least one question
    assert {"userId": "alice", "sessionId": "s1"} in [c for n, c in flags.calls if n == ROLLOUT]


def test_without_a_rollout_flag_the_config_alone_decides(demo_retriever, questions):
    cfg = MultiHopConfig.from_mapping({"compaction": {"enabled": True, "strategy": "line", "unit": "chars", "budget": 300}})
    ctx = RequestContext(questions[1])
    result = MultiHopCapability(cfg, StaticFlagProvider({CAPABILITY_FLAG: True}), demo_retriever).execute(ctx)
    assert result.compaction is not None and ctx.metadata["multi_hop"]["context_chars"] <= 300


def test_the_rag_is_built_once_under_concurrent_first_calls(monkeypatch, demo_retriever, questions):
    builds = Tally()

    def counting(cfg, **_options):
        builds["retriever"] += 1
        threading.Event().wait(0.05)  # widen the race window
        return demo_retriever

    monkeypatch.setattr(assembly_module, "build_retriever", counting)
    cap = MultiHopCapability(_config(enabled=True), FakeFlags({CAPABILITY_FLAG: True, ROLLOUT: True}))
    barrier = threading.Barrier(8)
    seen: list = []

    def first_call():
        barrier.wait()
        cap.execute(RequestContext(questions[0]))
        seen.append(cap._instances())

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds["retriever"] == 1
    assert len({(id(a), id(b)) for a, b in seen}) == 1
    off, on = seen[0]
    assert isinstance(off, MultiHopRAG) and not off.compaction_enabled and on.compaction_enabled


def test_eight_threads_by_fifty_calls_no_exception_and_metrics_add_up(demo_retriever, questions):
    users = [f"user{i}" for i in range(10)]
    flags = FakeFlags({CAPABILITY_FLAG: True}, users={ROLLOUT: set(users[:5])})
    metrics = Metrics()
    cap = MultiHopCapability(_config(enabled=True, strategy="line", unit="chars", budget=600), flags, demo_retriever, metrics=metrics)
    expected = {q: _baseline(demo_retriever, cap.config).multi_hop_search(q).trajectory() for q in questions}
    records, errors, lock = [], [], threading.Lock()

    def worker(t: int):
        for i in range(50):
            q = questions[(t + i) % len(questions)]
            ctx = RequestContext(q, user_id=users[(t * 50 + i) % len(users)], session_id=f"t{t}")
            try:
                result = cap.execute(ctx)
                assert result.trajectory() == expected[q]
                with lock:
                    records.append(ctx.metadata["multi_hop"])
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                with lock:
                    errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(records) == 400
    by_strategy = Tally(r["strategy"] for r in records)
    assert by_strategy == {"line": 200, "off": 200}  # users 0-4 in the rollout, each thread cycles all 10
    assert metrics.value("multi_hop_requests_total", {"status": "executed"}) == 400
    for strategy, n in by_strategy.items():
        labels = {"strategy": strategy}
        assert metrics.value("multi_hop_context_chars_count", labels) == n
        assert metrics.value("multi_hop_hops_count", labels) == n
        mine = [r for r in records if r["strategy"] == strategy]
        assert metrics.value("multi_hop_context_chars_sum", labels) == sum(r["context_chars"] for r in mine)
        assert metrics.value("multi_hop_hops_sum", labels) == sum(r["hop_count"] for r in mine)
    line = {"strategy": "line"}
    assert metrics.value("multi_hop_compaction_latency_seconds_count", line) == 200
    assert metrics.value("multi_hop_compaction_dropped_lines_total", line) == sum(
        r["dropped_lines"] for r in records if r["strategy"] == "line")
    assert metrics.value("multi_hop_compaction_latency_seconds_count", {"strategy": "off"}) == 0


def _bucket_counts(text: str, strategy: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        s.labels["le"]: s.value
        for fam in text_string_to_metric_families(text) if fam.name == "multi_hop_context_chars"
        for s in fam.samples if s.name.endswith("_bucket") and s.labels["strategy"] == strategy
    }


def test_metrics_endpoint_scrape_shows_context_chars_buckets_moving(demo_retriever, questions):
    metrics = Metrics()
    cfg = MultiHopConfig.from_mapping({"compaction": {"enabled": True, "strategy": "line", "unit": "chars",
                                                      "budget": 2000}})
    cap = MultiHopCapability(cfg, StaticFlagProvider({CAPABILITY_FLAG: True}), demo_retriever, metrics=metrics)
    server = metrics.serve(0)
    try:
        assert server.addr == "127.0.0.1"
        before = urllib.request.urlopen(server.url, timeout=5).read().decode()
        assert "# HELP multi_hop_context_chars Characters of the synthesis context" in before
        assert _bucket_counts(before, "line") == {}
        for q in questions[:5]:
            cap.execute(RequestContext(q))
        after = urllib.request.urlopen(server.url, timeout=5).read().decode()
    finally:
        server.close()
    buckets = _bucket_counts(after, "line")
    assert buckets["+Inf"] == 5
    assert buckets["2000.0"] == 5  # compaction.budget 2000 chars: every synth context fits the budget
    counts = [buckets[le] for le in sorted(buckets, key=lambda le: float(le))]
    assert counts == sorted(counts)  # cumulative


def test_default_retriever_uses_the_configured_corpus(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"id": "p1", "title": "Zorblax Tower", "text": "Zorblax Tower was designed by Mira Quonset."},
        {"id": "p2", "title": "Mira Quonset", "text": "Mira Quonset was born in Vellmar in 1901."},
        {"id": "p3", "title": "Elsewhere", "text": "Nothing about towers here at all."},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = MultiHopConfig.from_mapping({"retriever": {"corpus": str(corpus), "backend": "rank_bm25"}})
    result = MultiHopCapability(cfg, StaticFlagProvider({CAPABILITY_FLAG: True})).execute(
        RequestContext("Where was the designer of Zorblax Tower born?"))
    retrieved = {pid for hop in result.hops for pid in hop.retrieved_ids}
    assert retrieved <= {"p1", "p2", "p3"} and "p1" in retrieved


def test_default_retriever_falls_back_to_the_bundled_demo_corpus(questions):
    result = MultiHopCapability(MultiHopConfig(), StaticFlagProvider({CAPABILITY_FLAG: True})).execute(
        RequestContext(questions[0]))
    assert result.hop_count >= 1 and all(pid.startswith("hp") for h in result.hops for pid in h.retrieved_ids)


@pytest.mark.parametrize("strategy", ["submodular", "evidence"])
def test_packing_strategies_run_under_budget_and_keep_the_trajectory(demo_retriever, questions, strategy):
    cfg = MultiHopConfig.from_mapping({"compaction": {"enabled": True, "strategy": strategy, "unit": "chars",
                                                      "budget": 500}})
    ctx = RequestContext(questions[0])
    result = MultiHopCapability(cfg, StaticFlagProvider({CAPABILITY_FLAG: True}), demo_retriever).execute(ctx)
    rec = ctx.metadata["multi_hop"]
    assert rec["strategy"] == strategy and rec["context_chars"] <= 500 and rec["budget"]["unit"] == "chars"
    assert result.trajectory() == _baseline(demo_retriever, cfg).multi_hop_search(questions[0]).trajectory()


def test_an_empty_question_is_rejected(demo_retriever):
    cap = MultiHopCapability(_config(), StaticFlagProvider({CAPABILITY_FLAG: True}), demo_retriever)
    with pytest.raises(ValueError, match="non-empty"):
        cap.execute(RequestContext("   "))


def test_secrets_stay_out_of_metadata_and_reprs(monkeypatch, demo_retriever, questions):
    monkeypatch.setenv("RW_CANARY_TOKEN", "unleash-canary-secret")
    monkeypatch.setenv("RW_CANARY_KEY", "llm-canary-secret")
    cfg = MultiHopConfig.from_mapping({"flags": {"unleash": {"token_env": "RW_CANARY_TOKEN"}},
                                       "llm": {"api_key_env": "RW_CANARY_KEY"}})
    cap = MultiHopCapability(cfg, StaticFlagProvider({CAPABILITY_FLAG: True}), demo_retriever)
    ctx = RequestContext(questions[0])
    cap.execute(ctx)
    for text in (json.dumps(ctx.metadata), repr(cap), repr(cfg)):
        assert "canary-secret" not in text
