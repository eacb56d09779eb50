"""How often an untitled paragraph's lead subject names its page: the title rule of a user's files.

For each paragraph of a set's open pool, :func:`~rootweaver_innovations.text.lead_subject` of its
first sentence (split as documents are) is compared with the paragraph's real title by their
normalised keys (:func:`~rootweaver_innovations.retrieval.titles.title_keys`). Prints the share that
match and the share with no subject. Run::

    python -m evals.lead_subjects --dataset hotpotqa --limit 400 --rows even
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from rootweaver_innovations.documents.corpus import split_sentences
from rootweaver_innovations.conventions.wikipedia.subjects import lead_subject
from rootweaver_innovations.retrieval.titles import title_keys

from .datasets import DATASETS, build_open_pool, load_rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=sorted(DATASETS), default="hotpotqa")
    p.add_argument("--limit", type=int, default=400, help="first N rows, before --rows")
    p.add_argument("--rows", choices=("all", "even", "odd"), default="even")
    args = p.parse_args(argv)
    rows = load_rows(args.dataset, args.limit)
    rows = rows if args.rows == "all" else rows[args.rows == "odd"::2]
    passages = build_open_pool(rows).passages
    subjects = [lead_subject(split_sentences(p.text, abbreviations=True)[0]) for p in passages]
    match = sum(s is not None and bool(set(title_keys(s)) & set(title_keys(p.title)))
                for s, p in zip(subjects, passages))
    print(json.dumps({"dataset": args.dataset, "rows": args.rows, "paragraphs": len(passages),
                      "names_its_page": round(match / len(passages), 3),
                      "no_subject": round(sum(s is None for s in subjects) / len(passages), 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
