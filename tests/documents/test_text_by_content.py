"""Text files without a known suffix are recognised by their content (``README``, ``NEWS``,
``CHANGES.gz``), indexed and answered from; a binary file is skipped and counted, never lost."""

from __future__ import annotations

import gzip
import json

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.documents.folders import load_documents
from rootweaver_innovations.documents.formats import kind_of

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


def _folder(root):
    (root / "README").write_text("Frobnicator reads a startup file named frob.rc for interactive shells.\n")
    (root / "NEWS").write_text("Version 2.0 of Frobnicator adds the quiet mode, requested by many users.\n")
    (root / "CHANGES.gz").write_bytes(gzip.compress(b"The quiet mode was written by Ada Quill in March.\n"))
    (root / "logo").write_bytes(PNG)
    (root / "archive.gz").write_bytes(gzip.compress(PNG))
    return root


def test_kind_by_suffix_else_by_content(tmp_path):
    folder = _folder(tmp_path)
    assert [kind_of(folder / n, n) for n in ("README", "NEWS", "CHANGES.gz", "logo", "archive.gz")] == [
        "text", "text", "text", None, None]
    (folder / "notes.md").write_bytes(PNG)  # a known suffix is trusted: reading it then says what is wrong
    assert kind_of(folder / "notes.md", "notes.md") == "markdown"
    (folder / "empty").write_text("")
    assert kind_of(folder / "empty", "empty") is None


def test_the_text_files_are_indexed_and_the_binaries_skipped_and_counted(tmp_path):
    scan = load_documents(_folder(tmp_path))
    assert {p.source.path for p in scan.passages} == {"README", "NEWS", "CHANGES.gz"}
    assert {s.path: s.reason for s in scan.skipped} == {"logo": "unsupported type (no suffix)",
                                                       "archive.gz": "unsupported type .gz"}


def test_index_build_and_ask_answer_from_a_file_without_a_suffix(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    _folder(tmp_path / "docs")
    assert main(["index", "build", str(tmp_path / "docs"), "--out", str(tmp_path / "idx")]) == 0
    out, err = capsys.readouterr()
    assert "from 3 documents" in out
    assert err.splitlines()[-1].endswith("skipped 2 file(s): 1 unsupported type .gz, 1 unsupported type (no suffix)")
    answers = {}
    for question, path in (("Who wrote the quiet mode of Frobnicator?", "CHANGES.gz"),
                           ("What startup file does Frobnicator read?", "README"),
                           ("Which version of Frobnicator adds the quiet mode?", "NEWS")):
        assert main(["ask", question, "--index", str(tmp_path / "idx"), "--json", "--reader", "none"]) == 0
        answer = json.loads(capsys.readouterr().out)["answer"]
        assert {c["source"]["path"] for c in answer["citations"]} == {path}, answer
        answers[path] = answer["text"]
    assert answers["CHANGES.gz"] == "Ada Quill" and "frob.rc" in answers["README"]
