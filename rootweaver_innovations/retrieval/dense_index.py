"""Passage embeddings saved in an index: its ``dense`` component.

``dense/embeddings.npy`` holds one float16 row per passage (index order), the L2-normalised
embedding of ``title text`` (:func:`~rootweaver_innovations.retrieval.retrievers.passage_text`)
by the model the component names; with all-MiniLM-L6-v2 (384 dimensions) that is 768 bytes
per passage. :func:`write_dense` computes it after the BM25 pass of ``index build`` (in
batches, reporting progress); opening an index maps it read-only and checks its shape and
dtype; :func:`dense_rows` computes rows for ``index update``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rootweaver_innovations.documents.corpus import Passage, passage_from_object
from rootweaver_innovations.retrieval.embeddings import Embedder, load_embedder
from rootweaver_innovations.retrieval.retrievers import passage_text

__all__ = ["DENSE_DTYPE", "DENSE_FILES", "dense_problem", "dense_rows", "write_dense"]

DENSE_FILES = ("dense/embeddings.npy",)
DENSE_DTYPE = np.dtype(np.float16)
_BATCH = 256  # passages embedded per call (progress is reported after each)


def _embed(passages: Sequence[Passage], embedder: Embedder) -> np.ndarray:
    return embedder.encode([passage_text(p) for p in passages]).astype(DENSE_DTYPE)


def write_dense(root: Path, n: int, embedder: Embedder,
                progress: Callable[[int, float], None] | None = None) -> dict[str, Any]:
    """Embed the ``n`` passages of ``root/passages/records.jsonl`` into ``root/dense/embeddings.npy``
    (``progress(done, seconds)`` after every batch); the manifest's ``dense`` component."""
    (root / "dense").mkdir(exist_ok=True)
    records = root / "passages" / "records.jsonl"
    start, done = time.perf_counter(), 0
    out = None
    for batch in _batches(records):
        rows = _embed(batch, embedder)
        if out is None:
            out = np.lib.format.open_memmap(root / DENSE_FILES[0], "w+", DENSE_DTYPE, (n, rows.shape[1]))
        out[done:done + len(rows)] = rows
        done += len(rows)
        if progress is not None:
            progress(done, time.perf_counter() - start)
    if out is None or done != n:
        raise ValueError(f"{records}: {done} passages embedded, the index has {n}")
    out.flush()
    dim = int(out.shape[1])
    del out
    return {"files": list(DENSE_FILES), "model": embedder.name, "dim": dim, "dtype": DENSE_DTYPE.name}


def _batches(records: Path) -> Iterator[list[Passage]]:
    batch: list[Passage] = []
    with open(records, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            batch.append(passage_from_object(json.loads(line), records, lineno))
            if len(batch) == _BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def dense_rows(passages: Sequence[Passage], component: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The ``dense`` rows of ``passages`` by the model ``component`` names (``index update``);
    ``ValueError`` naming the extra when it is not installed."""
    try:
        embedder = load_embedder(component["model"])
    except ImportError:
        raise ValueError(f"the index holds {component['model']} embeddings, and updating them needs the dense "
                         "extra: pip install 'rootweaver[dense]'") from None
    return {DENSE_FILES[0]: _embed(passages, embedder)}


def dense_problem(component: Any) -> str | None:
    """What is wrong with a manifest's ``dense`` entry, else ``None``."""
    if not (isinstance(component, dict) and isinstance(component.get("model"), str)
            and isinstance(component.get("dim"), int) and component["dim"] > 0
            and component.get("dtype") == DENSE_DTYPE.name):
        return f"component 'dense' needs a model name, an integer dim and dtype {DENSE_DTYPE.name!r}"
    return None
