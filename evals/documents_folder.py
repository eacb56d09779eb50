"""What a user gets from a folder of files: the product path (`rootweaver index build FOLDER`,
then `rootweaver ask --index IDX --json --reader none`) on an open pool written as files.

The pool of the rows' paragraphs is written four ways and indexed by the product's own command:

- ``jsonl``: one ``{id, title, sentences}`` line per paragraph (today's corpus format);
- ``opaque``: the same lines with every title replaced by ``doc-<id>`` (records titled by ids);
- ``md``: one Markdown file per paragraph, its title as the ``#`` heading (a wiki export);
- ``txt``: one untitled text file per paragraph, named ``doc-<n>.txt``;
- ``txt5``: untitled text files of five consecutive pool paragraphs each (blank line between),
  so chunks are cut across unrelated paragraphs and share one file name as title;
- ``win40``: the issue's untitled chunks as a JSONL corpus a user chunked themselves: each
  paragraph cut into windows of 40 words (stride 30), one ``{id, title, text}`` record per
  window, titled by its paragraph's file name (``doc-<hash>.txt``).

Per layout: all-gold (every gold paragraph overlapped by a read passage: the same id for
``jsonl``, a shared word 8-gram otherwise), all-support (every labelled supporting sentence
overlapped by a read passage: its paragraph's id for ``jsonl``, else a chunk of its paragraph's
file sharing a run of min(8, its length) words; rows with supporting-sentence labels only),
each also for single-shot BM25 given as many reader tokens as the loop read for that question
(with the paired-bootstrap CI of the difference), answer in the synth context (non-yes/no
rows), passages and reader tokens read. Gold labels are used only to score, after the answer.
Run::

    python -m evals.documents_folder --dataset hotpotqa --limit 200 --rows odd
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rootweaver_capabilities.cli.main import main as rootweaver
from rootweaver_innovations.defaults import (BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS, DEFAULT_RETRIEVER_MODE,
                                             RETRIEVER_CHOICES)
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.documents.corpus import passage_from_object
from evals.diagnostics import answer_in_context, paired_bootstrap_ci
from rootweaver_innovations.documents.folders import passage_record
from rootweaver_innovations.retrieval.index import open_index

from .datasets import DATASETS, build_open_pool, is_yes_no, load_rows
from .layouts import grams, opaque, supporting_sentences, window_records

LAYOUTS = ("jsonl", "opaque", "md", "txt", "txt5", "win40")
_ROWS = ("jsonl", "opaque")  # layouts whose passages keep the pool's ids


def _file(record: dict) -> str:
    """The file a read passage comes from: its source path, or (``win40``) its title."""
    return record["source"]["path"] if "source" in record else record["title"]


def _supported(ids: list[str], support: list[tuple[str, str]], *, records: dict[str, dict],
               where: dict[str, str] | None) -> float:
    """1.0 when every supporting sentence overlaps a read passage: its paragraph's id (``where``
    ``None``), else a chunk of its paragraph's file sharing a run of min(8, its length) words."""
    if where is None:
        return float({g for g, _ in support} <= set(ids))
    chunks = [records[i] for i in ids]
    for g, sentence in support:
        n = min(8, len(sentence.split()))
        if not any(_file(c) == where[g] and grams(sentence, n) & grams(" ".join(c["sentences"]), n)
                   for c in chunks):
            return 0.0
    return 1.0


def write_layout(layout: str, passages, root: Path) -> tuple[Path, dict[str, str]]:
    """The corpus of ``layout`` under ``root``; and, per pool id, the file that holds it."""
    where: dict[str, str] = {}
    if layout in _ROWS:
        path = root / ("pool.jsonl" if layout == "jsonl" else "opaque.jsonl")
        path.write_text("".join(json.dumps(passage_record(p)) + "\n"
                                for p in (opaque(passages) if layout == "opaque" else passages)), encoding="utf-8")
        return path, {p.id: p.id for p in passages}
    if layout == "win40":
        path = root / "win40.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for pid, record in window_records(passages):
                fh.write(json.dumps(record) + "\n")
                where[pid] = record["title"]
        return path, where
    folder = root / layout
    folder.mkdir()
    if layout == "txt5":
        for k in range(0, len(passages), 5):
            group = passages[k:k + 5]
            name = f"doc-{k // 5}.txt"
            (folder / name).write_text("\n\n".join(p.text for p in group) + "\n", encoding="utf-8")
            where.update((p.id, name) for p in group)
        return folder, where
    for n, p in enumerate(passages):
        name = f"doc-{n}.md" if layout == "md" else f"doc-{n}.txt"
        body = f"# {p.title}\n\n{p.text}\n" if layout == "md" else f"{p.text}\n"
        (folder / name).write_text(body, encoding="utf-8")
        where[p.id] = name
    return folder, where


