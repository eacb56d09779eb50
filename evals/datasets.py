"""The data side shared by the evals: dataset files, the open pool, cached embeddings."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evals.qa_rows import QARow, load_qa_rows
from rootweaver_innovations.documents.corpus import Passage

__all__ = ["DATASETS", "DEFAULT_CACHE", "DEFAULT_DATA_ROOT", "OpenPool", "build_open_pool", "cached_embeddings", "is_yes_no",
           "load_rows"]

DATASETS = {
    "hotpotqa": "hotpotqa.jsonl.gz",
    "2wiki": "2wiki.jsonl.gz",
    "musique": "musique.jsonl.gz",
}
DEFAULT_DATA_ROOT = Path(__file__).resolve().parent / "data"  # bundled; see data/PROVENANCE.md
DEFAULT_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "embeddings"


@dataclass(frozen=True, slots=True)
class OpenPool:
    """All paragraphs of a question set as one corpus; ``gold[i]`` are row i's pooled ids."""

    passages: tuple[Passage, ...]
    questions: tuple[str, ...]
    gold: tuple[frozenset[str], ...]


def build_open_pool(rows: Sequence[QARow]) -> OpenPool:
    """Pool the rows' paragraphs, deduplicated by ``(title, text)``, ids ``p0, p1, ...``.

    A row's gold ids are the pooled ids of its own paragraphs whose title is a gold title
    (a gold title absent from the row's paragraphs is skipped; a row left with no gold id
    is counted and excluded by :func:`evals.frontload_eval.run_frontload_eval`).
    """
    ids: dict[tuple[str, str], str] = {}
    passages: list[Passage] = []
    gold: list[frozenset[str]] = []
    for row in rows:
        own: dict[str, str] = {}
        for p in row.passages:
            key = (p.title, p.text)
            if key not in ids:
                ids[key] = f"p{len(passages)}"
                passages.append(Passage(ids[key], p.title, p.sentences))
            own.setdefault(p.title, ids[key])
        gold.append(frozenset(own[t] for t in row.gold_titles if t in own))
    return OpenPool(tuple(passages), tuple(r.question for r in rows), tuple(gold))


def cached_embeddings(texts: Sequence[str], embedder, cache_dir: Path = DEFAULT_CACHE) -> np.ndarray:
    """``embedder.encode(texts)``, cached as ``.npy`` keyed by the model name and a hash of the texts."""
    digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:20]
    path = Path(cache_dir) / f"{getattr(embedder, 'name', 'embedder')}-{len(texts)}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    vecs = np.asarray(embedder.encode(list(texts)), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vecs)
    tmp.replace(path)
    return vecs


def is_yes_no(row: QARow) -> bool:
    """The row's gold answer is "yes" or "no" (not a span an answer-in-context check can find)."""
    return row.answer.strip().lower() in ("yes", "no")


def load_rows(dataset: str, limit: int | None, data_root: Path = DEFAULT_DATA_ROOT) -> list[QARow]:
    """Rows of one of :data:`DATASETS` (``ValueError`` for another name)."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {sorted(DATASETS)}")
    return load_qa_rows(Path(data_root) / DATASETS[dataset], limit)
