"""The ``dense`` component: embeddings computed at build, memory-mapped at open, carried and
recomputed by an update, and the retriever modes over them (with the real MiniLM model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.retrieval import modes
from rootweaver_innovations.retrieval.embeddings import load_embedder
from rootweaver_innovations.retrieval.index import IndexFormatError, build_index, open_index, verify_index
from rootweaver_innovations.retrieval.index_update import update_index
from rootweaver_innovations.retrieval.modes import with_mode
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever

DOCS = Path(__file__).resolve().parents[1] / "data" / "docs"


@pytest.fixture()
def docs(tmp_path) -> Path:
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path / "docs"


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


def test_a_build_with_an_embedder_saves_one_float16_row_per_passage(docs, tmp_path, embedder):
    reports = []
    m = build_index(docs, tmp_path / "idx", embedder=embedder, progress=reports.append)
    assert m.components["dense"] == {"files": ["dense/embeddings.npy"], "model": "all-MiniLM-L6-v2", "dim": 384,
                                     "dtype": "float16"}
    index = open_index(tmp_path / "idx")
    assert index.dense.shape == (len(index.passages), 384) and index.dense.dtype == np.float16
    assert verify_index(tmp_path / "idx") == m
    last = [r for r in reports if r.stage == "embedding"][-1]
    assert last.done == last.total == len(index.passages) and last.line().startswith("embedding: ")
    norms = np.linalg.norm(index.dense.astype(np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-2)  # L2-normalised rows, cosine by a dot product


def test_each_mode_searches_the_saved_rows_and_keeps_the_loop_s_indexes(docs, tmp_path, embedder):
    build_index(docs, tmp_path / "idx", embedder=embedder)
    index = open_index(tmp_path / "idx")
    dense, hybrid = index.retriever("dense"), index.retriever("hybrid")
    assert isinstance(index.retriever("bm25"), BM25Retriever)
    assert isinstance(dense, DenseRetriever) and dense.embeddings is index.dense
    assert isinstance(hybrid, HybridRetriever) and hybrid.passages is index.passages
    assert dense.title_index is index.titles and hybrid.title_index is index.titles
    query = "ancient monarchs"  # no word of it is in the corpus: BM25 finds nothing, the embeddings find kings
    assert index.retriever("bm25").top_rows(query, 3) == ([], [])
    rows, _ = dense.top_rows(query, 3)
    assert all("king" in index.passages[r].text.lower() for r in rows)
    rows, scores = hybrid.top_rows("vizier of Ebla", 3)
    assert len(rows) == 3 and scores == sorted(scores, reverse=True)


def test_auto_is_hybrid_over_saved_embeddings_and_bm25_without_them_with_no_note(docs, tmp_path, embedder):
    build_index(docs, tmp_path / "dense", embedder=embedder)
    build_index(docs, tmp_path / "lex")
    notes: list[str] = []
    assert isinstance(open_index(tmp_path / "dense").retriever("auto", on_note=notes.append), HybridRetriever)
    assert isinstance(open_index(tmp_path / "lex").retriever("auto", on_note=notes.append), BM25Retriever)
    lexical = BM25Retriever(_passages())
    assert with_mode("auto", lexical, on_note=notes.append) is lexical  # in memory: nothing embedded at start
    assert notes == []


def test_an_index_without_embeddings_searches_with_bm25_and_says_so_in_one_line(docs, tmp_path):
    build_index(docs, tmp_path / "idx")
    notes: list[str] = []
    retriever = open_index(tmp_path / "idx").retriever("hybrid", on_note=notes.append)
    assert isinstance(retriever, BM25Retriever)
    assert len(notes) == 1 and "this index has no embeddings, searching with BM25 alone" in notes[0]


def test_without_the_extra_a_mode_falls_back_to_bm25_with_a_note(monkeypatch):
    def missing(name):
        raise ImportError("No module named 'sentence_transformers'")

    monkeypatch.setattr(modes, "load_embedder", missing)  # the fault: the package is not installed
    lexical = BM25Retriever(_passages())
    notes: list[str] = []
    assert with_mode("dense", lexical, on_note=notes.append) is lexical
    assert notes == ["retriever.mode dense: the dense extra is not installed, searching with BM25 alone "
                     "(pip install 'rootweaver[dense]')"]
    with pytest.raises(ValueError, match="unknown retriever mode 'vector'; choose one of auto, bm25, dense, hybrid"):
        with_mode("vector", lexical)


def _passages():
    from rootweaver_innovations.documents.corpus import Passage

    return [Passage("a", "Ebla", ("Ebla was a city in Syria.",)), Passage("b", "Mari", ("Mari lay on the Euphrates.",))]


def test_an_update_embeds_only_new_and_changed_passages_and_equals_a_fresh_build(docs, tmp_path, embedder,
                                                                                 monkeypatch):
    build_index(docs, tmp_path / "idx", embedder=embedder)
    (docs / "ebla" / "kings.txt").write_text("Ishar-Damu was a king of Ebla.\n", encoding="utf-8")
    embedded: list[int] = []
    encode = embedder.encode
    monkeypatch.setattr(embedder, "encode", lambda texts: embedded.append(len(texts)) or encode(texts))
    update_index(tmp_path / "idx")
    updated = open_index(tmp_path / "idx")
    assert embedded == [sum(1 for p in updated.passages if p.id.startswith("ebla/kings.txt#"))]
    monkeypatch.undo()
    build_index(docs, tmp_path / "fresh", embedder=embedder)
    fresh = open_index(tmp_path / "fresh")
    assert [p.id for p in updated.passages] == [p.id for p in fresh.passages]
    assert np.allclose(updated.dense.astype(np.float32), fresh.dense.astype(np.float32), atol=2e-3)
    assert verify_index(tmp_path / "idx")


def test_a_damaged_embeddings_file_is_refused_naming_it(docs, tmp_path, embedder):
    build_index(docs, tmp_path / "idx", embedder=embedder)
    raw = json.loads((tmp_path / "idx" / "manifest.json").read_text(encoding="utf-8"))
    raw["components"]["dense"]["dim"] = 512
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"dense/embeddings.npy: expected float16 of shape \(\d+, 512\), "
                                               r"found float16 of shape \(\d+, 384\); rebuild the index"):
        open_index(tmp_path / "idx")
    raw["components"]["dense"]["dtype"] = "float64"
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="component 'dense' needs a model name, an integer dim and dtype"):
        open_index(tmp_path / "idx")


def test_the_command_line_builds_embeddings_and_asks_with_each_mode(docs, tmp_path, capsys, caplog):
    assert main(["index", "build", str(docs), "--out", str(tmp_path / "idx"), "--dense"]) == 0
    assert "embedded by all-MiniLM-L6-v2" in capsys.readouterr().out
    assert main(["index", "info", str(tmp_path / "idx")]) == 0
    assert "retriever: auto (the default) searches it with hybrid (BM25 and the embeddings fused)" in \
        capsys.readouterr().out
    answers = {}
    for mode in ("bm25", "dense", "hybrid", "auto"):
        assert main(["ask", "Who was the vizier of Ebla?", "--index", str(tmp_path / "idx"), "--reader", "none",
                     "--json", "--retriever", mode]) == 0
        answers[mode] = json.loads(capsys.readouterr().out)
    assert all(a["hops"] for a in answers.values())
    assert main(["ask", "Who was the vizier of Ebla?", "--index", str(tmp_path / "idx"), "--reader", "none",
                 "--json"]) == 0
    assert answers["auto"] == answers["hybrid"] == json.loads(capsys.readouterr().out)  # auto is the default
    assert main(["index", "build", str(docs), "--out", str(tmp_path / "lex")]) == 0
    capsys.readouterr()
    assert main(["ask", "Who was the vizier of Ebla?", "--index", str(tmp_path / "lex"), "--reader", "none",
                 "--json", "--retriever", "hybrid"]) == 0
    assert json.loads(capsys.readouterr().out)["hops"]
    assert [r.getMessage() for r in caplog.records] == [
        "retriever.mode hybrid: this index has no embeddings, searching with BM25 alone (rebuild it with "
        "`rootweaver index build --dense`)"]


def test_an_update_that_must_embed_without_the_extra_is_one_line(docs, tmp_path, embedder, monkeypatch):
    from rootweaver_innovations.retrieval import dense_index

    build_index(docs, tmp_path / "idx", embedder=embedder)
    (docs / "ebla" / "kings.txt").write_text("Ishar-Damu was a king of Ebla.\n", encoding="utf-8")

    def missing(name):
        raise ImportError("No module named 'sentence_transformers'")

    monkeypatch.setattr(dense_index, "load_embedder", missing)  # the fault: the package is not installed
    with pytest.raises(ValueError, match=r"holds all-MiniLM-L6-v2 embeddings, and updating them needs the dense "
                                         r"extra: pip install 'rootweaver\[dense\]'"):
        update_index(tmp_path / "idx")
    assert verify_index(tmp_path / "idx")  # the old index is whole