def _covers(ids: list[str], gold: frozenset[str], *, records: dict[str, dict], where: dict[str, str] | None,
            paragraphs: dict) -> float:
    """1.0 when every gold paragraph is overlapped by a read passage: the same id (``where``
    ``None``: the jsonl layout), else a chunk of the paragraph's file sharing a word 8-gram."""
    if where is None:
        return float(gold <= set(ids))
    chunks = [records[i] for i in ids]
    return float(all(any(_file(c) == where[g] and grams(" ".join(c["sentences"]))
                         & grams(paragraphs[g].text) for c in chunks) for g in gold))


def _ask(question: str, index: Path, max_passages: int, conventions: str, mode: str = DEFAULT_RETRIEVER_MODE,
         reader: str = "none", extra: Sequence[str] = ()) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = rootweaver(["ask", question, "--index", str(index), "--reader", reader, "--json",
                           "--max-passages", str(max_passages), "--conventions", conventions, "--retriever", mode, *extra])
    if code != 0:
        raise RuntimeError(f"rootweaver ask exited {code} on {question!r}")
    return json.loads(out.getvalue())


def run(rows, *, layouts: Sequence[str] = LAYOUTS, chunk_tokens: int = 128, max_passages: int = 10,
        n_resamples: int = 10_000, seed: int = 0, conventions: str = DEFAULT_CONVENTIONS,
        mode: str = DEFAULT_RETRIEVER_MODE) -> dict:
    pool = build_open_pool(rows)
    by_id = {p.id: p for p in pool.passages}
    pool_ids = {(p.title, p.text): p.id for p in pool.passages}
    supports = [supporting_sentences(row, pool_ids, by_id) for row in rows]
    report: dict = {"rows": len(rows), "rows_without_gold": sum(not g for g in pool.gold),
                    "pool_passages": len(pool.passages), "layouts": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for layout in ("jsonl", *(x for x in layouts if x != "jsonl")):  # jsonl: the baseline of the CIs
            corpus, where = write_layout(layout, pool.passages, Path(tmp))
            index = Path(tmp) / f"{layout}.idx"
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                dense = ["--dense"] if mode in ("dense", "hybrid") else []
                if rootweaver(["index", "build", str(corpus), "--out", str(index), "--chunk-tokens", str(chunk_tokens),
                               "--conventions", conventions, *dense]) != 0:
                    raise RuntimeError(f"index build failed for {layout}")
            built_s = time.perf_counter() - started
            records = {}
            stored = index / "passages" / "records.jsonl"
            for lineno, line in enumerate(stored.read_text(encoding="utf-8").splitlines(), 1):
                obj = json.loads(line)  # a `text` record (win40) is read as the product splits it
                records[obj["id"]] = {**obj, "sentences": list(passage_from_object(obj, stored, lineno).sentences)}
            retriever = open_index(index).retriever()
            count = default_token_counter().count
            size = {i: count(" ".join(r["sentences"])) for i, r in records.items()}
            covers = functools.partial(_covers, records=records, where=None if layout in _ROWS else where,
                                       paragraphs=by_id)

            all_gold, single, aic, read, tokens, seconds = [], [], [], [], [], []
            all_support, single_support = [], []
            for row, gold, support in zip(rows, pool.gold, supports):
                started = time.perf_counter()
                d = _ask(row.question, index, max_passages if layout not in _ROWS else 10, conventions, mode)
                seconds.append(time.perf_counter() - started)
                ids = [pid for hop in d["hops"] for pid in hop["retrieved_ids"]]
                read.append(len(ids))
                tokens.append(sum(size[i] for i in ids))
                if gold:  # a row with no gold paragraph in the pool is not scored on retrieval (as in `eval e2e`)
                    all_gold.append(covers(ids, gold))
                    top, used = [], 0  # single-shot BM25 for the question, as many reader tokens as the loop read
                    for hit in retriever.search(row.question, 4 * len(ids) + 10):
                        if used >= tokens[-1]:
                            break
                        top.append(hit.passage.id)
                        used += size[hit.passage.id]
                    single.append(covers(top, gold))
                    if support:  # every supporting sentence in a read passage (the rows that label them)
                        supported = functools.partial(_supported, records=records,
                                                      where=None if layout in _ROWS else where)
                        all_support.append(supported(ids, support))
                        single_support.append(supported(top, support))
                if not is_yes_no(row):
                    aic.append(float(answer_in_context(row.answer, d["synth_context"])))
            ci = paired_bootstrap_ci(all_gold, single, n_resamples=n_resamples, seed=seed)
            ci_support = (paired_bootstrap_ci(all_support, single_support, n_resamples=n_resamples, seed=seed)
                          if all_support else None)
            report["layouts"][layout] = {
                "indexed_passages": len(records), "build_s": round(built_s, 2),
                "all_gold": round(float(np.mean(all_gold)), 3), "aic": round(float(np.mean(aic)), 3),
                "single_bm25_all_gold": round(float(np.mean(single)), 3),
                "loop_minus_single": [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)],
                "support_rows": len(all_support),
                "all_support": round(float(np.mean(all_support)), 3) if all_support else None,
                "single_bm25_all_support": round(float(np.mean(single_support)), 3) if all_support else None,
                "support_loop_minus_single": ([round(ci_support.mean_diff, 3), round(ci_support.low, 3),
                                               round(ci_support.high, 3)] if ci_support else None),
                "mean_read": round(float(np.mean(read)), 2), "mean_tokens_read": round(float(np.mean(tokens)), 1),
                "ask_ms_p50": round(1000 * float(np.median(seconds)), 1),
                "_all_gold": all_gold, "_aic": aic,
            }
    base = report["layouts"]["jsonl"]
    for layout, cell in report["layouts"].items():
        if layout != "jsonl":
            for metric in ("all_gold", "aic"):
                ci = paired_bootstrap_ci(cell[f"_{metric}"], base[f"_{metric}"], n_resamples=n_resamples, seed=seed)
                cell[f"{metric}_minus_jsonl"] = [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)]
    for cell in report["layouts"].values():
        cell.pop("_all_gold"), cell.pop("_aic")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=sorted(DATASETS), default="hotpotqa")
    p.add_argument("--limit", type=int, default=200, help="first N rows, before --rows")
    p.add_argument("--rows", choices=("all", "even", "odd"), default="odd")
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated subset of " + ", ".join(LAYOUTS))
    p.add_argument("--max-passages", type=int, default=10, help="ask --max-passages for the folders (jsonl: 10)")
    p.add_argument("--chunk-tokens", type=int, default=128, help="index build --chunk-tokens for the folders")
    p.add_argument("--conventions", choices=BUILTIN_CONVENTIONS, default=DEFAULT_CONVENTIONS,
                   help="index build / ask --conventions")
    p.add_argument("--retriever", choices=RETRIEVER_CHOICES, default=DEFAULT_RETRIEVER_MODE, help="ask --retriever")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rows = load_rows(args.dataset, args.limit)
    rows = rows if args.rows == "all" else rows[args.rows == "odd"::2]
    print(json.dumps({"dataset": args.dataset, "limit": args.limit, "half": args.rows, "retriever": args.retriever,
                      "chunk_tokens": args.chunk_tokens, "conventions": args.conventions,
                      **run(rows, layouts=args.layouts.split(","), chunk_tokens=args.chunk_tokens,
                            max_passages=args.max_passages, conventions=args.conventions, mode=args.retriever,
                            n_resamples=args.resamples, seed=args.seed)},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
