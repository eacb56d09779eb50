"""Limits at the door: a corpus record (line) longer than the per-record limit is
refused at load and at index build, before it is read whole, with one line naming the file
and the line; a deeply nested JSON line is refused at build like at load. The time and
RSS of refusing a 50 MB record are measured in docs/robustness.md, not here; the memory
bound is asserted (traced allocations), not a clock.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_innovations.documents.corpus import (
    MAX_RECORD_BYTES,
    CorpusError,
    load_corpus_jsonl,
)
from rootweaver_innovations.retrieval.index import build_index


def _line(pid: str, size: int) -> bytes:
    """A corpus line of exactly ``size`` bytes, newline included."""
    head = json.dumps({"id": pid, "title": "T", "text": ""}).encode()[:-2]  # ... "text": "
    return head + b"x" * (size - len(head) - 3) + b'"}\n'


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(60, 400), min_size=1, max_size=6), limit=st.integers(60, 400),
       gz=st.booleans())
def test_a_line_over_the_limit_is_refused_naming_file_and_line_and_others_load(tmp_path, sizes, limit, gz):
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    data = b"".join(_line(f"p{i}", n) for i, n in enumerate(sizes))
    path.write_bytes(gzip.compress(data) if gz else data)
    first_over = next((i for i, n in enumerate(sizes) if n > limit), None)
    if first_over is None:
        assert len(load_corpus_jsonl(path, max_record_bytes=limit)) == len(sizes)
        return
    for load in (lambda: load_corpus_jsonl(path, max_record_bytes=limit),
                 lambda: build_index(path, tmp_path / "idx", max_record_bytes=limit, chunk_size=2)):
        with pytest.raises(CorpusError, match=rf"c\.jsonl(\.gz)?:{first_over + 1}: record longer than the "
                                              rf"per-record limit of {limit:,} bytes"):
            load()
    assert not (tmp_path / "idx").exists() and not list(tmp_path.glob(".idx.building-*"))


def test_a_huge_record_is_refused_holding_only_the_limit(tmp_path):
    path = tmp_path / "huge.jsonl"
    path.write_bytes(_line("a", 100) + _line("b", 24 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError, match=r"huge\.jsonl:2: record longer"):
            load_corpus_jsonl(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_RECORD_BYTES  # the 24 MiB line was never held


@pytest.mark.parametrize("argv", [
    ["ask", "q?", "--reader", "none", "--corpus", "{corpus}", "--max-record-bytes", "1000"],
    ["index", "build", "{corpus}", "--out", "{tmp}/idx", "--max-record-bytes", "1000"],
    ["index", "build", "{corpus}", "--out", "{tmp}/idx", "--max-record-bytes", "1000", "--workers", "2"],
])
def test_cli_refuses_a_long_record_with_one_line_exit_2(tmp_path, capsys, argv):
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(_line("a", 200) + _line("b", 1001))
    assert main([a.format(corpus=corpus, tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{corpus}:2: record longer than the per-record limit of 1,000 bytes" in err


def test_the_config_knob_reaches_the_loader(tmp_path):
    from rootweaver_capabilities.capability import MultiHopCapability, RequestContext

    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(_line("a", 200) + _line("b", 900))
    config = MultiHopConfig.from_mapping({"retriever": {"corpus": str(corpus), "max_record_bytes": 500},
                                          "llm": {"provider": "none"}})
    with pytest.raises(CorpusError, match=r"c\.jsonl:2: record longer than the per-record limit of 500"):
        MultiHopCapability(config).execute(RequestContext(query="q?"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_index_build_refuses_deeply_nested_json_with_one_line(tmp_path, capsys, workers):
    corpus = tmp_path / "deep.jsonl"
    corpus.write_bytes(_line("a", 200) + b'{"id": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n")
    argv = ["index", "build", str(corpus), "--out", str(tmp_path / "idx"), "--workers", workers]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{corpus}:2: JSON nested too deeply" in err
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["deep.jsonl"]
