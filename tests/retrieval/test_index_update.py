"""`rootweaver index update`: an updated index is, file for file, a fresh build of the edited
corpus (folder and JSONL, random edit sequences), answers alike, is replaced atomically, and
refuses what it cannot update.

Speed is measured in ``benchmarks/bench_index_update.py``, never here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.documents.corpus import CorpusError
from rootweaver_innovations.retrieval import index_update, manifest
from rootweaver_innovations.retrieval.index import IndexFormatError, build_index, open_index, verify_index
from rootweaver_innovations.retrieval.index_update import ROW_COMPONENTS, update_index

DOCS = Path(__file__).resolve().parents[1] / "data" / "docs"
QUESTION = "Who was the vizier of Ebla after one who had served king Ishar Damu for 17 years?"
SENTENCES = ("Albert Einstein was a physicist.", "Marie Curie was a chemist.", "He taught in Graz.",
             "She lived in Paris.", "Graz is a city in Austria.", "The river flows past Paris.")
TITLES = ("doc-a.txt", "doc-b.txt", "Paris", "doc-a.txt", "AC/DC")


def _manifest(index: Path) -> dict:
    return json.loads((index / "manifest.json").read_text(encoding="utf-8"))


def _assert_fresh(index: Path, source: Path, scratch: Path) -> None:
    """``index`` equals a fresh build of ``source``: the same manifest, so the same bytes in
    every file (the manifest holds each file's SHA-256)."""
    fresh = scratch / f"fresh-{len(list(scratch.glob('fresh-*')))}"
    build_index(source, fresh)
    assert _manifest(index) == _manifest(fresh)
    shutil.rmtree(fresh)


@pytest.fixture()
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(DOCS, folder)
    return folder


def _ask(index: Path, capsys) -> dict:
    assert main(["ask", QUESTION, "--index", str(index), "--json", "--reader", "none"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_folder_update_equals_a_fresh_build_and_answers_alike(docs, tmp_path, capsys):
    build_index(docs, tmp_path / "idx")
    (docs / "ebla" / "kings.txt").write_text((docs / "ebla" / "kings.txt").read_text() +
                                             "\n\nIrkab-Damu ruled Ebla before Ishar-Damu.\n", encoding="utf-8")
    (docs / "ebla" / "scribes.md").write_text("# Scribes of Ebla\n\nThe scribes of Ebla kept tablets for "
                                              "the vizier Ibrium.\n", encoding="utf-8")
    (docs / "mari.html").unlink()
    assert main(["index", "update", str(tmp_path / "idx")]) == 0
    out = capsys.readouterr().out
    assert "1 changed, 1 added, 1 removed files" in out and "indexed again" in out
    assert main(["index", "verify", str(tmp_path / "idx")]) == 0
    capsys.readouterr()
    build_index(docs, tmp_path / "fresh")
    assert _manifest(tmp_path / "idx") == _manifest(tmp_path / "fresh")
    updated, fresh = _ask(tmp_path / "idx", capsys), _ask(tmp_path / "fresh", capsys)
    assert updated == fresh and "Ibrium" in updated["synth_context"]
    untouched = [p.id for p in open_index(tmp_path / "idx").passages if p.id.startswith("ebla/viziers.md#")]
    assert untouched and all(p.id in untouched for p in open_index(tmp_path / "fresh").passages
                             if p.id.startswith("ebla/viziers.md#"))
    assert main(["index", "update", str(tmp_path / "idx")]) == 0
    assert "is up to date with" in capsys.readouterr().out


_WORDS = ("ebla", "vizier", "river", "paris", "king", "song", "tablet", "ibrium", "graz", "acme")
_text = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=30).map(lambda ws: " ".join(ws).capitalize() + ".")
_folder_ops = st.lists(st.tuples(st.sampled_from(("edit", "add", "delete", "touch")), st.integers(0, 7), _text),
                       min_size=1, max_size=4)


@given(_folder_ops)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_folder_edits_update_to_a_fresh_build(tmp_path_factory, ops):
    work = tmp_path_factory.mktemp("folder")
    folder = work / "f"
    (folder / "sub").mkdir(parents=True)
    for k in range(4):
        (folder / ("sub" if k % 2 else ".") / f"n{k}.txt").write_text(f"Note {k} on {_WORDS[k]}.\n", encoding="utf-8")
    build_index(folder, work / "idx")
    for op, k, text in ops:
        path = folder / ("sub" if k % 2 else ".") / f"n{k}.txt"
        if op == "delete" and path.exists() and len(list(folder.rglob("*.txt"))) > 1:
            path.unlink()
        elif op == "touch" and path.exists():
            os.utime(path, ns=(0, 10**18))
        elif op in ("edit", "add"):  # some with metadata: the update counts it as a build does
            meta = f"---\nsource: Outlet {len(text) % 3}\ndate: 2023-0{k + 1}-01\n---\n" if len(text) % 2 else ""
            path.write_text(meta + text + "\n", encoding="utf-8")
        update_index(work / "idx")
        _assert_fresh(work / "idx", folder, work)


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i, row in enumerate(rows):
            fh.write(json.dumps(row) + "\n" + ("\n" if i % 4 == 3 else ""))
    return path


_record = st.tuples(st.sampled_from(TITLES), st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3))
_jsonl_ops = st.lists(st.tuples(st.sampled_from(("edit", "add", "delete", "move")), st.integers(0, 40),
                                st.integers(0, 40), _record), min_size=1, max_size=6)


@given(st.lists(_record, min_size=1, max_size=14), _jsonl_ops)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_jsonl_edits_update_to_a_fresh_build(tmp_path_factory, start, ops):
    # records titled by ids (doc-a.txt) take their BM25 file subject from the run they continue:
    # moving, deleting or editing a record re-tokenises the kept records whose run changed
    work = tmp_path_factory.mktemp("jsonl")
    rows = [{"id": f"r{i}", "title": t, "text": " ".join(s)} for i, (t, s) in enumerate(start)]
    corpus = _write_jsonl(work / "c.jsonl", rows)
    build_index(corpus, work / "idx")
    for n, (op, i, j, (title, sents)) in enumerate(ops):
        i, j = i % len(rows), j % len(rows)
        if op == "edit":
            rows[i] = {**rows[i], "title": title, "text": " ".join(sents)}
        elif op == "add":
            rows.insert(i, {"id": f"new{n}", "title": title, "text": " ".join(sents)})
        elif op == "delete" and len(rows) > 1:
            rows.pop(i)
        elif op == "move":
            rows.insert(j, rows.pop(i))
        _write_jsonl(corpus, rows)
        report = update_index(work / "idx")
        _assert_fresh(work / "idx", corpus, work)
        assert report.reindexed <= len(rows)
    verify_index(work / "idx")


def test_a_jsonl_update_counts_records_and_keeps_the_others(tmp_path):
    rows = [{"id": f"p{i}", "title": f"Title {i}", "text": SENTENCES[i % len(SENTENCES)]} for i in range(20)]
    corpus = _write_jsonl(tmp_path / "c.jsonl", rows)
    build_index(corpus, tmp_path / "idx")
    rows[3]["text"] = "Marie Curie won two Nobel prizes."
    del rows[7]
    rows.append({"id": "p99", "title": "Graz", "text": "Graz is on the Mur."})
    _write_jsonl(corpus, rows)
    report = update_index(tmp_path / "idx")
    assert (report.unit, report.changed, report.added, report.removed, report.reindexed) == ("records", 1, 1, 1, 2)
    _assert_fresh(tmp_path / "idx", corpus, tmp_path)
    hits = open_index(tmp_path / "idx").retriever().search("Nobel prizes", 1)
    assert hits[0].passage.id == "p3"


_meta_row = st.tuples(st.sampled_from(SENTENCES), st.integers(0, 40),  # source (0: none), published day
                      st.sampled_from(("", "2023-01-05", "2023-06-30", "2024-02-29")))
_meta_ops = st.lists(st.tuples(st.sampled_from(("edit", "add", "delete")), st.integers(0, 40), _meta_row),
                     min_size=1, max_size=5)


@given(st.lists(_meta_row, min_size=4, max_size=16), _meta_ops)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_updated_metadata_summary_equals_a_fresh_builds(tmp_path_factory, start, ops):
    # the old summary less the records gone plus the new ones, unless it lists only the top ten of
    # more sources or a record gone held the first or last day: then every record is counted again
    def row(n: int, text: str, source: int, day: str) -> dict:
        return {"id": f"m{n}", "title": "Paris", "text": text, **({"source": f"Outlet {source}"} if source else {}),
                **({"published": day} if day else {})}

    work = tmp_path_factory.mktemp("meta")
    rows = [row(n, *r) for n, r in enumerate(start)]
    corpus = _write_jsonl(work / "c.jsonl", rows)
    build_index(corpus, work / "idx")
    for n, (op, i, r) in enumerate(ops, len(rows)):
        i = i % len(rows)
        if op == "edit":
            rows[i] = row(int(rows[i]["id"][1:]), *r)
        elif op == "add":
            rows.insert(i, row(n, *r))
        elif len(rows) > 1:
            rows.pop(i)
        _write_jsonl(corpus, rows)
        update_index(work / "idx")
        _assert_fresh(work / "idx", corpus, work)


def test_a_moved_corpus_is_given_with_from_and_recorded(docs, tmp_path, capsys):
    build_index(docs, tmp_path / "idx")
    moved = docs.rename(tmp_path / "moved")
    assert main(["index", "update", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert "not a folder" in err and "give its place with --from" in err
    assert main(["index", "update", str(tmp_path / "idx"), "--from", str(moved)]) == 0
    assert _manifest(tmp_path / "idx")["corpus"]["path"] == str(moved)
    _assert_fresh(tmp_path / "idx", moved, tmp_path)


def _reader_answers(index) -> list:
    return [(h.passage.id, h.score) for h in index.retriever().search("vizier of Ebla", 5)]


def test_a_reader_of_the_old_index_keeps_answering_and_a_failed_update_leaves_it_whole(docs, tmp_path, monkeypatch):
    idx = tmp_path / "idx"
    build_index(docs, idx)
    before, reader = _manifest(idx), open_index(idx)
    answers = _reader_answers(reader)
    (docs / "ebla" / "viziers.md").write_text("# Viziers\n\nNo vizier is known.\n", encoding="utf-8")

    def fail(*args, **kwargs):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(index_update, "_write_titles", fail)  # after the records and BM25 files are written
    with pytest.raises(RuntimeError, match="injected failure"):
        update_index(idx)
    assert _manifest(idx) == before and verify_index(idx)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "idx"]  # the new directory is gone
    with pytest.raises(KeyboardInterrupt, match="stop"):  # a signal at the last check before the swap
        update_index(idx, checkpoint=lambda: (_ for _ in ()).throw(KeyboardInterrupt("stop")))
    assert _manifest(idx) == before and sorted(p.name for p in tmp_path.iterdir()) == ["docs", "idx"]
    monkeypatch.undo()
    update_index(idx)
    assert _manifest(idx) != before and verify_index(idx)
    assert _reader_answers(reader) == answers  # still the old index's pages, mapped
    assert _reader_answers(open_index(idx)) != answers


def test_update_refuses_an_older_format_another_fingerprint_or_an_unknown_component(docs, tmp_path, capsys):
    idx = tmp_path / "idx"
    build_index(docs, idx)
    raw = _manifest(idx)
    for change, msg in ((lambda m: m.update(format_version=5), "index format version 5, this rootweaver reads version 6; rebuild"),
                        (lambda m: m["conventions"].update(fingerprint="0" * 64), "index fingerprint 000000000000.*rebuild")):
        edited = json.loads(json.dumps(raw))
        change(edited)
        (idx / "manifest.json").write_text(json.dumps(edited), encoding="utf-8")
        assert main(["index", "update", str(idx)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and re.search(msg, err), err
        with pytest.raises(IndexFormatError, match=msg):
            open_index(idx)  # opening one keeps refusing it the same way
    (idx / "manifest.json").write_text(json.dumps({**raw, "components": {**raw["components"], "sparse2": {"files": []}}}),
                                       encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"components an update cannot carry \(sparse2\); rebuild"):
        update_index(idx)


def test_update_refuses_a_missing_jsonl_corpus_and_damaged_file_records(docs, tmp_path):
    corpus = _write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "A", "text": "Alpha."}])
    build_index(corpus, tmp_path / "j")
    corpus.unlink()
    with pytest.raises(CorpusError, match="c.jsonl: file not found, and .* was built from a JSONL file"):
        update_index(tmp_path / "j")
    build_index(docs, tmp_path / "f")
    records = tmp_path / "f" / "chunking" / "files.json"
    records.write_bytes(records.read_bytes().replace(b'"chunks"', b'"chunkz"'))  # same size: found by its shape
    with pytest.raises(IndexFormatError, match=r"files.json: not file records \(an object of the columns .*\); rebuild"):
        update_index(tmp_path / "f")


def test_per_row_components_are_carried_for_kept_rows_and_computed_for_the_others(docs, tmp_path, monkeypatch):
    # a stand-in for the dense embeddings: one float row per passage, aligned with the passages
    rel = "rowlen/rows.npy"
    monkeypatch.setattr(manifest, "ALL_FILES", (*manifest.ALL_FILES, rel))
    seen: list[str] = []

    def rows(passages, component=None):
        seen.extend(p.id for p in passages)
        return {rel: np.array([[len(p.text), len(p.id)] for p in passages], dtype=np.float32)}

    monkeypatch.setitem(ROW_COMPONENTS, "rowlen", rows)
    idx = tmp_path / "idx"
    build_index(docs, idx)
    passages = list(open_index(idx).passages)
    (idx / "rowlen").mkdir()
    np.save(idx / rel, rows(passages)[rel])
    raw = _manifest(idx)
    raw["components"]["rowlen"] = {"files": [rel], "dims": 2}
    raw["files"][rel] = manifest.file_entries(idx, [rel])[rel]
    (idx / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
    seen.clear()
    (docs / "ebla" / "kings.txt").write_text("Ishar-Damu was a king of Ebla.\n", encoding="utf-8")
    update_index(idx)
    updated = open_index(idx)
    assert seen == [p.id for p in updated.passages if p.id.startswith("ebla/kings.txt#")]
    assert np.array_equal(np.load(idx / rel), rows(list(updated.passages))[rel])
    assert updated.component("rowlen") == {"files": [rel], "dims": 2} and verify_index(idx)


def test_a_new_hidden_file_is_counted_as_a_fresh_build_counts_it(docs, tmp_path):
    build_index(docs, tmp_path / "idx")
    (docs / ".notes.txt").write_text("private\n", encoding="utf-8")
    report = update_index(tmp_path / "idx")
    assert not report.up_to_date and report.reindexed == 0
    assert _manifest(tmp_path / "idx")["components"]["chunking"]["skipped"] == {"hidden file": 1}
    _assert_fresh(tmp_path / "idx", docs, tmp_path)


def test_an_index_given_by_a_link_is_updated_where_the_link_points(docs, tmp_path):
    build_index(docs, tmp_path / "idx")
    (tmp_path / "current").symlink_to(tmp_path / "idx")
    (docs / "mari.html").unlink()
    assert update_index(tmp_path / "current").removed == 1
    assert (tmp_path / "current").is_symlink() and verify_index(tmp_path / "idx")
    _assert_fresh(tmp_path / "idx", docs, tmp_path)
