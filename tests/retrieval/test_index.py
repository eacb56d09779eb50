"""Large-corpus retrieval: partial top-k, the BM25 matrix, the persisted memory-mapped index.

Speed is measured in ``benchmarks/bench_index.py``, never here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import ConfigError, MultiHopConfig
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_innovations.retrieval.bm25_matrix import build_matrix
from rootweaver_innovations.documents.corpus import CorpusError, Passage, load_corpus_jsonl
from rootweaver_innovations.documents.demo import DEMO_CORPUS
from rootweaver_innovations.retrieval.index import FORMAT_VERSION, IndexFormatError, build_index, open_index
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.retrieval.titles import TITLE_FILES
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, top_k_indices
from rootweaver_innovations.retrieval.tokens import EMPTY_TOKEN, passage_tokens
from rootweaver_innovations.text import bm25_tokenize

WORDS = ("acme", "rocket", "launch", "paris", "river", "born", "film", "director", "1923", "song", "the", "of")
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=7).map(" ".join)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def _write_corpus(path: Path, rows: list[tuple[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i, (title, text) in enumerate(rows):
            fh.write(json.dumps({"id": f"p{i}", "title": title or "t", "text": text or "x"}) + "\n")
            if i % 3 == 1:
                fh.write("\n")  # blank lines are skipped, as load_corpus_jsonl does
    return path


# ------------------------------------------------------------------ partial top-k

@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, -1.0, np.inf]), min_size=1, max_size=60),
       st.integers(min_value=0, max_value=70))
@settings(max_examples=500)
def test_partial_top_k_equals_the_full_stable_sort(values, k):
    scores = np.asarray(values)
    full = np.lexsort((np.arange(len(scores)), -scores))[:k]
    assert top_k_indices(scores, k).tolist() == full.tolist()


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=20_000),
       st.integers(min_value=1, max_value=40), st.sampled_from([0.0, 0.001, 0.05, 0.5, 1.0]),
       st.sampled_from([2, 5, 1000]))
@settings(max_examples=300, deadline=None)
def test_partial_top_k_with_a_strided_sample_equals_the_full_sort(seed, n, k, density, levels):
    # long arrays (the sample is strided), mostly one value, ties at every level
    rng = np.random.default_rng(seed)
    scores = np.where(rng.random(n) < density, rng.integers(1, levels + 1, n) / levels, 0.0).astype(np.float32)
    full = np.lexsort((np.arange(n), -scores))[:k]
    assert top_k_indices(scores, k).tolist() == full.tolist()


def test_partial_top_k_on_float32_and_many_zeros():
    scores = np.zeros(10_000, dtype=np.float32)
    scores[[7, 9000, 3]] = [1.5, 1.5, 2.0]
    assert top_k_indices(scores, 5).tolist() == [3, 7, 9000, 0, 1]


# ------------------------------------------------------------------ the BM25 matrix

@given(st.lists(st.lists(st.sampled_from(WORDS[:8]), min_size=1, max_size=9), min_size=1, max_size=25),
       st.lists(st.sampled_from(WORDS[:8]), min_size=1, max_size=5), st.integers(min_value=1, max_value=7))
@settings(max_examples=150, deadline=None)
def test_matrix_scores_are_bit_identical_to_bm25s(docs, query, chunk_size):
    bm25s = pytest.importorskip("bm25s")
    matrix = build_matrix(docs, 1.5, 0.75, chunk_size=chunk_size)
    ids = [matrix.vocab[t] for t in query if t in matrix.vocab]
    q = [t for t in query if t in matrix.vocab]
    for idf in ("robertson", "lucene"):
        ref = bm25s.BM25(k1=1.5, b=0.75, method=idf)
        ref.index(docs, show_progress=False)
        expected = ref.get_scores(q) if q else np.zeros(len(docs), np.float32)
        assert np.array_equal(matrix.scores(ids, idf), expected)


# ------------------------------------------------------------------ build / open round trip

@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=30), st.lists(queries, min_size=1, max_size=5),
       st.integers(min_value=1, max_value=6))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_saved_index_searches_exactly_like_the_in_memory_one(tmp_path, rows, qs, chunk_size):
    work = Path(tmp_path) / f"case{abs(hash((tuple(rows), chunk_size)))}"
    work.mkdir()
    corpus = _write_corpus(work / "c.jsonl", rows)
    build_index(corpus, work / "idx", chunk_size=chunk_size)
    index = open_index(work / "idx", corpus=corpus)
    passages = load_corpus_jsonl(corpus)
    assert list(index.passages) == passages
    memory, mapped = BM25Retriever(passages), index.retriever()
    for q in qs:
        assert mapped.search(q, 5) == memory.search(q, 5)
        assert np.array_equal(mapped.scores(q), memory.scores(q))
    shutil.rmtree(work)


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("idx") / "demo"
    build_index(DEMO_CORPUS, out, chunk_size=97)
    return out


def test_index_files_do_not_depend_on_chunking_or_workers(demo_index, tmp_path):
    build_index(DEMO_CORPUS, tmp_path / "w2", chunk_size=250, workers=2)
    for name in ("bm25/indptr.npy", "bm25/indices.npy", "bm25/robertson.npy", "bm25/lucene.npy",
                 "bm25/vocab.json", "passages/records.jsonl", "passages/offsets.npy", *TITLE_FILES):
        assert (demo_index / name).read_bytes() == (tmp_path / "w2" / name).read_bytes(), name


def test_golden_trajectories_are_the_same_over_the_index(demo_index, demo_passages, golden_questions):
    memory, mapped = MultiHopRAG(BM25Retriever(demo_passages)), MultiHopRAG(open_index(demo_index).retriever())
    for q in golden_questions:
        a, b = memory.multi_hop_search(q.question), mapped.multi_hop_search(q.question)
        assert [(h.sub_query, h.retrieved_ids) for h in a.hops] == [(h.sub_query, h.retrieved_ids) for h in b.hops]


def test_passage_store_reads_by_position_and_slices(demo_index, demo_passages):
    store = open_index(demo_index).passages
    assert len(store) == len(demo_passages)
    assert store[0] == demo_passages[0] and store[-1] == demo_passages[-1]
    assert store[10:13] == demo_passages[10:13]
    with pytest.raises(IndexError, match=rf"passage {len(store)} out of range \({len(store)} passages\)"):
        store[len(store)]


def test_the_lucene_fallback_is_precomputed_in_the_index(tmp_path):
    # "acme" and "launch" occur in 3 of 4 passages: Robertson idf 0, the Lucene idf ranks
    corpus = _write_corpus(tmp_path / "c.jsonl", [("Acme", "Acme rocket launch launch"), ("Acme news", "launch"),
                                                  ("Launch", "Acme date"), ("Weather", "rain")])
    build_index(corpus, tmp_path / "idx")
    hits = open_index(tmp_path / "idx").retriever().search("When did Acme launch?", 4)
    assert [h.passage.id for h in hits] == ["p0", "p1", "p2"] and all(h.score > 0 for h in hits)


# ------------------------------------------------------------------ refusals

def _edit_manifest(index: Path, edit) -> None:
    raw = json.loads((index / "manifest.json").read_text())
    edit(raw)
    (index / "manifest.json").write_text(json.dumps(raw))


@pytest.mark.parametrize("edit, msg", [
    (lambda m: m.update(format_version=99), "format version 99"),
    (lambda m: m["tokenizer"].update(stop_words_sha256="0" * 64), "stop_words_sha256 differ"),
    (lambda m: m["tokenizer"].update(pattern=r"[a-z]+"), "pattern differ"),
    (lambda m: m["components"].pop("bm25"), "no 'bm25' component"),
    (lambda m: m["corpus"].update(passages=5), "differs from corpus.passages"),
    (lambda m: m.pop("corpus"), "unreadable manifest.json"),
])
def test_a_mismatched_index_is_refused(demo_index, tmp_path, edit, msg):
    copy = tmp_path / "copy"
    shutil.copytree(demo_index, copy)
    _edit_manifest(copy, edit)
    with pytest.raises(IndexFormatError, match=msg):
        open_index(copy)


def test_components_are_named_and_a_missing_one_is_refused(demo_index):
    index = open_index(demo_index)
    assert index.component("bm25")["k1"] == 1.5 and index.component("passages")["count"] == 598
    with pytest.raises(IndexFormatError, match="no 'entities' component"):
        index.component("entities")


def test_damaged_files_and_another_corpus_are_refused(demo_index, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(demo_index, copy)
    (copy / "bm25" / "lucene.npy").unlink()
    with pytest.raises(IndexFormatError, match="lucene.npy: missing index file"):
        open_index(copy)
    other = _write_corpus(tmp_path / "other.jsonl", [("A", "b")])
    with pytest.raises(IndexFormatError, match="another corpus"):
        open_index(demo_index, corpus=other)
    with pytest.raises(IndexFormatError, match="not a rootweaver index"):
        open_index(tmp_path)


def test_a_tokenizer_change_in_the_code_is_refused(demo_index, monkeypatch):
    from rootweaver_innovations.retrieval import manifest as manifest_module

    monkeypatch.setattr(manifest_module, "tokenizer_settings", lambda: {"pattern": "changed"})
    with pytest.raises(IndexFormatError, match="other tokenizer settings"):
        open_index(demo_index)


@pytest.mark.parametrize("lines, msg", [
    (['{"id": "a", "title": "A", "text": "x"}', "{oops"], ":2: malformed JSON"),
    (['{"id": "a", "title": "A", "text": "x"}', '{"id": "b", "title": "B", "text": "y"}',
      '{"id": "a", "title": "C", "text": "z"}'], ':3: duplicate id'),
    (['{"id": "a", "text": "x"}'], ":1: field 'title'"),
    (["[1, 2]"], ":1: expected a JSON object"),
    ([""], "no passages"),
])
def test_a_bad_corpus_names_file_and_line_and_leaves_nothing(tmp_path, lines, msg):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=msg):
        build_index(corpus, tmp_path / "idx", chunk_size=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_a_line_that_is_not_utf8_is_refused_as_the_loader_refuses_it(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b'{"id": "a", "title": "A", "text": "x"}\n{"id": "b", "title": "B", "text": "\xff"}\n')
    message = f"{corpus}:2: not valid UTF-8 (byte 0xff at column 36)"
    with pytest.raises(CorpusError, match=re.escape(message)) as loaded:
        load_corpus_jsonl(corpus)
    with pytest.raises(CorpusError, match=re.escape(message)) as built:
        build_index(corpus, tmp_path / "idx", chunk_size=1)
    assert str(built.value) == str(loaded.value) == message  # the whole message, nothing more
    assert not (tmp_path / "idx").exists()


def test_build_refuses_an_existing_output(demo_index):
    with pytest.raises(IndexFormatError, match="already exists"):
        build_index(DEMO_CORPUS, demo_index)


def test_gzip_corpus_builds_the_same_index(tmp_path, demo_index):
    import gzip

    gz = tmp_path / "c.jsonl.gz"
    gz.write_bytes(gzip.compress(DEMO_CORPUS.read_bytes()))
    build_index(gz, tmp_path / "idx")
    assert (tmp_path / "idx" / "bm25" / "robertson.npy").read_bytes() == \
        (demo_index / "bm25" / "robertson.npy").read_bytes()
    open_index(tmp_path / "idx", corpus=gz)


def test_passage_tokens_are_title_then_text_and_never_empty():
    assert passage_tokens(Passage("1", "Gerry Shamray", ("An artist.", "Of the city."))) == \
        bm25_tokenize("gerry shamray artist city")
    assert passage_tokens(Passage("2", "The", ("of the!",))) == [EMPTY_TOKEN]
    assert passage_tokens(Passage("3", "doc-7.txt", ("He taught.",)), "Ernst Mach") == \
        bm25_tokenize("ernst mach doc 7 txt taught")


LEADS = ("Ernst Mach was a physicist.", "Prague is a city.", "it rained.", "He taught in Graz.")


@given(st.lists(st.tuples(st.sampled_from(("doc-1.txt", "doc-2.txt", "Prague")), st.sampled_from(LEADS)),
                min_size=1, max_size=12), st.integers(min_value=1, max_value=4), st.integers(min_value=1, max_value=2))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_windows_of_a_file_are_indexed_with_its_subject_however_the_build_is_cut(tmp_path, rows, chunk_size,
                                                                                 workers):
    work = Path(tmp_path) / f"case{abs(hash((tuple(rows), chunk_size, workers)))}"
    work.mkdir()
    corpus = _write_corpus(work / "c.jsonl", rows)
    build_index(corpus, work / "idx", chunk_size=chunk_size, workers=workers)
    memory, mapped = BM25Retriever(load_corpus_jsonl(corpus)), open_index(work / "idx", corpus=corpus).retriever()
    for q in ("ernst mach", "prague graz", "taught"):
        assert np.array_equal(mapped.scores(q), memory.scores(q))
    shutil.rmtree(work)


def test_a_window_deep_in_a_file_is_found_by_its_files_subject():
    windows = [Passage("a#0", "doc-a.txt", ("Ernst Mach was an Austrian physicist.",)),
               Passage("a#1", "doc-a.txt", ("He taught in Graz and Prague.",)),
               Passage("b#0", "doc-b.txt", ("Graz is a city in Austria.",))]
    ranked = BM25Retriever(windows).search("Did Ernst Mach teach in Prague?", 3)
    assert ranked[0].passage.id == "a#1"


# ------------------------------------------------------------------ CLI and config

def test_cli_index_build_info_and_ask(tmp_path, capsys):
    out = tmp_path / "idx"
    assert main(["index", "build", str(DEMO_CORPUS), "--out", str(out), "--chunk-size", "100"]) == 0
    assert "598 passages" in capsys.readouterr().out
    assert main(["index", "info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format_version"] == FORMAT_VERSION == 6 and info["conventions"]["name"] == "wikipedia" and set(info["components"]) == {"passages", "bm25", "titles", "metadata"}
    assert all(size for size in info["file_bytes"].values())
    assert main(["index", "info", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "component bm25" in printed
    assert "retriever: auto (the default) searches it with BM25 alone (no embeddings; " in printed
    assert main(["ask", "--json", "--reader", "none", "--index", str(out)]) == 0
    mapped = json.loads(capsys.readouterr().out)
    assert main(["ask", "--json", "--reader", "none"]) == 0
    assert json.loads(capsys.readouterr().out) == mapped
    assert main(["ask", "--json", "--reader", "none", "--index", str(out), "--corpus", str(DEMO_CORPUS)]) == 0


@pytest.mark.parametrize("argv, msg", [
    (["ask", "q?", "--index", "{tmp}"], "not a rootweaver index"),
    (["ask", "q?", "--index", "{idx}", "--corpus", "{other}"], "another corpus"),
    (["index", "build", "{other}", "--out", "{idx}"], "already exists"),
    (["index", "build", "{tmp}/missing.jsonl", "--out", "{tmp}/x"], "file not found"),
    (["index", "info", "{tmp}"], "not a rootweaver index"),
    (["ask", "q?", "--index", "{tmp}/nope.idx"], "nope.idx: no such index (the directory does not exist)"),
])
def test_cli_index_errors_are_one_line_exit_2(demo_index, tmp_path, capsys, argv, msg):
    other = _write_corpus(tmp_path / "other.jsonl", [("A", "b")])
    argv = [a.format(tmp=tmp_path, idx=demo_index, other=other) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_config_index_needs_the_bm25s_backend():
    with pytest.raises(ConfigError, match="'retriever.index' needs retriever.backend 'bm25s'"):
        MultiHopConfig.from_mapping({"retriever": {"index": "x", "backend": "rank_bm25"}}, source="t.yaml")


def test_capability_answers_from_a_configured_index(demo_index, golden_questions):
    question = golden_questions[0].question
    runs = []
    for retriever in ({"index": str(demo_index), "corpus": str(DEMO_CORPUS)}, {}):
        ctx = RequestContext(query=question)
        MultiHopCapability(MultiHopConfig.from_mapping({"retriever": retriever})).execute(ctx)
        runs.append({k: v for k, v in ctx.metadata["multi_hop"].items() if k != "compaction_latency_ms"})  # a clock
    assert runs[0] == runs[1]
    bad = MultiHopCapability(MultiHopConfig.from_mapping({"retriever": {"index": str(demo_index / "nope")}}))
    with pytest.raises(IndexFormatError, match="nope: no such index"):
        bad.execute(RequestContext(query=question))
