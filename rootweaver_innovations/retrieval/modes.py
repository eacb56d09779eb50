"""What every hop searches with: ``retriever.mode``.

- ``bm25``: the lexical retriever alone;
- ``dense``: cosine of passage embeddings (all-MiniLM-L6-v2, extra ``dense``);
- ``hybrid``: both, fused by reciprocal rank over the rows of one passage store
  (:class:`~rootweaver_innovations.retrieval.retrievers.HybridRetriever`);
- ``auto`` (the default): ``hybrid`` over passages with saved embeddings (an index built with
  ``--dense``), else ``bm25``, with no note: the embeddings a user chose to store are used, and
  nothing is embedded at start.

The dense and hybrid retrievers carry the lexical one's title index, facets and conventions,
so the loop's title links and named sources keep working. Without the extra, or over an index
built without embeddings, :func:`with_mode` falls back to BM25 and says so in one line.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rootweaver_innovations.defaults import AUTO_RETRIEVER, RETRIEVER_CHOICES, RETRIEVER_MODES
from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder, load_embedder
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, Retriever

__all__ = ["MODEL", "RETRIEVER_CHOICES", "RETRIEVER_MODES", "auto_mode", "with_mode"]

MODEL = MiniLMEmbedder.name  # the embedding model of an in-memory corpus and of a new index


def auto_mode(has_embeddings: bool) -> str:
    """The mode ``auto`` searches with: ``hybrid`` over passages with saved embeddings, else ``bm25``."""
    return "hybrid" if has_embeddings else "bm25"


def with_mode(mode: str, lexical: BM25Retriever, embeddings: np.ndarray | None = None, *, model: str = MODEL,
              embed: bool = True, on_note: Callable[[str], None] = print) -> Retriever:
    """The retriever of ``mode`` over ``lexical``'s passages. ``embeddings`` are the passages'
    saved rows (an index's ``dense`` component, embedded by ``model``); when ``None`` they are computed here if
    ``embed`` (an in-memory corpus), else (an index without them) ``lexical`` is returned after
    one line to ``on_note``, as it is when the ``dense`` extra is missing. ``auto`` is ``hybrid``
    when ``embeddings`` are given, else ``bm25``. ``ValueError`` for an unknown mode."""
    if mode not in RETRIEVER_CHOICES:
        raise ValueError(f"unknown retriever mode {mode!r}; choose one of {', '.join(RETRIEVER_CHOICES)}")
    if mode == AUTO_RETRIEVER:
        mode = auto_mode(embeddings is not None)
    if mode == "bm25":
        return lexical
    if embeddings is None and not embed:
        on_note(f"retriever.mode {mode}: this index has no embeddings, searching with BM25 alone "
                "(rebuild it with `rootweaver index build --dense`)")
        return lexical
    try:
        embedder = load_embedder(model)
    except ImportError:
        on_note(f"retriever.mode {mode}: the dense extra is not installed, searching with BM25 alone "
                "(pip install 'rootweaver[dense]')")
        return lexical
    dense = DenseRetriever(lexical.passages, embedder, embeddings, title_index=lexical.title_index,
                           facets=lexical.facets, conventions=lexical.conventions)
    return dense if mode == "dense" else HybridRetriever([lexical, dense])
