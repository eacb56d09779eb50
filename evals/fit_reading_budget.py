"""Write ``rootweaver_innovations/data/reading_budget.json``: the mean reader (Qwen2.5) tokens
of a paragraph in the open pool the hop policy's passage budget is read against (HotpotQA,
even-indexed rows of the first 400, the tuning half), so that on a corpus of document chunks
the budget of N passages reads as much as N paragraphs. Label-free: only paragraph texts.

    python -m evals.fit_reading_budget
"""

from __future__ import annotations

import json
from datetime import date

from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.documents.folders import READING_FILE

from .datasets import DATASETS, build_open_pool, load_rows

DATASET, LIMIT = "hotpotqa", 400


def main() -> int:
    pool = build_open_pool(load_rows(DATASET, LIMIT)[0::2])
    count = default_token_counter().count
    mean = sum(count(p.text) for p in pool.passages) / len(pool.passages)
    READING_FILE.write_text(json.dumps({
        "paragraph_tokens": round(mean, 1),
        "provenance": {"data": f"evals/data/{DATASETS[DATASET]}", "rows": f"even-indexed rows of the first {LIMIT}",
                       "what": "mean Qwen2.5 tokens of a pooled paragraph's text (titles excluded)",
                       "paragraphs": len(pool.passages), "date": date.today().isoformat(),
                       "command": "python -m evals.fit_reading_budget"},
    }, indent=1) + "\n", encoding="utf-8")
    print(f"{READING_FILE}: paragraph_tokens {mean:.1f} over {len(pool.passages)} paragraphs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
