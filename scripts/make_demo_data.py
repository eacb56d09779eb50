"""Build the bundled demo corpus and golden questions from the HotpotQA dev rows.

Usage: python scripts/make_demo_data.py [--src evals/data/hotpotqa.jsonl.gz]

Takes, in file order, the first 45 bridge and the first 15 comparison questions whose
answer string occurs in their own paragraphs (yes/no answers count as occurring), and
writes every paragraph of those rows (deduplicated by title and text) as the corpus.
Deterministic: no sampling, no seed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evals.qa_rows import load_qa_rows

OUT = Path(__file__).resolve().parents[1] / "rootweaver_innovations" / "data" / "demo"
DEFAULT_SRC = Path(__file__).resolve().parents[1] / "evals" / "data" / "hotpotqa.jsonl.gz"  # the bundled copy
QUOTA = {"bridge": 45, "comparison": 15}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC)
    args = ap.parse_args()
    taken = {k: 0 for k in QUOTA}
    questions, corpus, ids = [], [], {}
    for row in load_qa_rows(args.src):
        if taken.get(row.qtype, 10**9) >= QUOTA.get(row.qtype, 0):
            continue
        text = " ".join(p.text for p in row.passages)
        if row.answer.lower() not in ("yes", "no") and row.answer not in text:
            continue
        taken[row.qtype] += 1
        for p in row.passages:
            key = (p.title, p.sentences)
            if key not in ids:
                ids[key] = f"hp{len(ids):04d}"
                corpus.append({"id": ids[key], "title": p.title, "sentences": list(p.sentences)})
        questions.append({
            "id": row.id, "question": row.question, "answer": row.answer, "type": row.qtype,
            "supporting_titles": list(row.gold_titles),
            "supporting_facts": [list(f) for f in row.gold_sentences],
        })
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(c, ensure_ascii=False) + "\n" for c in corpus)
    with (OUT / "golden_questions.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
    print(f"wrote {len(questions)} questions and {len(corpus)} passages to {OUT}")


if __name__ == "__main__":
    main()
