"""The packing factorial: which evidence survives into a token-budgeted reader context.

For each question, a retriever picks the top-5 paragraphs (from the question's own
paragraphs, the *distractor* setting, or from every paragraph of the data file, the
*open pool*); every sentence of those paragraphs becomes a candidate exactly as on the
product path (``"<title> | <sentence>"`` lines, BM25 relevance against the question, see
:func:`retrieved_candidates`); each policy packs the same candidates at each token budget
(Qwen2.5 tokenizer). Metrics per policy and budget: answer-in-context (over questions
whose answer is not yes/no), gold-doc reader coverage, all-gold-in-reader, gold-token
density, tokens used; paired bootstrap CIs for a chosen policy against every other.
Gold labels are used only to score packets, never to build or rank candidates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from rootweaver_innovations.compaction.line import CompactionRequest
from rootweaver_innovations.compaction.synth_context import SynthContext
from evals.qa_rows import QARow
from rootweaver_innovations.documents.corpus import Passage
from evals.diagnostics import (
    all_gold_at_k,
    all_gold_in_reader,
    answer_in_context,
    gold_doc_coverage,
    gold_token_density,
    paired_bootstrap_ci,
    recall_at_k,
)
from rootweaver_innovations.compaction.packing import Budget, Candidate, dense_similarity, default_token_counter, fact_candidates, pack
from rootweaver_innovations.records import Fact, facts_from_passages
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, ScoredPassage
from rootweaver_innovations.compaction.strategies import make_compactor

from .datasets import DEFAULT_CACHE, build_open_pool, cached_embeddings, is_yes_no
from .layouts import opaque
from .peers import PEER_POLICIES, register_peers
from .report import progress

__all__ = [
    "BUDGETS",
    "POLICY_ORDER",
    "RETRIEVERS",
    "EmbeddingCache",
    "make_retriever",
    "run_packing_eval",
    "retrieved_candidates",
]

BUDGETS = (96, 128, 160, 224)
RETRIEVERS = ("bm25", "dense", "hybrid")
POLICY_ORDER = ("naive", "focused", "mmr", "submodular", "line", "evidence")
TOP_K = 5
METRICS = ("aic", "coverage", "all_gold", "density", "tokens")


@dataclass(frozen=True, slots=True)
class _Question:
    row: QARow
    gold_ids: frozenset[str]
    retrieved: tuple[ScoredPassage, ...]


def retrieved_candidates(question: str, hits: Sequence[ScoredPassage]) -> tuple[list[Fact], list[Candidate]]:
    """The facts of ``hits`` (one hop, in retrieval order) and their packing candidates.

    Built exactly as the product's compactors build them
    (:func:`~rootweaver_innovations.compaction.packing.candidates.fact_candidates`), so a policy is
    measured here on the inputs it gets on the product path.
    """
    facts = facts_from_passages([h.passage for h in hits], sub_query=question, scores=[h.score for h in hits])
    return facts, fact_candidates(question, facts)


def _line_packet(facts: Sequence[Fact], cands: Sequence[Candidate], question: str, budget: Budget) -> tuple[list[Candidate], str]:
    """The ``line`` strategy on one hop of ``facts`` (its hop header included, as in the product)."""
    res = make_compactor("line")(CompactionRequest(question, SynthContext(tuple(facts), (question,)), (), budget))
    kept = set(res.kept_facts)
    return [c for c, f in zip(cands, facts) if f in kept], res.text  # facts have no blank sentence: 1:1


def make_retriever(name: str, passages: Sequence[Passage], embed: EmbeddingCache | None):
    """The named retriever (one of :data:`RETRIEVERS`) over ``passages``; dense ones need ``embed``.

    Raises ``ValueError`` for an unknown name.
    """
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; choose from {list(RETRIEVERS)}")
    if name == "bm25":
        return BM25Retriever(passages)
    dense = DenseRetriever(passages, embed.embedder, embed.passages(passages))
    return dense if name == "dense" else HybridRetriever([BM25Retriever(passages), dense])


class EmbeddingCache:
    """Paragraph and sentence embeddings, computed once per text set and cached on disk."""

    def __init__(self, cache_dir: Path):
        from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder

        self.embedder = MiniLMEmbedder()
        self.cache_dir = cache_dir
        self._table: dict[str, np.ndarray] = {}

    def preload(self, texts: Sequence[str]) -> None:
        new = [t for t in dict.fromkeys(texts) if t not in self._table]
        if new:
            self._table.update(zip(new, cached_embeddings(new, self.embedder, self.cache_dir)))

    def passages(self, passages: Sequence[Passage]) -> np.ndarray:
        texts = [f"{p.title} {p.text}" for p in passages]
        self.preload(texts)
        return np.stack([self._table[t] for t in texts])

    def sentences(self, texts: Sequence[str]) -> np.ndarray:
        self.preload(texts)
        return np.stack([self._table[t] for t in texts])


def _summarise(values: dict[str, list[float]]) -> dict[str, float]:
    return {m: float(np.mean(v)) if v else float("nan") for m, v in values.items()}


def run_packing_eval(
    rows: Sequence[QARow],
    *,
    retrievers: Sequence[str] = ("bm25",),
    policies: Sequence[str] = POLICY_ORDER,
    budgets: Sequence[int] = BUDGETS,
    open_pool: bool = False,
    opaque_titles: bool = False,
    similarity: str = "tfidf",
    reference: str = "submodular",
    n_resamples: int = 10_000,
    seed: int = 0,
    cache_dir: Path = DEFAULT_CACHE,
    show_progress: bool = True,
) -> dict:
    """Run the factorial on ``rows`` and return a JSON-ready report.

    ``opaque_titles`` replaces every passage title by an opaque id before retrieval (gold
    paragraphs are mapped first, so scoring is unchanged).

    ``similarity`` is ``"tfidf"`` or ``"dense"`` (MiniLM sentence embeddings) for the
    policies that use one. ``reference`` is the policy compared against every other with
    paired bootstrap CIs (``n_resamples``, ``seed``). Unknown names raise ``ValueError``.
    """
    for name in retrievers:
        if name not in RETRIEVERS:
            raise ValueError(f"unknown retriever {name!r}; choose from {list(RETRIEVERS)}")
    if similarity not in ("tfidf", "dense"):
        raise ValueError(f"similarity must be 'tfidf' or 'dense', got {similarity!r}")
    if reference not in policies:
        raise ValueError(f"reference policy {reference!r} is not among the policies {list(policies)}")
    peers = [p for p in policies if p in PEER_POLICIES]
    if peers:
        register_peers(peers)
    counter = default_token_counter()
    need_dense = similarity == "dense" or any(r != "bm25" for r in retrievers)
    embed = EmbeddingCache(cache_dir) if need_dense else None
    t0 = time.perf_counter()
    titled = opaque if opaque_titles else tuple
    report: dict = {"n_questions": len(rows), "open_pool": open_pool, "opaque_titles": opaque_titles,
                    "similarity": similarity,
                    "budgets": list(budgets), "policies": list(policies), "seed": seed,
                    "n_resamples": n_resamples, "reference": reference, "retrievers": {}}
    pool = build_open_pool(rows) if open_pool else None
    if embed is not None:  # one batch (and one cache file) for every text this run embeds
        all_passages = pool.passages if pool is not None else build_open_pool(rows).passages
        if any(r != "bm25" for r in retrievers):
            embed.passages(all_passages)
        if similarity == "dense":
            embed.sentences([s.strip() for p in all_passages for s in p.sentences if s.strip()])
    for rname in retrievers:
        if pool is not None:
            retriever = make_retriever(rname, titled(pool.passages), embed)
        per_q: list[_Question] = []
        rec, allg = [], []
        for i, row in enumerate(progress(rows, f"retrieve[{rname}]", show_progress)):
            if pool is None:
                own = build_open_pool([row])
                hits = make_retriever(rname, titled(own.passages), embed).search(row.question, TOP_K)
                gold = own.gold[0]
            else:
                hits = retriever.search(row.question, TOP_K)
                gold = pool.gold[i]
            ranked = [h.passage.id for h in hits]
            if gold:  # rows without a gold paragraph are counted, and scored on answer-in-context only
                rec.append(recall_at_k(ranked, gold, TOP_K))
                allg.append(float(all_gold_at_k(ranked, gold, TOP_K)))
            per_q.append(_Question(row, gold, tuple(hits)))
        cells: dict[str, dict[int, dict[str, list[float]]]] = {
            p: {b: {m: [] for m in METRICS} for b in budgets} for p in policies
        }
        ceiling: list[float] = []
        for q in progress(per_q, f"pack[{rname}]", show_progress):
            facts, cands = retrieved_candidates(q.row.question, q.retrieved)
            yes_no = is_yes_no(q.row)
            if not yes_no:
                ceiling.append(float(answer_in_context(q.row.answer, "\n".join(c.text for c in cands))))
            sim = dense_similarity(embed.sentences([c.text for c in cands])) if similarity == "dense" and cands else None
            for b in budgets:
                budget = Budget.tokens(b, counter)
                for policy in policies:
                    if not cands:
                        kept, text = [], ""
                    elif policy == "line":
                        kept, text = _line_packet(facts, cands, q.row.question, budget)
                    else:
                        res = pack(policy, cands, q.row.question, budget, similarity=sim)
                        kept, text = [p.candidate for p in res.packet], res.text
                    cell = cells[policy][b]
                    docs = {c.doc_id for c in kept}
                    if not yes_no:
                        cell["aic"].append(float(answer_in_context(q.row.answer, text)))
                    if q.gold_ids:
                        cell["coverage"].append(gold_doc_coverage(docs, q.gold_ids))
                        cell["all_gold"].append(float(all_gold_in_reader(docs, q.gold_ids)))
                        cell["density"].append(gold_token_density([(c.doc_id, c.text) for c in kept], q.gold_ids))
                    cell["tokens"].append(float(counter.count(text)) if text else 0.0)
        table = {p: {str(b): _summarise(cells[p][b]) for b in budgets} for p in policies}
        cis = {
            p: {str(b): {m: asdict(paired_bootstrap_ci(cells[reference][b][m], cells[p][b][m],
                                                       n_resamples=n_resamples, seed=seed))
                         for m in ("aic", "all_gold")}
                for b in budgets}
            for p in policies if p != reference
        }
        report["retrievers"][rname] = {
            "recall@5": float(np.mean(rec)), "all_gold@5": float(np.mean(allg)),
            "aic_ceiling": float(np.mean(ceiling)) if ceiling else float("nan"),
            "n_aic": len(ceiling), "n_without_gold": len(rows) - len(rec), "table": table, "ci_vs_reference": cis,
        }
    report["seconds"] = round(time.perf_counter() - t0, 1)
    return report
