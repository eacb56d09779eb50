"""A folder of a user's files: chunked with provenance, nothing skipped silently, indexed and
answered through `rootweaver index build` and `rootweaver ask`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import ConfigError, MultiHopConfig
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.documents.corpus import CorpusError, passage_from_object
from rootweaver_innovations.documents.folders import (
    ChunkingSettings,
    load_documents,
    passage_record,
)

DOCS = Path(__file__).resolve().parents[1] / "data" / "docs"
QUESTION = "Who was the vizier of Ebla after one who had served king Ishar Damu for 17 years?"


def test_every_shipped_file_is_chunked_with_its_title_and_heading_path():
    scan = load_documents(DOCS)
    assert scan.skipped == () and scan.documents == 5
    by_path: dict[str, list] = {}
    for p in scan.passages:
        by_path.setdefault(p.source.path, []).append(p)
    assert sorted(by_path) == ["ebla/kings.txt", "ebla/viziers.md", "mari.html", "songs.pdf", "sopranos.md.gz"]
    titles = {path: {p.title for p in ps} for path, ps in by_path.items()}
    # kings.txt has no title of its own: its chunks take the name its lead sentence is about
    assert titles == {"ebla/kings.txt": {"Kun-Damu"}, "ebla/viziers.md": {"Viziers of Ebla"},
                      "mari.html": {"Kings of Mari"}, "songs.pdf": {"Songs and singers"},
                      "sopranos.md.gz": {"Antonietta Marini-Rainieri"}}
    heads = {p.source.headings for p in by_path["ebla/viziers.md"]}
    assert ("Viziers of Ebla", "Ibbi-Sipish") in heads and ("Viziers of Ebla", "Ibrium") in heads
    ibbi = next(p for p in by_path["ebla/viziers.md"] if p.source.headings[-1] == "Ibbi-Sipish")
    assert ibbi.sentences[0].startswith("Ibbi-Sipish or Ibbi-Zikir")
    html = " ".join(p.text for p in by_path["mari.html"])
    assert "Ishtup-Ishar" in html and "not text" not in html and "color" not in html
    assert {p.source.headings for p in by_path["mari.html"]} == {("Kings of Mari", "Ishtup-Ishar")}
    assert [p.source.headings for p in by_path["songs.pdf"]][:1] == [("page 1",)]
    assert "Hindemith" in " ".join(p.text for p in by_path["songs.pdf"])


def test_html_with_an_unclosed_heading_keeps_its_text(tmp_path):
    (tmp_path / "page.html").write_text("<h1>Top<p>The body is kept.</p><h2>Sub</h2><div>So is this.</div>")
    passages = load_documents(tmp_path).passages
    assert [(p.source.headings, p.text) for p in passages] == [(("Top",), "The body is kept."),
                                                               (("Top", "Sub"), "So is this.")]


def test_untitled_text_takes_the_subject_of_each_paragraph_else_the_file_name(tmp_path):
    (tmp_path / "field_notes.txt").write_text(
        "Ibrium (24th century BC) was the vizier of Ebla.\n\n" + "He served two kings. " * 30 + "\n\n"
        "Kun-Damu was a king of Ebla.\n")
    (tmp_path / "todo.txt").write_text("buy milk, then call the office.\n")
    passages = load_documents(tmp_path, ChunkingSettings(chunk_tokens=32, overlap_tokens=0)).passages
    titles = [(p.source.path, p.title) for p in passages]
    assert titles[0] == ("field_notes.txt", "Ibrium") and titles[-2] == ("field_notes.txt", "Kun-Damu")
    assert all(t == "Ibrium" for path, t in titles[1:-2])  # "He served..." continues Ibrium's paragraph
    assert titles[-1] == ("todo.txt", "todo")


def test_a_chunk_is_named_after_the_paragraph_it_starts_in(tmp_path):
    # the first chunk holds two short paragraphs; the chunks after it continue the second one
    (tmp_path / "two.txt").write_text("Ebla was a city.\n\nKun-Damu was a king of Ebla.\n\n" + "He built walls. " * 30)
    passages = load_documents(tmp_path, ChunkingSettings(chunk_tokens=48, overlap_tokens=0)).passages
    assert "Kun-Damu" in passages[0].text and len(passages) > 2
    assert [p.title for p in passages] == ["Ebla"] + ["Kun-Damu"] * (len(passages) - 1)  # not Ebla's name


def test_neighbours_chain_the_chunks_of_each_document():
    scan = load_documents(DOCS, ChunkingSettings(chunk_tokens=24, overlap_tokens=4))
    docs: dict[str, list] = {}
    for p in scan.passages:
        docs.setdefault(p.source.path, []).append(p)
    assert max(len(ps) for ps in docs.values()) >= 3
    for ps in docs.values():
        assert [p.source.position for p in ps] == list(range(len(ps)))
        assert [p.source.prev for p in ps] == [None, *(p.id for p in ps[:-1])]
        assert [p.source.next for p in ps] == [*(p.id for p in ps[1:]), None]


def test_a_record_round_trips_with_its_source():
    for p in load_documents(DOCS).passages:
        assert passage_from_object(json.loads(json.dumps(passage_record(p))), Path("x"), 1) == p


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=9), min_size=1, max_size=300),
       st.integers(8, 64))
def test_chunks_stay_under_the_token_size_and_lose_no_text(tmp_path_factory, words, size):
    folder = tmp_path_factory.mktemp("words")
    text = " ".join(w + ("." if i % 7 == 6 else "") for i, w in enumerate(words))
    (folder / "a.txt").write_text(text)
    passages = load_documents(folder, ChunkingSettings(chunk_tokens=size, overlap_tokens=0)).passages
    counter = default_token_counter()
    assert all(counter.count(p.text) <= size for p in passages)
    # a word longer than a chunk is cut inside; no character is lost or reordered
    assert "".join("".join(p.text.split()) for p in passages) == "".join(text.split())


def _make_bad_folder(root: Path) -> dict[str, str]:
    """Files that yield no chunk, each with the start of the reason it must be skipped for."""
    (root / "good.md").write_text("# Good\n\nThe good file is read.\n")
    (root / "report.docx").write_bytes(b"PK\x03\x04")
    (root / ".hidden.txt").write_text("hidden")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("x")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "empty.txt").write_text("  \n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really")
    (root / "bomb.txt.gz").write_bytes(gzip.compress(b"a " * 200_000))
    (root / "big.txt").write_text("word " * 30_000)
    (root / "truncated.md.gz").write_bytes(gzip.compress(b"# T\n\ntext")[:12])
    return {"report.docx": "unsupported type .docx", ".hidden.txt": "hidden file", ".git": "hidden directory",
            "latin1.txt": "not UTF-8 text", "empty.txt": "no text", "broken.pdf": "unreadable PDF",
            "bomb.txt.gz": "decompresses past the 100,000-byte", "big.txt": "larger than the 100,000-byte",
            "truncated.md.gz": "unreadable"}


def test_nothing_is_skipped_silently(tmp_path):
    expected = _make_bad_folder(tmp_path)
    heard = []
    scan = load_documents(tmp_path, ChunkingSettings(max_file_bytes=100_000), heard.append)
    assert {p.source.path for p in scan.passages} == {"good.md"}
    assert heard == list(scan.skipped)
    reasons = {s.path: s.reason for s in scan.skipped}
    assert set(reasons) == set(expected)
    for path, start in expected.items():
        assert reasons[path].startswith(start), (path, reasons[path])
    assert sum(scan.skipped_by_reason().values()) == len(expected)


def test_a_folder_with_nothing_to_read_is_one_clear_error(tmp_path):
    (tmp_path / "a.docx").write_bytes(b"PK\x03\x04\x14\x00")  # a zip archive, as a .docx is
    with pytest.raises(CorpusError, match=r"no document to index \(1 unsupported type \.docx\)"):
        load_documents(tmp_path)
    with pytest.raises(CorpusError, match="not a directory"):
        load_documents(tmp_path / "a.docx")


@pytest.mark.parametrize("kwargs", [{"chunk_tokens": 4}, {"overlap_tokens": 64}, {"overlap_tokens": -1},
                                    {"max_file_bytes": 0}])
def test_bad_chunking_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        ChunkingSettings(**kwargs)


def test_config_takes_a_folder_and_checks_the_chunking(tmp_path):
    cfg = MultiHopConfig.from_mapping({"retriever": {"corpus": str(DOCS), "chunking": {"chunk_tokens": 64}}})
    assert cfg.retriever.chunking.settings() == ChunkingSettings(chunk_tokens=64)
    with pytest.raises(ConfigError, match="retriever.chunking.chunk_tokens"):
        MultiHopConfig.from_mapping({"retriever": {"chunking": {"chunk_tokens": 2}}})
    with pytest.raises(ConfigError, match="retriever.chunking.overlap_tokens' must be below half"):
        MultiHopConfig.from_mapping({"retriever": {"chunking": {"chunk_tokens": 32, "overlap_tokens": 16}}})
    with pytest.raises(ConfigError, match="retriever.corpus.*file or folder"):
        MultiHopConfig.from_mapping({"retriever": {"corpus": str(tmp_path / "missing")}})


def test_index_build_of_a_folder_answers_through_ask_index(tmp_path, capsys):
    out = tmp_path / "idx"
    assert main(["index", "build", str(DOCS), "--out", str(out)]) == 0
    assert "from 5 documents" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    chunking = manifest["components"]["chunking"]
    assert chunking["chunk_tokens"] == 128 and chunking["documents"] == 5 and chunking["skipped"] == {}
    assert manifest["corpus"]["path"] == str(DOCS)
    assert main(["index", "verify", str(out)]) == 0
    capsys.readouterr()

    assert main(["ask", QUESTION, "--index", str(out), "--reader", "none", "--json"]) == 0
    by_index = json.loads(capsys.readouterr().out)
    assert main(["ask", QUESTION, "--corpus", str(DOCS), "--reader", "none", "--json"]) == 0
    by_folder = json.loads(capsys.readouterr().out)
    assert by_index == by_folder
    assert "Ibrium" in by_index["synth_context"]  # the gold answer reaches the reader's context
    answer = by_index["answer"]
    cited = {c["source"]["path"] for c in answer["citations"]}
    assert cited == {"ebla/viziers.md"}
    assert all(c["source"]["headings"][0] == "Viziers of Ebla" for c in answer["citations"])


def test_ask_on_a_folder_reports_each_skipped_file_and_a_count(tmp_path, capsys):
    expected = _make_bad_folder(tmp_path)
    assert main(["ask", "What is read?", "--corpus", str(tmp_path), "--reader", "none"]) == 0
    err = capsys.readouterr().err.splitlines()
    skipped = [line for line in err if line.startswith("rootweaver: skipped ")]
    assert "rootweaver: skipped report.docx: unsupported type .docx" in skipped
    # at the default 64 MiB file limit the bomb and the big file are read; the other seven are skipped
    assert len(skipped) == len(expected) - 2
    assert err[-1].startswith(f"rootweaver: --corpus {tmp_path}: ")
    assert f"; skipped {len(expected) - 2} file(s): " in err[-1] and "1 unsupported type .docx" in err[-1]


def test_index_build_of_an_unreadable_folder_exits_2(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.docx").write_bytes(b"PK\x03\x04\x14\x00")
    assert main(["index", "build", str(tmp_path / "docs"), "--out", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "rootweaver: skipped a.docx: unsupported type .docx"
    assert len(err) == 2 and "no document to index" in err[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]  # no index, no temporary directory


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.lists(st.integers(1, 200), min_size=1, max_size=30))
def test_the_reading_budget_leaves_paragraphs_alone_and_scales_chunks(max_passages, lengths):
    from rootweaver_innovations.documents.corpus import Passage, Source
    from rootweaver_innovations.documents.folders import load_reading_budget

    budget = load_reading_budget()
    texts = [" ".join(["word"] * n) for n in lengths]
    chunks = [Passage(f"c{i}", "T", (t,), Source("a.txt", (), i)) for i, t in enumerate(texts)]
    count = default_token_counter().count
    mean = sum(count(t) for t in texts) / len(texts)
    scaled = max(1, round(max_passages * budget.paragraph_tokens / mean))
    assert budget.passages(max_passages, chunks) == scaled
    # JSONL records count as chunks only when they average at most half a paragraph (16 of them, evenly strided)
    records = [Passage(f"p{i}", "T", (t,)) for i, t in enumerate(texts)]
    probe = texts[:: max(1, len(texts) // 16)][:16]
    short = sum(count(t) for t in probe) / len(probe) <= budget.paragraph_tokens / 2
    assert budget.passages(max_passages, records) == (scaled if short else max_passages)
    paragraphs = [Passage(p.id, p.title, (" ".join(["word"] * 140),)) for p in records]
    assert budget.passages(max_passages, paragraphs) == max_passages
    longer = [Passage(p.id, p.title, (p.text + " more words here",), p.source) for p in chunks]
    assert budget.passages(max_passages, longer) <= budget.passages(max_passages, chunks)


def test_a_malformed_reading_budget_file_is_refused(tmp_path):
    from rootweaver_innovations.documents.folders import load_reading_budget

    bad = tmp_path / "reading.json"
    bad.write_text('{"paragraph_tokens": 0}')
    with pytest.raises(ValueError, match="paragraph_tokens must be a number > 0"):
        load_reading_budget(bad)


def test_sigterm_while_a_folder_is_chunked_leaves_nothing(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    folder = tmp_path / "many"
    folder.mkdir()
    para = "Ibrium was the vizier of Ebla for king Irkab-Damu and his successor. " * 12
    for i in range(6000):  # about 15 s of chunking: the signal must stop it, not wait for its end
        (folder / f"note-{i}.txt").write_text("\n\n".join([para] * 8))
    out = tmp_path / "idx"
    proc = subprocess.Popen([sys.executable, "-m", "rootweaver_capabilities.cli.main", "index", "build", str(folder),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".idx.building-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)  # inside the chunking phase
    assert proc.poll() is None, "the build ended before it could be signalled"
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=5)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1] == "rootweaver: interrupted by SIGTERM; partial work removed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many"]


def test_without_the_extra_a_folder_is_one_line_naming_the_install(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "langchain_text_splitters", None)  # as if not installed
    assert main(["ask", "q?", "--corpus", str(DOCS), "--reader", "none"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'rootweaver[documents]'" in err


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab \n", max_size=400), st.integers(4, 50))
def test_long_sections_reach_the_splitter_in_bounded_blocks_that_lose_nothing(text, size):
    from rootweaver_innovations.documents.folders import _blocks

    blocks = list(_blocks(text, size))
    assert "".join(blocks) == text and all(len(b) <= size for b in blocks)
    # a block ends with whitespace unless it is full and has none after its first character
    assert all(b[-1].isspace() or (len(b) == size and not any(c.isspace() for c in b[1:])) for b in blocks[:-1])
