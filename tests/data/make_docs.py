"""Write tests/data/docs: a small folder of real files (Markdown with headings, plain text,
HTML, a PDF, a gzipped Markdown file) made from paragraphs of the bundled demo corpus
(HotpotQA / Wikipedia, CC BY-SA 4.0; see docs.NOTICE.md), and tests/data/meta: files that
carry metadata (HTML ``<meta>`` tags, PDF document information, a front matter whose date is
none, a JSONL corpus with metadata fields). Run once; the output is committed.

    python tests/data/make_docs.py
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "docs"
META = HERE / "meta"
CORPUS = HERE.parents[1] / "rootweaver_innovations" / "data" / "demo" / "corpus.jsonl"


def _text(by_id: dict[str, dict], pid: str) -> str:
    return " ".join(by_id[pid]["sentences"])


def _pdf(pages: list[str], info: dict[str, str]) -> bytes:
    """A minimal PDF 1.4 with one Helvetica text page per item of ``pages`` (ASCII text) and
    the document information ``info`` (``/Title`` and the like, ASCII values)."""
    def esc(s: str) -> str:
        s = unicodedata.normalize("NFKD", s.replace("\u2013", "-").replace("\u2014", "-"))
        s = s.encode("ascii", "ignore").decode()
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    objs = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            "<< " + " ".join(f"/{k} ({esc(v)})" for k, v in info.items()) + " >>"]
    kids = []
    for text in pages:
        words, lines, line = text.split(), [], ""
        for w in words:
            if len(line) + len(w) + 1 > 80:
                lines.append(line)
                line = w
            else:
                line = f"{line} {w}".strip()
        lines.append(line)
        stream = "BT /F1 11 Tf 14 TL 72 720 Td " + " ".join(f"({esc(x)}) Tj T*" for x in lines) + " ET"
        objs.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objs)} 0 R "
                    "/Resources << /Font << /F1 3 0 R >> >> >>")
        kids.append(f"{len(objs)} 0 R")
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def main() -> None:
    by_id = {o["id"]: o for o in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())}
    (OUT / "ebla").mkdir(parents=True, exist_ok=True)
    (OUT / "ebla" / "viziers.md").write_text(
        "# Viziers of Ebla\n\nThe viziers who served the kings of Ebla.\n\n"
        f"## Ibrium\n\n{_text(by_id, 'hp0105')}\n\n## Ibbi-Sipish\n\n{_text(by_id, 'hp0106')}\n", encoding="utf-8")
    (OUT / "ebla" / "kings.txt").write_text(f"{_text(by_id, 'hp0107')}\n", encoding="utf-8")
    (OUT / "mari.html").write_text(
        "<!doctype html>\n<html><head><title>Kings of Mari</title><style>h1 {color: red}</style></head>\n"
        "<body><script>var ignored = 'not text';</script>\n<h1>Kings of Mari</h1>\n"
        f"<h2>Ishtup-Ishar</h2>\n<p>{_text(by_id, 'hp0102')}</p>\n</body></html>\n", encoding="utf-8")
    (OUT / "songs.pdf").write_bytes(_pdf([_text(by_id, "hp0540"), _text(by_id, "hp0132")],
                                         {"Title": "Songs and singers"}))
    with gzip.GzipFile(OUT / "sopranos.md.gz", "wb", mtime=0) as fh:
        fh.write(f"# Antonietta Marini-Rainieri\n\n{_text(by_id, 'hp0265')}\n".encode())


def meta() -> None:
    """tests/data/meta: one document of each kind that says something about itself (its text
    written for these tests), and a JSONL corpus whose records carry metadata fields."""
    (META / "docs").mkdir(parents=True, exist_ok=True)
    (META / "docs" / "harbour.html").write_text(
        "<!doctype html>\n<html><head><title>The Velmora harbour - Coastal Courier</title>\n"
        '<meta charset="utf-8">\n<meta name="author" content="Ines Halvorsen">\n'
        '<meta property="og:site_name" content="Coastal Courier">\n'
        '<meta property="og:title" content="The Velmora harbour">\n'
        '<meta property="article:published_time" content="2023-10-06T21:31:00+02:00">\n'
        '<link rel="canonical" href="https://courier.example/velmora-harbour">\n</head>\n'
        '<body><nav><a href="/">Home</a> <a href="/ports">Ports</a> <a href="/weather">Weather</a></nav>\n'
        "<h1>The Velmora harbour</h1>\n<p>The harbour of Velmora was rebuilt in 1887 by the engineer "
        "Tomas Brandt. Its breakwater is four hundred metres long.</p>\n</body></html>\n", encoding="utf-8")
    (META / "docs" / "lighthouse.pdf").write_bytes(_pdf(
        ["The Velmora lighthouse was lit for the first time in 1891. Its keeper was Marta Olsen for forty years."],
        {"Title": "The Velmora lighthouse", "Author": "Piet Janssen", "CreationDate": "D:20240115093000+01'00'",
         "Producer": "make_docs.py"}))
    (META / "docs" / "ferry.md").write_text(
        "---\ntitle: The Velmora ferry\nsource: Harbour Gazette\npublished: the spring after the storm\n"
        "author: Ola Berg\n---\n\nThe ferry to Velmora crosses the sound in twenty minutes. It was named Sula "
        "after the keeper's daughter.\n", encoding="utf-8")
    records = [
        {"id": "n1", "title": "Velmora fish market", "text": "The fish market of Velmora opens at five in the morning.",
         "source": "Harbour Gazette", "published_at": "Fri, 06 Oct 2023 21:31:00 GMT", "author": "Ola Berg",
         "url": "https://gazette.example/fish-market", "section": "Local"},
        {"id": "n2", "title": "Velmora regatta", "text": "The Velmora regatta was won by the schooner Kestrel.",
         "source": "Coastal Courier", "date": "sometime in the autumn", "tags": ["sailing", "races"]},
        {"id": "n3", "title": "Velmora bridge", "text": "The bridge to Velmora has three arches of grey granite."},
    ]
    (META / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


if __name__ == "__main__":
    main()
    meta()
