"""LangChain adapters (extra ``langchain``: langchain-core only), converting at the edge.

- :class:`LangChainHopRetriever`: any langchain-core ``BaseRetriever`` as MultiHopRAG's
  hop retriever (our ``Retriever`` protocol).
- :class:`LineCompactorCompressor`: the line compactor as a langchain-core
  ``BaseDocumentCompressor``, for a retrieval chain.
- :class:`MultiHopRetriever`: the whole MultiHopRAG as a langchain-core ``BaseRetriever``
  returning the synthesis context's facts as ``Document`` objects.

``rootweaver_innovations`` never imports LangChain; only this module does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, field_validator
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("rootweaver_capabilities.adapters.langchain needs the 'langchain' extra: "
                      "pip install 'rootweaver[langchain]'") from exc

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.line import CompactionRequest, LineCompactor
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.documents.corpus import Passage, split_sentences
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.records import facts_from_passages
from rootweaver_innovations.text import reasoning_key_terms
from rootweaver_innovations.retrieval.retrievers import ScoredPassage

__all__ = ["LangChainHopRetriever", "LineCompactorCompressor", "MultiHopRetriever", "document_to_passage"]


def document_to_passage(doc: Document) -> Passage:
    """A ``Passage`` for ``doc``.

    id: ``doc.id``, else ``metadata["id"]``, else a content hash (stable, so the loop's
    seen-set works); title: ``metadata["title"]``, else ``metadata["source"]``, else
    ``""``; sentences: ``metadata["sentences"]`` when a list, else the content split into
    sentences (the whole content as one sentence if it does not split).
    """
    meta = doc.metadata or {}
    pid = doc.id or meta.get("id") or "lc:" + hashlib.sha1(doc.page_content.encode()).hexdigest()[:16]
    title = str(meta.get("title") or meta.get("source") or "")
    if isinstance(meta.get("sentences"), list) and meta["sentences"]:
        sentences = tuple(str(s) for s in meta["sentences"])
    else:
        sentences = split_sentences(doc.page_content) or (doc.page_content,)
    return Passage(str(pid), title, sentences)


class LangChainHopRetriever:
    """Our ``Retriever`` protocol over a langchain-core ``BaseRetriever``.

    ``search(query, k)`` invokes the LangChain retriever and keeps the first ``k``
    documents. ``k_kwarg`` names the keyword the retriever accepts for the number of
    results (e.g. ``"k"``); when ``None`` the retriever's own setting decides how many
    come back, and the loop may then see fewer fresh passages per hop. Scores: a
    ``metadata["score"]`` when present, else ``1 / (rank + 1)``.
    """

    def __init__(self, retriever: BaseRetriever, k_kwarg: str | None = None):
        self.retriever = retriever
        self.k_kwarg = k_kwarg

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        kwargs = {self.k_kwarg: k} if self.k_kwarg else {}
        docs = self.retriever.invoke(query, **kwargs)[:k]
        out = []
        for rank, doc in enumerate(docs):
            score = (doc.metadata or {}).get("score")
            out.append(ScoredPassage(document_to_passage(doc), float(score) if score is not None else 1 / (rank + 1),
                                     rank))
        return out


class LineCompactorCompressor(BaseDocumentCompressor):
    """The line compactor as a document compressor: keep the best sentences in ``max_chars``.

    Each document's sentences become facts (lines ``"<title> | <sentence>"``, no hop
    headers); the query's key terms play the open sub-query terms (band 0); the
    :class:`~rootweaver_innovations.compaction.line.LineCompactor` keeps facts within ``max_chars``
    (newlines included). Returned: the documents that kept at least
    one sentence, in input order, with ``page_content`` = their kept sentences joined by
    spaces and the input metadata plus ``kept_sentences`` (indices) and
    ``dropped_sentences`` (count). The kept lines fit ``max_chars``, so the returned
    contents together are shorter than that too.
    """

    max_chars: int = Field(default=2000, ge=1)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        facts = facts_from_passages([document_to_passage(doc) for doc in documents])  # rank: the document's index
        if not facts:
            return []
        request = CompactionRequest(query, SynthContext(tuple(facts), (), "facts"), tuple(reasoning_key_terms(query)),
                                    Budget(self.max_chars, "chars"))
        kept: dict[int, list[tuple[int, str]]] = {}
        for fact in LineCompactor()(request).kept_facts:
            kept.setdefault(fact.rank, []).append((fact.sentence_index, fact.body))
        out = []
        for d, doc in enumerate(documents):
            if d not in kept:
                continue
            picked = sorted(kept[d])
            total = sum(1 for f in facts if f.rank == d)
            out.append(Document(
                page_content=" ".join(sentence for _, sentence in picked),
                metadata={**(doc.metadata or {}), "kept_sentences": [s for s, _ in picked],
                          "dropped_sentences": total - len(picked)},
                id=doc.id,
            ))
        return out


class MultiHopRetriever(BaseRetriever):
    """MultiHopRAG as a langchain-core retriever.

    ``invoke(question)`` runs ``rag.multi_hop_search`` and returns the facts of the
    synthesis context (compacted when the RAG compacts), in context order, at most ``k``
    (``k`` may also be passed to ``invoke``). Each ``Document`` holds one sentence;
    metadata: ``id`` and ``source`` (passage id), ``title``, ``sentence_index``, ``hop``
    (0-based) and ``sub_query`` (the hop's sub-query).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rag: Any  # a MultiHopRAG (typed loosely: pydantic cannot build a schema for its Protocol fields)
    k: int = Field(default=4, ge=1)

    @field_validator("rag")
    @classmethod
    def _is_multi_hop(cls, value: Any) -> MultiHopRAG:
        if not callable(getattr(value, "multi_hop_search", None)):
            raise ValueError(f"rag must be a MultiHopRAG, got {type(value).__name__}")
        return value

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        limit = self.k if k is None else k
        if limit < 1:
            raise ValueError(f"k must be >= 1, got {limit}")
        result = self.rag.multi_hop_search(query)
        return [
            Document(
                page_content=fact.sentence,
                metadata={"id": fact.passage_id, "source": fact.passage_id, "title": fact.title,
                          "sentence_index": fact.sentence_index, "hop": fact.hop, "sub_query": fact.sub_query},
            )
            for fact in result.synth_facts[:limit]
        ]
