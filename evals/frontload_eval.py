"""PACE (a): evidence frontloading, offline complete-evidence recall after the second stage.

Every paragraph of every question of a dataset is pooled into one open corpus
(deduplicated by ``(title, text)``), BM25 retrieves the top 100, the pool is ordered
(first-stage order, PACE frontloading, or MMR), the first ``D`` are re-scored by the
second stage and the top 5 kept. Metric: complete-evidence recall@5, the share of questions
whose gold paragraphs are *all* in the final top 5. :func:`evals.pace_render.frontload_markdown`
renders the report; ``rootweaver eval frontload`` (:func:`evals.pace.main`) runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evals.diagnostics import paired_bootstrap_ci

from .datasets import DEFAULT_CACHE, DEFAULT_DATA_ROOT, build_open_pool, cached_embeddings, load_rows

__all__ = ["run_frontload_eval"]


class _KnownVectors:
    """An embedder that answers precomputed texts from a table and defers the rest."""

    def __init__(self, embedder, texts: Sequence[str], vectors: np.ndarray):
        self.name = getattr(embedder, "name", "embedder")
        self._inner = embedder
        self._known = {t: v for t, v in zip(texts, vectors, strict=True)}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if texts and all(t in self._known for t in texts):
            return np.stack([self._known[t] for t in texts])
        return self._inner.encode(texts)


def run_frontload_eval(
    dataset: str = "hotpotqa",
    limit: int | None = None,
    *,
    depths: Sequence[int] = (20, 50, 100),
    k: int = 5,
    pool_size: int = 100,
    pool_limit: int | None = None,
    data_root: Path = DEFAULT_DATA_ROOT,
    cache_dir: Path = DEFAULT_CACHE,
    embedder=None,
    seed: int = 13,
    frontload_options: dict | None = None,
) -> dict:
    """Complete-evidence recall@k after the bi-encoder second stage, per ordering and depth.

    The open pool holds every paragraph of the first ``pool_limit`` rows (default: all
    rows of the dataset); the first ``limit`` rows are the questions evaluated. Rows with
    no gold paragraph in the pool are counted and left out. ``subset="gold_in_pool"``
    restricts to questions whose gold paragraphs are all in the BM25 top ``pool_size``
    (the source paper's filter). Returns a JSON-ready report dict.
    """
    import time

    from evals.rerank import (
        ORDERINGS,
        BiEncoderScorer,
        BM25TermVectors,
        TwoStageRetriever,
        passage_text,
    )
    from rootweaver_innovations.retrieval.retrievers import BM25Retriever

    if k < 1 or pool_size < 1 or not depths or min(depths) < 1:
        raise ValueError(f"k, pool_size and every depth must be >= 1, got k={k}, pool_size={pool_size}, depths={depths}")
    t0 = time.perf_counter()
    pool_rows = load_rows(dataset, pool_limit, data_root)
    n_eval = len(pool_rows) if limit is None else min(limit, len(pool_rows))
    pool = build_open_pool(pool_rows)
    if embedder is None:
        from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    p_vecs = cached_embeddings([passage_text(p) for p in pool.passages], embedder, cache_dir)
    questions = list(pool.questions[:n_eval])
    q_vecs = cached_embeddings(questions, embedder, cache_dir)
    t_embed = time.perf_counter() - t0
    bm25 = BM25Retriever(pool.passages)
    vectors = BM25TermVectors(pool.passages)
    scorer = BiEncoderScorer(_KnownVectors(embedder, questions, q_vecs), [p.id for p in pool.passages], p_vecs)
    options = dict(frontload_options or {})
    retrievers = {
        o: TwoStageRetriever(bm25, scorer, pool_size=pool_size, ordering=o, term_vectors=vectors, **(options if o == "frontload" else {}))
        for o in ORDERINGS
    }
    per_question = []
    no_gold = 0
    for qi in range(n_eval):
        gold = pool.gold[qi]
        if not gold:
            no_gold += 1
            continue
        query = questions[qi]
        cands = retrievers["first_stage"].candidates(query)
        cand_ids = [c.passage.id for c in cands]
        row = {"index": qi, "n_gold": len(gold), "gold_in_pool": gold <= set(cand_ids), "prefix": {}, "complete": {}}
        for name, retriever in retrievers.items():
            order = retriever.order(query, cands)
            row["prefix"][name] = {d: gold <= {cand_ids[i] for i in order[:d]} for d in depths}
            row["complete"][name] = {
                d: gold <= {s.passage.id for s in retriever.rerank(query, cands, order, d, k).top} for d in depths
            }
        per_question.append(row)
    t_total = time.perf_counter() - t0

    def table(rows: list[dict], key: str) -> dict[str, dict[str, float]]:
        return {
            o: {str(d): (float(np.mean([r[key][o][d] for r in rows])) if rows else float("nan")) for d in depths}
            for o in ORDERINGS
        }

    subsets = {"all": per_question, "gold_in_pool": [r for r in per_question if r["gold_in_pool"]]}
    report: dict = {
        "eval": "frontload",
        "dataset": dataset,
        "metric": f"complete-evidence recall@{k} (all gold paragraphs in the final top {k}) after the second stage",
        "second_stage": f"BiEncoderScorer({getattr(embedder, 'name', 'embedder')})",
        "first_stage": f"BM25 top {pool_size} over the open pool",
        "pool": {"rows": len(pool_rows), "paragraphs": len(pool.passages)},
        "questions": n_eval,
        "questions_without_gold_in_pool": no_gold,
        "depths": list(depths),
        "k": k,
        "frontload_options": {
            key: getattr(retrievers["frontload"], key) for key in ("n_seeds", "anchor_weight", "seed_expansion", "dim_background")
        },
        "seed": seed,
        "seconds": {"embed_or_cache": round(t_embed, 1), "total": round(t_total, 1)},
        "subsets": {},
    }
    lo, hi = (20 if 20 in depths else min(depths)), max(depths)
    for name, rows in subsets.items():
        entry = {"n": len(rows), "recall": table(rows, "complete"), "all_gold_in_first_D": table(rows, "prefix")}
        entry["paired"] = {}
        for (oa, da), (ob, db) in (((("frontload", lo), ("first_stage", hi))), ((("frontload", lo), ("first_stage", lo)))):
            if rows:
                a = np.array([r["complete"][oa][da] for r in rows], dtype=float)
                b = np.array([r["complete"][ob][db] for r in rows], dtype=float)
                ci = paired_bootstrap_ci(a, b, n_resamples=2000, seed=seed)
                entry["paired"][f"{oa}@{da} - {ob}@{db}"] = {"diff": ci.mean_diff, "ci95": [ci.low, ci.high]}
        report["subsets"][name] = entry
    return report
