"""Retrieval on a folder of saved news articles (MultiHop-RAG's development half) through the
product path: `rootweaver index build FOLDER`, then `rootweaver ask --index IDX --json
--reader none` per question.

The bundled articles (``evals/data/multihoprag``: Markdown with YAML front matter, one file
each) are written to a temporary folder and indexed by the product's own command; every
question is asked with ``--max-passages N``. A question is **all-evidence** when each of its
gold evidence sentences shares a word 8-gram (its whole text when shorter) with a read chunk
of one of its evidence files. Reported per question type and overall: all-evidence, the share
of gold sentences found, the mean number of articles (files) and chunks read and the reader
tokens they hold, and the same for single-shot BM25 over the index given as many reader
tokens as the loop read for that question (top hits in rank order until the loop's tokens
are reached), with the paired-bootstrap CI of loop minus BM25. Null queries have no evidence:
they count in what is read, not in all-evidence. Gold labels are read only to score, after
the loop has read. Run::

    python -m evals.news --conventions wikipedia --max-passages 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rootweaver_capabilities.cli.main import main as rootweaver
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.defaults import BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS
from rootweaver_innovations.documents.corpus import read_jsonl
from rootweaver_innovations.retrieval.index import open_index

from .diagnostics import paired_bootstrap_ci
from .documents_folder import _ask
from .layouts import grams

__all__ = ["DATA", "TYPES", "NewsQuestion", "found_evidence", "load_questions", "main", "run", "within_tokens", "write_articles"]

DATA = Path(__file__).resolve().parent / "data" / "multihoprag"
TYPES = ("inference_query", "comparison_query", "temporal_query", "null_query")


@dataclass(frozen=True, slots=True)
class NewsQuestion:
    """One question of ``dev.jsonl.gz``; ``evidence_facts`` are verbatim sentences of the
    articles ``evidence_files`` (both empty for a null query)."""

    id: str
    question: str
    type: str
    answer: str
    evidence_facts: tuple[str, ...]
    evidence_files: tuple[str, ...]


def load_questions(limit: int | None = None, path: Path = DATA / "dev.jsonl.gz") -> list[NewsQuestion]:
    """The first ``limit`` questions (all when ``None``) in file order; ``CorpusError`` naming
    the file and line for a malformed one."""
    out = []
    for _, obj in read_jsonl(path):
        out.append(NewsQuestion(str(obj["id"]), obj["question"], obj["type"], obj["answer"],
                                tuple(obj["evidence_facts"]), tuple(obj["evidence_files"])))
        if limit is not None and len(out) >= limit:
            break
    return out


def write_articles(folder: Path, path: Path = DATA / "articles.jsonl.gz") -> int:
    """Write each bundled article as ``folder/<file>`` (UTF-8, as it was saved); how many."""
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for n, obj in enumerate((obj for _, obj in read_jsonl(path)), 1):
        (folder / obj["file"]).write_text(obj["text"], encoding="utf-8")
    return n


def found_evidence(facts: Sequence[str], files: Sequence[str], ids: Sequence[str], chunks: dict[str, dict]) -> list[bool]:
    """For each gold sentence, whether a read chunk of one of ``files`` shares a word
    ``min(8, its length)``-gram with it."""
    read = [chunks[i] for i in ids if chunks[i]["file"] in files]
    out = []
    for fact in facts:
        n = min(8, len(fact.split()))
        out.append(any(grams(fact, n) & grams(c["text"], n) for c in read))
    return out


def within_tokens(retriever, question: str, tokens: int, size: dict[str, int]) -> list[str]:
    """Single-shot BM25's hits for ``question`` in rank order, until they hold ``tokens``
    reader tokens (the hit that reaches it included)."""
    top, used = [], 0
    for hit in retriever.search(question, len(size)) if tokens else ():
        if used >= tokens:
            break
        top.append(hit.passage.id)
        used += size[hit.passage.id]
    return top


def _cell(rows: list[dict], n_resamples: int, seed: int) -> dict:
    """The summary of some questions' rows: sizes read, and all-evidence where there is evidence."""
    cell = {"questions": len(rows),
            "mean_articles_read": round(float(np.mean([r["articles"] for r in rows])), 2),
            "mean_chunks_read": round(float(np.mean([r["chunks"] for r in rows])), 2),
            "mean_tokens_read": round(float(np.mean([r["tokens"] for r in rows])), 1)}
    scored = [r for r in rows if r["facts"]]
    if scored:
        loop = [float(all(r["loop"])) for r in scored]
        single = [float(all(r["single"])) for r in scored]
        ci = paired_bootstrap_ci(loop, single, n_resamples=n_resamples, seed=seed)
        cell.update({
            "scored": len(scored),
            "all_evidence": round(float(np.mean(loop)), 3),
            "single_bm25_all_evidence": round(float(np.mean(single)), 3),
            "loop_minus_single": [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)],
            "evidence_found": round(float(np.mean([np.mean(r["loop"]) for r in scored])), 3),
            "single_bm25_evidence_found": round(float(np.mean([np.mean(r["single"]) for r in scored])), 3),
            "single_bm25_mean_articles": round(float(np.mean([r["single_articles"] for r in scored])), 2),
        })
    return cell


def run(questions: Sequence[NewsQuestion], *, max_passages: int = 10, conventions: str = DEFAULT_CONVENTIONS,
        n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Index the bundled articles and ask ``questions``; the report (see the module docstring)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder, index = Path(tmp) / "articles", Path(tmp) / "articles.idx"
        articles = write_articles(folder)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = rootweaver(["index", "build", str(folder), "--out", str(index), "--conventions", conventions])
        if code != 0:
            raise RuntimeError(f"rootweaver index build exited {code}")
        count = default_token_counter().count
        chunks = {}
        for line in (index / "passages" / "records.jsonl").read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            chunks[obj["id"]] = {"file": obj["source"]["path"], "text": " ".join(obj["sentences"])}
        size = {i: count(c["text"]) for i, c in chunks.items()}
        retriever = open_index(index).retriever()
        for q in questions:
            d = _ask(q.question, index, max_passages, conventions)
            ids = list(dict.fromkeys(pid for hop in d["hops"] for pid in hop["retrieved_ids"]))
            tokens = sum(size[i] for i in ids)
            top = within_tokens(retriever, q.question, tokens, size)
            rows.append({"type": q.type, "facts": len(q.evidence_facts), "chunks": len(ids), "tokens": tokens,
                         "articles": len({chunks[i]["file"] for i in ids}),
                         "single_articles": len({chunks[i]["file"] for i in top}),
                         "loop": found_evidence(q.evidence_facts, q.evidence_files, ids, chunks),
                         "single": found_evidence(q.evidence_facts, q.evidence_files, top, chunks)})
    return {"articles": articles, "indexed_chunks": len(chunks),
            "overall": _cell(rows, n_resamples, seed),
            "by_type": {t: _cell(typed, n_resamples, seed) for t in TYPES
                        if (typed := [r for r in rows if r["type"] == t])}}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conventions", choices=BUILTIN_CONVENTIONS, default=DEFAULT_CONVENTIONS,
                   help="index build / ask --conventions")
    p.add_argument("--max-passages", type=int, default=10, help="ask --max-passages")
    p.add_argument("--limit", type=int, help="the first N questions only")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    questions = load_questions(args.limit)
    print(json.dumps({"data": "evals/data/multihoprag (development half)", "questions": len(questions),
                      "conventions": args.conventions, "max_passages": args.max_passages,
                      **run(questions, max_passages=args.max_passages, conventions=args.conventions,
                            n_resamples=args.resamples, seed=args.seed)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
