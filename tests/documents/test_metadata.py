"""Every kind of file says what it can about itself in one DocumentMeta: HTML ``<meta>`` tags,
PDF document information, a JSONL record's fields beyond its text; dates read with their
offset; a date that is no date is kept as text and reported once, naming the file (and line);
`index info` summarises what the documents carry and `ask --json` cites it."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.documents.corpus import FileNotice, Passage, load_corpus_jsonl, passage_from_object
from rootweaver_innovations.documents.folders import load_documents, passage_record
from rootweaver_innovations.documents.formats import read_document
from rootweaver_innovations.documents.metadata import DocumentMeta, MetaSummary, meta_of, parse_date

DATA = Path(__file__).resolve().parents[1] / "data" / "meta"
DOCS, RECORDS = DATA / "docs", DATA / "records.jsonl"


@pytest.mark.parametrize(("text", "iso"), [
    ("2023-10-06", "2023-10-06"),
    ("2023-10-06T21:31:00Z", "2023-10-06T21:31:00+00:00"),
    ("2023-10-06T21:31:00+0200", "2023-10-06T21:31:00+02:00"),
    ("Fri, 06 Oct 2023 21:31:00 GMT", "2023-10-06T21:31:00+00:00"),
    ("October 6, 2023", "2023-10-06"),
    ("6 Oct 2023 5:31 PM EDT", "2023-10-06T17:31:00"),  # a zone abbreviation is not understood: no offset
    ("D:20240115093000+01'00'", "2024-01-15T09:30:00+01:00"),
    ("D:20240115093000-05'30", "2024-01-15T09:30:00-05:30"),
    ("D:20240115093000Z", "2024-01-15T09:30:00+00:00"),
    ("D:20240115", "2024-01-15"),
    ("D:202401150930", "2024-01-15T09:30:00"),
])
def test_dates_read_with_their_offset(text, iso):
    assert parse_date(text) == iso


@pytest.mark.parametrize("text", ["2023", "Oct 6", "Friday", "sometime", "2023-13-45", "D:2024", "D:20241315",
                                  "D:2024011509300", ""])
def test_what_is_no_date(text):
    assert parse_date(text) is None


def test_meta_of_takes_the_first_key_of_each_field_and_keeps_the_rest_of_a_bad_date():
    meta, problem = meta_of({"Publisher": "Fairfax", "site_name": "The Age", "published_at": "2023-11-06",
                             "date": "2020-01-01", "Authors": ["Ann", "Bo"], "link": "https://x.example", "n": 3})
    assert meta == DocumentMeta(None, "The Age", "2023-11-06", "Ann, Bo", "https://x.example",
                                (("Publisher", "Fairfax"), ("date", "2020-01-01"), ("n", "3")))
    assert problem is None
    bad, problem = meta_of({"title": "T", "date": "soon", "author": "Ann", "viewport": "w"}, keep_extra=False)
    assert bad == DocumentMeta("T", None, None, "Ann", None, (("date", "soon"),))
    assert problem == "'date' is not a date ('soon'); kept as text"
    assert meta_of({"cover": {"image": "a.png"}, "note": ""}) == (None, None)


def test_html_meta_tags_are_the_documents_metadata_and_navigation_is_not_text():
    doc = read_document(DOCS / "harbour.html", "harbour.html", "html", 1 << 20)
    assert doc.meta == DocumentMeta("The Velmora harbour", "Coastal Courier", "2023-10-06T21:31:00+02:00",
                                    "Ines Halvorsen", "https://courier.example/velmora-harbour")
    assert doc.title == "The Velmora harbour" and doc.problem is None  # og:title, without the site's suffix
    text = " ".join(body for _, body in doc.sections)
    assert text.startswith("The harbour of Velmora") and "Weather" not in text


def test_an_html_page_without_meta_tags_keeps_its_title(tmp_path):
    (tmp_path / "a.html").write_text("<title>Plain page</title><p>Body.</p>", encoding="utf-8")
    doc = read_document(tmp_path / "a.html", "a.html", "html", 1 << 20)
    assert doc.title == "Plain page" and doc.meta == DocumentMeta(title="Plain page")


def test_pdf_document_information_is_the_documents_metadata():
    doc = read_document(DOCS / "lighthouse.pdf", "lighthouse.pdf", "pdf", 1 << 20)
    assert doc.meta == DocumentMeta("The Velmora lighthouse", None, "2024-01-15T09:30:00+01:00", "Piet Janssen")
    assert doc.title == "The Velmora lighthouse" and doc.problem is None


def _pdf_dated(tmp_path: Path, date: str) -> Path:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=DOCS / "lighthouse.pdf")
    writer.add_metadata({"/CreationDate": date})
    folder = tmp_path / "pdfs"
    folder.mkdir()
    with open(folder / "dated.pdf", "wb") as fh:
        writer.write(fh)
    return folder


def test_a_pdf_date_that_is_no_date_is_reported_once_and_the_pdf_indexed(tmp_path, caplog):
    folder = _pdf_dated(tmp_path, "D:2024-01-15")
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        scan = load_documents(folder)
    assert [p.source.path for p in scan.passages] == ["dated.pdf"]
    meta = scan.passages[0].source.meta
    assert (meta.title, meta.author, meta.published) == ("The Velmora lighthouse", "Piet Janssen", None)
    assert meta.extra == (("CreationDate", "D:2024-01-15"),)
    assert scan.notices == (FileNotice("dated.pdf", "document info 'CreationDate' is not a date ('D:2024-01-15'); "
                                                    "kept as text"),)
    assert [r.getMessage() for r in caplog.records] == [f"read dated.pdf with a problem: {scan.notices[0].problem}"]


def test_an_html_date_that_is_no_date_is_reported(tmp_path):
    (tmp_path / "a.html").write_text('<meta name="date" content="yesterday"><meta name="author" content="Ann">'
                                     "<p>Body.</p>", encoding="utf-8")
    doc = read_document(tmp_path / "a.html", "a.html", "html", 1 << 20)
    assert doc.meta == DocumentMeta(author="Ann", extra=(("date", "yesterday"),))
    assert doc.problem == "<meta> 'date' is not a date ('yesterday'); kept as text"


def test_jsonl_fields_beyond_the_text_are_the_records_metadata(caplog):
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        first, second, plain = load_corpus_jsonl(RECORDS)
    assert first.meta == DocumentMeta(None, "Harbour Gazette", "2023-10-06T21:31:00+00:00", "Ola Berg",
                                      "https://gazette.example/fish-market", (("section", "Local"),))
    assert first.source is None and first.title == "Velmora fish market"
    assert second.meta == DocumentMeta(source="Coastal Courier", extra=(("date", "sometime in the autumn"),
                                                                        ("tags", "sailing, races")))
    assert [r.getMessage() for r in caplog.records] == [
        f"read {RECORDS}:2 with a problem: field 'date' is not a date ('sometime in the autumn'); kept as text"]
    assert plain == Passage("n3", "Velmora bridge", ("The bridge to Velmora has three arches of grey granite.",))


def test_a_record_without_extra_fields_reads_as_before_and_one_with_them_round_trips():
    obj = {"id": "a", "title": "A", "text": "One. Two.", "sentences": None, "source": None}
    assert passage_from_object(obj, Path("x"), 1) == Passage("a", "A", ("One.", "Two."))
    heard: list[FileNotice] = []
    record = {**json.loads(RECORDS.read_text(encoding="utf-8").splitlines()[0]), "headline": "Market at five"}
    passage = passage_from_object(record, RECORDS, 1, heard.append)
    assert passage.title == "Velmora fish market" and passage.meta.title == "Market at five"
    assert passage_from_object(json.loads(json.dumps(passage_record(passage))), Path("y"), 9) == passage
    assert heard == []


def test_the_summary_counts_documents_and_merges_parts():
    whole, part_a, part_b = MetaSummary(), MetaSummary(), MetaSummary()
    metas = [DocumentMeta(source="A", published="2023-01-02T10:00:00+01:00"), None,
             DocumentMeta(source="B", published="2021-05-06", extra=(("k", "v"),)), DocumentMeta(source="A")]
    for n, meta in enumerate(metas):
        whole.add(meta)
        (part_a if n < 2 else part_b).add(meta)
    part_a.merge(part_b)
    assert part_a.to_json() == whole.to_json() == {
        "documents": 4, "with_meta": 3, "fields": {"source": 3, "published": 2, "extra": 1},
        "sources": {"A": 2, "B": 1}, "source_count": 2, "published": {"first": "2021-05-06", "last": "2023-01-02"}}
    assert whole.to_json(top_sources=1)["sources"] == {"A": 2}


def test_the_summary_reads_back_from_its_entry_and_takes_a_part_away():
    whole, gone, kept = MetaSummary(), MetaSummary(), MetaSummary()
    metas = [DocumentMeta(source="A", published="2022-03-04"), DocumentMeta(source="B", published="2021-05-06"),
             None, DocumentMeta(source="C", author="X", published="2023-01-02")]
    for n, meta in enumerate(metas):
        whole.add(meta)
        (gone if n in (0, 2) else kept).add(meta)
    back = MetaSummary.from_json(whole.to_json())
    assert back is not None and back.to_json() == whole.to_json()
    assert MetaSummary.from_json(whole.to_json(top_sources=2)) is None  # the third source's count is lost
    assert back.without(gone).to_json() == kept.to_json()  # "A" drops out of the sources
    assert back.without(kept) is None  # the first and last days go: the span left is unknown


def test_index_info_and_citations_carry_the_metadata_of_a_folder(tmp_path, capsys, caplog):
    shutil.copytree(DOCS, tmp_path / "docs")
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        assert main(["index", "build", str(tmp_path / "docs"), "--out", str(tmp_path / "idx")]) == 0
    assert [r.getMessage() for r in caplog.records] == [
        "read ferry.md with a problem: front matter 'published' is not a date ('the spring after the storm'); "
        "kept as text"]
    assert "rootweaver: read ferry.md with a problem: front matter 'published' is not a date" in capsys.readouterr().err
    assert main(["index", "info", str(tmp_path / "idx")]) == 0
    out = capsys.readouterr().out
    assert ("metadata: 3 of 3 documents carry some (title 3, source 2, published 2, author 3, url 1, extra 1)\n"
            "  sources: Coastal Courier (1), Harbour Gazette (1)\n"
            "  published: 2023-10-06 to 2024-01-15\n") in out
    assert main(["ask", "Who was the keeper of the Velmora lighthouse?", "--index", str(tmp_path / "idx"),
                 "--reader", "none", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["answer"]
    assert answer["text"] == "Marta Olsen"
    assert answer["citations"][0]["source"]["meta"] == {"title": "The Velmora lighthouse", "author": "Piet Janssen",
                                                        "published": "2024-01-15T09:30:00+01:00"}
    assert answer["cited_lines"][0].startswith("The Velmora lighthouse [2024-01-15] | ")


def test_index_info_and_citations_carry_the_metadata_of_jsonl_records(tmp_path, capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="rootweaver.documents"):
        assert main(["index", "build", str(RECORDS), "--out", str(tmp_path / "idx"), "--workers", "2",
                     "--chunk-size", "1"]) == 0
    assert [r.getMessage() for r in caplog.records] == [
        f"read {RECORDS}:2 with a problem: field 'date' is not a date ('sometime in the autumn'); kept as text"]
    capsys.readouterr()
    assert main(["index", "info", str(tmp_path / "idx"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["components"]["metadata"] == {
        "documents": 3, "with_meta": 2, "fields": {"source": 2, "published": 1, "author": 1, "url": 1, "extra": 2},
        "sources": {"Coastal Courier": 1, "Harbour Gazette": 1}, "source_count": 2,
        "published": {"first": "2023-10-06", "last": "2023-10-06"}}
    assert main(["ask", "When does the fish market of Velmora open?", "--index", str(tmp_path / "idx"),
                 "--reader", "none", "--json"]) == 0
    citation = json.loads(capsys.readouterr().out)["answer"]["citations"][0]
    assert "source" not in citation and citation["meta"]["source"] == "Harbour Gazette"
    assert citation["meta"]["extra"] == {"section": "Local"}


def test_index_info_says_when_no_document_carries_any(tmp_path, capsys):
    (tmp_path / "c.jsonl").write_text('{"id": "a", "title": "A", "text": "Alpha."}\n', encoding="utf-8")
    assert main(["index", "build", str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "idx")]) == 0
    assert main(["index", "info", str(tmp_path / "idx")]) == 0
    assert "metadata: none of 1 documents carries any\n" in capsys.readouterr().out
