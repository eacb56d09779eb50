"""A saved article's YAML front matter is its metadata, not its text: title, publication,
date, author and url carried on every chunk's source, through the index and into citations;
a malformed block or date still indexes the file and is reported once."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.documents.corpus import (
    CorpusError,
    DocumentMeta,
    Source,
    passage_from_object,
)
from rootweaver_innovations.documents.folders import load_documents, passage_record
from rootweaver_innovations.documents.formats import read_document

ARTICLE = """---
title: "Amazon sellers sound off on the FTC's 'long-overdue' antitrust case"
source: "CNBC"
published: 2023-10-06T21:31:00+00:00
author: ""
url: "https://www.cnbc.com/2023/10/06/amazon-sellers.html"
category: business
tags: [retail, antitrust]
cover: {image: a.png}
---

Zapolsky said the tools help sellers set competitive prices.

One seller wrote that selling on Amazon changed her life.
"""


def _read(tmp_path: Path, text: str, name: str = "a.md"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return read_document(tmp_path / name, name, "markdown" if name.endswith(".md") else "text", 1 << 20)


def test_front_matter_is_metadata_and_not_text(tmp_path):
    doc = _read(tmp_path, ARTICLE)
    assert doc.title == "Amazon sellers sound off on the FTC's 'long-overdue' antitrust case"
    assert doc.meta == DocumentMeta(doc.title, "CNBC", "2023-10-06T21:31:00+00:00", None,
                                    "https://www.cnbc.com/2023/10/06/amazon-sellers.html",
                                    (("category", "business"), ("tags", "retail, antitrust")))
    text = " ".join(body for _, body in doc.sections)
    assert text.startswith("Zapolsky said") and "category" not in text and "---" not in text
    assert doc.problem is None


def test_every_chunk_carries_the_meta_and_the_title(tmp_path, caplog):
    (tmp_path / "a.md").write_text(ARTICLE, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        scan = load_documents(tmp_path)
    assert scan.notices == () and caplog.records == []
    assert {p.title for p in scan.passages} == {"Amazon sellers sound off on the FTC's 'long-overdue' antitrust case"}
    assert {p.source.meta.source for p in scan.passages} == {"CNBC"}


def test_the_aliases_and_the_date_forms(tmp_path):
    meta = _read(tmp_path, "---\nTitle: Notes\nsite_name: The Age\npublisher: Fairfax\ndate: 2023-11-06T08:00:00Z\n"
                           "---\nBody text here.\n").meta
    assert (meta.title, meta.source, meta.published) == ("Notes", "The Age", "2023-11-06T08:00:00+00:00")
    assert meta.extra == (("publisher", "Fairfax"),)
    assert _read(tmp_path, "---\npublished: 2023-11-06\n---\nBody.\n").meta.published == "2023-11-06"
    assert _read(tmp_path, "---\npublished: '2023-11-06 08:00'\n---\nBody.\n").meta.published == "2023-11-06T08:00:00"
    assert _read(tmp_path, "---\r\ntitle: Windows\r\n---\r\nBody.\r\n").title == "Windows"


def test_a_text_file_reads_its_front_matter_too(tmp_path):
    doc = _read(tmp_path, "---\ntitle: Field notes\n---\nIbrium was the vizier of Ebla.\n", "notes.txt")
    assert doc.title == "Field notes" and doc.sections == [((), "Ibrium was the vizier of Ebla.\n")]


def test_a_markdown_rule_then_prose_stays_text(tmp_path):
    text = "---\nA paragraph between two rules, not metadata.\n---\n\nMore text.\n"
    doc = _read(tmp_path, text)
    assert doc.meta is None and doc.problem is None and "between two rules" in doc.sections[0][1]
    assert _read(tmp_path, "---\nJust a rule and no other.\n").meta is None


def test_an_empty_front_matter_is_dropped(tmp_path):
    doc = _read(tmp_path, "---\n---\n# Heading\n\nBody.\n")
    assert doc.meta is None and doc.title == "Heading" and doc.problem is None


def test_malformed_yaml_keeps_what_reads_and_says_so_once(tmp_path, caplog):
    (tmp_path / "bad.md").write_text('---\ntitle: "He said "hi" twice"\nsource: The Verge\n  broken: [\n---\n'
                                     "The body is indexed.\n", encoding="utf-8")
    (tmp_path / "good.md").write_text(ARTICLE, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        scan = load_documents(tmp_path)
    bad = [p for p in scan.passages if p.source.path == "bad.md"]
    assert [p.title for p in bad] == ['He said "hi" twice'] and bad[0].source.meta.source == "The Verge"
    assert bad[0].text == "The body is indexed."
    assert [n.path for n in scan.notices] == ["bad.md"]
    assert scan.notices[0].problem.startswith("front matter not read whole (line 2: ")
    assert [r.getMessage() for r in caplog.records] == [f"read bad.md with a problem: {scan.notices[0].problem}"]


def test_a_date_in_words_reads_and_one_that_is_not_a_date_is_kept_as_text_and_reported(tmp_path):
    doc = _read(tmp_path, "---\ntitle: T\npublished: October 6, 2023\n---\nBody.\n")
    assert doc.meta.published == "2023-10-06" and doc.problem is None
    vague = _read(tmp_path, "---\ntitle: T\npublished: last autumn\nauthor: Ann\n---\nBody.\n")
    assert vague.meta.published is None and vague.meta.extra == (("published", "last autumn"),)
    assert vague.meta.author == "Ann"
    assert vague.problem == "front matter 'published' is not a date ('last autumn'); kept as text"
    impossible = _read(tmp_path, "---\ntitle: T\ndate: 2023-13-45\n---\nBody.\n")
    assert impossible.title == "T" and impossible.meta.extra == (("date", "2023-13-45"),)
    assert "month must be in 1..12" in impossible.problem and "'date' is not a date" in impossible.problem


def test_a_file_of_front_matter_only_is_skipped_with_its_reason(tmp_path):
    (tmp_path / "only.md").write_text("---\ntitle: Nothing else\n---\n", encoding="utf-8")
    (tmp_path / "body.md").write_text("Some text.\n", encoding="utf-8")
    scan = load_documents(tmp_path)
    assert [(s.path, s.reason) for s in scan.skipped] == [("only.md", "no text")]


def test_the_meta_round_trips_and_a_record_without_it_is_unchanged(tmp_path):
    (tmp_path / "a.md").write_text(ARTICLE, encoding="utf-8")
    (tmp_path / "plain.md").write_text("# Plain\n\nNo front matter.\n", encoding="utf-8")
    for p in load_documents(tmp_path).passages:
        record = passage_record(p)
        assert ("meta" in record["source"]) == (p.source.path == "a.md")
        assert passage_from_object(json.loads(json.dumps(record)), Path("x"), 1) == p
    assert Source("a.md").meta is None


@pytest.mark.parametrize(("meta", "message"), [
    ("yes", "field 'source.meta' must be an object, got a string"),
    ({"url": 3}, "field 'source.meta.url' must be a non-empty string, got a number"),
    ({"extra": {"k": 1}}, "field 'source.meta.extra' must be an object of strings"),
])
def test_a_bad_meta_in_a_record_is_refused_naming_the_field(meta, message):
    record = {"id": "a#0", "title": "A", "text": "Body.", "source": {"path": "a.md", "meta": meta}}
    with pytest.raises(CorpusError, match=f"^x:7: {message}$"):
        passage_from_object(record, Path("x"), 7)


def test_citations_show_the_meta_through_the_index(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(ARTICLE, encoding="utf-8")
    assert main(["index", "build", str(tmp_path / "docs"), "--out", str(tmp_path / "idx")]) == 0
    capsys.readouterr()
    assert main(["ask", "What did Zapolsky say about the tools?", "--index", str(tmp_path / "idx"),
                 "--reader", "none", "--json"]) == 0
    citations = json.loads(capsys.readouterr().out)["answer"]["citations"]
    assert citations and all(c["source"]["meta"]["source"] == "CNBC" for c in citations)
    assert citations[0]["source"]["meta"]["published"] == "2023-10-06T21:31:00+00:00"
