"""The bundled dev sets load in all three layouts, gold titles among the row's own paragraphs."""

from __future__ import annotations

import pytest

from evals.qa_rows import load_qa_rows


@pytest.mark.parametrize("path, n_paras", [
    ("hotpotqa.jsonl.gz", 10),
    ("2wiki.jsonl.gz", 10),
    ("musique.jsonl.gz", 20),
])
def test_dataset_layouts_load(bundled_data, path, n_paras):
    rows = load_qa_rows(bundled_data / path, limit=5)
    assert len(rows) == 5
    for row in rows:
        assert row.question and row.answer and len(row.passages) == n_paras
        titles = {p.title for p in row.passages}
        assert row.gold_titles and set(row.gold_titles) <= titles
