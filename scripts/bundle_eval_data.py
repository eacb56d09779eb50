#!/usr/bin/env python3
"""Write the evals' bundled data sets (``evals/data/*.jsonl.gz``) from the merged source files.

Keeps only the fields :func:`evals.qa_rows.load_qa_rows` reads; no text is
edited. Run once by a maintainer with the source folder (``--source``, the layout described in
``evals/data/PROVENANCE.md``); the repo ships the output, so users and CI never need the source.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "evals" / "data"
SOURCES = {
    "hotpotqa": ("hotpotqa/hotpot_dev_distractor_merged.jsonl",
                 ("_id", "type", "question", "answer", "supporting_facts", "supporting_titles", "context")),
    "2wiki": ("2wikimultihopqa/2wiki_merged.jsonl",
              ("_id", "type", "question", "answer", "supporting_facts", "supporting_titles", "context", "evidences")),
    "musique": ("musique/musique_merged.jsonl",
                ("id", "question", "answer", "answer_aliases", "answerable", "split", "paragraphs")),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True, help="folder holding the merged JSONL files")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (rel, keep) in SOURCES.items():
        rows = [json.loads(line) for line in (args.source / rel).read_text(encoding="utf-8").splitlines() if line.strip()]
        path = OUT / f"{name}.jsonl.gz"
        with gzip.GzipFile(path, "wb", mtime=0) as fh:  # mtime 0: the same input gives the same bytes
            for row in rows:
                fh.write((json.dumps({k: row[k] for k in keep if k in row}, ensure_ascii=False) + "\n").encode())
        print(f"{path}: {len(rows)} rows, {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
