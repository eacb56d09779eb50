"""Write the inputs of the `rootweaver batch` and sphinxql measurements (docs/cluster.md).

Usage: python benchmarks/batch_data.py --dataset hotpotqa|2wiki --out DIR [--rows odd] [--limit N]

Writes into DIR: ``corpus.jsonl`` (the open pool of every row of the dataset: all their
paragraphs, deduplicated, ids ``p0, p1, ...``), ``questions.jsonl`` (``{id, question}`` of the
chosen rows, first ``--limit`` of them), ``gold.jsonl`` (``{id, gold: [passage ids]}``, the
pooled ids of each question's gold paragraphs, for all-gold) and ``config.yaml`` (the shipped
defaults with ``retriever.corpus`` / ``retriever.index`` pointing at DIR and reader none).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evals.datasets import build_open_pool, load_rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=("hotpotqa", "2wiki", "musique"), default="hotpotqa")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rows", choices=("all", "even", "odd"), default="odd")
    p.add_argument("--limit", type=int)
    args = p.parse_args()
    rows = load_rows(args.dataset, None)
    pool = build_open_pool(rows)
    picked = {"all": range(len(rows)), "even": range(0, len(rows), 2), "odd": range(1, len(rows), 2)}[args.rows]
    picked = list(picked)[: args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for ps in pool.passages:
            fh.write(json.dumps({"id": ps.id, "title": ps.title, "sentences": list(ps.sentences)},
                                ensure_ascii=False) + "\n")
    with (args.out / "questions.jsonl").open("w", encoding="utf-8") as q, \
            (args.out / "gold.jsonl").open("w", encoding="utf-8") as g:
        for i in picked:
            q.write(json.dumps({"id": rows[i].id, "question": rows[i].question}, ensure_ascii=False) + "\n")
            g.write(json.dumps({"id": rows[i].id, "gold": sorted(pool.gold[i])}) + "\n")
    (args.out / "config.yaml").write_text(
        f"retriever:\n  corpus: {(args.out / 'corpus.jsonl').resolve()}\n  index: {(args.out / 'index').resolve()}\n"
        "llm:\n  provider: none\n", encoding="utf-8")
    print(f"{args.out}: {len(pool.passages)} passages, {len(picked)} questions ({args.rows} rows of {args.dataset})")


if __name__ == "__main__":
    main()
