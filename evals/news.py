"""Retrieval on a folder of saved news articles (MultiHop-RAG's development half) through the
product path: `rootweaver index build FOLDER`, then `rootweaver ask --index IDX --json
--reader none` per question.

The bundled articles (``evals/data/multihoprag``: Markdown with YAML front matter, one file
each) are written to a temporary folder, as saved or in another layout (``--layout html``:
saved web pages with their meta tags; ``--layout heading``: Markdown whose source and date are
a line of text, see :func:`write_articles`), and indexed by the product's own command; every
question is asked with ``--max-passages N --retriever MODE``. A question is **all-evidence**
when each of its gold evidence sentences shares a word 8-gram (its whole text when shorter)
with a read chunk of one of its evidence files. Reported per question type and overall:
all-evidence, the share of gold sentences found, the mean number of articles (files) and
chunks read and the reader tokens they hold, and the same for each single-shot retriever over
the index (BM25, dense, hybrid; dense and hybrid when the index holds embeddings) given as
many reader tokens as the loop read for that question (top hits in rank order until the
loop's tokens are reached), with the paired-bootstrap CI of loop minus each. What reaches the
reader: the mean number of articles the synth context holds a sentence of (``kept_ids``), and
the share of answerable questions for which it holds a sentence of every gold article. Null queries have
no evidence: they count in what is read, not in all-evidence. For the questions that name a
source or a day the index knows (the loop's own reading of the question), the share whose
gold articles from that source or day were all read. With ``--reader local`` (the embedded
reader; ``none``: the extractive answer) the answer's accuracy as MultiHop-RAG scores it: the
gold answer contained in the answer (case aside), a yes/no gold answer leading it, and a null
query right when the answer is ``insufficient information``; and the share of answerable
questions refused. Gold labels are read only to score, after the loop has read. Run::

    python -m evals.news --retriever hybrid --max-passages 10 --reader local

``--compare-answers A B`` asks nothing: it pairs two ``--answers`` files question by question.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import html
import io
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import frontmatter
import numpy as np

from rootweaver_capabilities.cli.argtypes import positive_int
from rootweaver_capabilities.cli.main import main as rootweaver
from rootweaver_capabilities.readers.prompts import MODES
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.defaults import (BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS, DEFAULT_RETRIEVER_MODE,
                                             RETRIEVER_CHOICES, RETRIEVER_MODES)
from rootweaver_innovations.documents.corpus import read_jsonl
from rootweaver_innovations.loop.result import INSUFFICIENT_INFORMATION
from rootweaver_innovations.retrieval.index import open_index

from .diagnostics import paired_bootstrap_ci
from .documents_folder import _ask
from .layouts import grams

__all__ = ["DATA", "LAYOUTS", "TYPES", "NewsQuestion", "answer_correct", "found_evidence", "index_articles", "load_questions", "main", "run", "within_tokens", "write_articles"]

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


LAYOUTS = ("saved", "html", "heading")


def write_articles(folder: Path, layout: str = "saved", path: Path = DATA / "articles.jsonl.gz") -> int:
    """Write each bundled article into ``folder``; how many. ``saved``: as it was saved
    (``<id>.md``, Markdown with YAML front matter); ``html``: a saved web page (``<id>.html``:
    ``<title>``, ``og:site_name``, ``article:published_time`` and ``author`` meta tags, an
    ``h1`` and one ``p`` per paragraph); ``heading``: Markdown with no metadata a program
    reads (``<id>.md``: the headline as a heading, a line ``source, Month D, YYYY``, the
    text). ``ValueError`` for another layout."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for n, obj in enumerate((obj for _, obj in read_jsonl(path)), 1):
        name, text = obj["file"], obj["text"]
        if layout != "saved":
            post = frontmatter.loads(text)
            name, text = _relaid(Path(name).stem, layout, post.metadata, post.content)
        (folder / name).write_text(text, encoding="utf-8")
    return n


def index_articles(tmp: Path, layout: str = "saved", conventions: str = DEFAULT_CONVENTIONS) -> tuple[int, Path]:
    """Write the bundled articles into ``tmp/articles`` in ``layout`` (:func:`write_articles`)
    and index them with embeddings (``rootweaver index build --dense``, its output captured)
    into ``tmp/articles.idx``: ``(articles written, index folder)``. ``RuntimeError`` with the
    build's exit code and last error line when it fails."""
    folder, index = tmp / "articles", tmp / "articles.idx"
    articles = write_articles(folder, layout)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = rootweaver(["index", "build", str(folder), "--out", str(index), "--conventions", conventions, "--dense"])
    if code != 0:
        last = (err.getvalue().strip().splitlines() or [""])[-1]
        raise RuntimeError(f"rootweaver index build exited {code}: {last}")
    return articles, index


def _relaid(stem: str, layout: str, meta: dict, body: str) -> tuple[str, str]:
    """``(file name, text)`` of one article in ``layout`` from its front matter and body."""
    title, source, day = str(meta.get("title", "")), str(meta.get("source", "")), meta.get("published")
    day = day if isinstance(day, dt.date) else None
    paragraphs = [p.strip() for p in body.split("\n\n") if p.strip()]
    if layout == "heading":
        dated = f", {day:%B} {day.day}, {day.year}" if day else ""
        return f"{stem}.md", "\n\n".join([f"# {title}", f"{source}{dated}", *paragraphs]) + "\n"
    tags = [("property", "og:site_name", source), ("name", "author", str(meta.get("author") or "")),
            ("property", "article:published_time", day.isoformat() if day else "")]
    head = "".join(f'<meta {attr}="{key}" content="{html.escape(value)}">' for attr, key, value in tags if value)
    paras = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return f"{stem}.html", (f"<!doctype html><html><head><title>{html.escape(title)}</title>{head}</head>"
                            f"<body><article><h1>{html.escape(title)}</h1>{paras}</article></body></html>\n")


def _article(path: str) -> str:
    """The bundled article a chunk's file is, named as the questions name it (``<id>.md``)."""
    return Path(path).stem + ".md"


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
    """A single-shot retriever's hits for ``question`` in rank order, until they hold ``tokens``
    reader tokens (the hit that reaches it included)."""
    top, used = [], 0
    for hit in retriever.search(question, len(size)) if tokens else ():
        if used >= tokens:
            break
        top.append(hit.passage.id)
        used += size[hit.passage.id]
    return top


def answer_correct(answer: str, gold: str, qtype: str) -> bool:
    """MultiHop-RAG's reading of an answer: a null query's is right when it is
    :data:`INSUFFICIENT_INFORMATION`; a yes/no gold answer must lead it; any other must be
    contained in it (case aside)."""
    got, want = answer.strip().lower(), gold.strip().lower().rstrip(".")
    if qtype == "null_query":
        return got.startswith(INSUFFICIENT_INFORMATION)
    if want in ("yes", "no"):
        first = re.match(r"\W*(\w+)", got)
        return first is not None and first.group(1) == want
    return want in got


def _share(flags: list[bool]) -> float | None:
    return round(float(np.mean(flags)), 3) if flags else None


def _cell(rows: list[dict], singles: Sequence[str], n_resamples: int, seed: int) -> dict:
    """The summary of some questions' rows: sizes read, answers, named sources and days, and
    all-evidence where there is evidence (the loop's, each single-shot retriever's and the CI of
    the loop minus it)."""
    answerable = [r for r in rows if r["type"] != "null_query"]
    named = {kind: [r["named"][kind] for r in rows if r["named"][kind] is not None] for kind in ("source", "day")}
    cell = {"questions": len(rows),
            "mean_articles_read": round(float(np.mean([r["articles"] for r in rows])), 2),
            "mean_chunks_read": round(float(np.mean([r["chunks"] for r in rows])), 2),
            "mean_tokens_read": round(float(np.mean([r["tokens"] for r in rows])), 1),
            "mean_articles_in_synth": round(float(np.mean([r["synth_articles"] for r in rows])), 2),
            "answer_accuracy": _share([r["correct"] for r in rows]),
            "answerable_refused": _share([r["refused"] for r in answerable]),
            "name_a_source": len(named["source"]), "named_source_gold_read": _share(named["source"]),
            "name_a_day": len(named["day"]), "named_day_gold_read": _share(named["day"])}
    scored = [r for r in rows if r["facts"]]
    if scored:
        loop = [float(all(r["loop"])) for r in scored]
        cell.update({"scored": len(scored), "all_evidence": round(float(np.mean(loop)), 3),
                     "evidence_found": round(float(np.mean([np.mean(r["loop"]) for r in scored])), 3),
                     "gold_articles_in_synth": _share([r["synth_gold"] for r in scored])})
        for mode in singles:
            single = [float(all(r["single"][mode])) for r in scored]
            ci = paired_bootstrap_ci(loop, single, n_resamples=n_resamples, seed=seed)
            cell[f"single_{mode}_all_evidence"] = round(float(np.mean(single)), 3)
            cell[f"loop_minus_single_{mode}"] = [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)]
    return cell


def _named_read(facets, question: str, files: Sequence[str], row_file: list[str], read: set[str]) -> dict:
    """For each kind (source, day) the question names: whether every gold file of that source
    or day was read (``None`` when it names none, or none of its gold files is of it)."""
    out: dict[str, bool | None] = {"source": None, "day": None}
    for named in facets.named(question) if facets else ():
        gold = {row_file[r] for r in named.rows.tolist()} & set(files)
        if gold:
            out[named.kind] = bool(out[named.kind] in (None, True) and gold <= read)
    return out


def run(questions: Sequence[NewsQuestion], *, max_passages: int = 10, conventions: str = DEFAULT_CONVENTIONS,
        mode: str = DEFAULT_RETRIEVER_MODE, reader: str = "none", n_resamples: int = 10_000, seed: int = 0,
        answers: Path | None = None, ask_args: Sequence[str] = (), layout: str = "saved") -> dict:
    """Index the bundled articles and ask ``questions`` with retriever ``mode`` and ``reader``;
    the report (see the module docstring). ``layout``: how the articles are written
    (:func:`write_articles`). ``answers``: a JSONL file to write each question's
    id, type, gold answer, answer, method and whether it is right; ``ask_args``: more
    ``rootweaver ask`` options (``--mode answer``, ``--max-tokens 400``)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        articles, index = index_articles(Path(tmp), layout, conventions)
        count = default_token_counter().count
        chunks, row_file = {}, []
        for line in (index / "passages" / "records.jsonl").read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            row_file.append(_article(obj["source"]["path"]))
            chunks[obj["id"]] = {"file": row_file[-1], "text": " ".join(obj["sentences"])}
        size = {i: count(c["text"]) for i, c in chunks.items()}
        opened = open_index(index)
        singles = {m: opened.retriever(m) for m in (RETRIEVER_MODES if opened.dense is not None else ("bm25",))}
        for q in questions:
            d = _ask(q.question, index, max_passages, conventions, mode, reader, ask_args)
            ids = list(dict.fromkeys(pid for hop in d["hops"] for pid in hop["retrieved_ids"]))
            answer = d["answer"]["text"]
            if answers is not None:
                with open(answers, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"id": q.id, "type": q.type, "gold": q.answer, "answer": answer,
                                         "method": d["answer"]["method"],
                                         "correct": answer_correct(answer, q.answer, q.type)}) + "\n")
            tokens = sum(size[i] for i in ids)
            tops = {m: within_tokens(r, q.question, tokens, size) for m, r in singles.items()}
            kept = ids if d["kept_ids"] is None else d["kept_ids"]  # compaction off: the whole trajectory
            shown = {chunks[i]["file"] for i in kept}
            rows.append({"type": q.type, "facts": len(q.evidence_facts), "chunks": len(ids), "tokens": tokens,
                         "synth_articles": len(shown), "synth_gold": set(q.evidence_files) <= shown,
                         "correct": answer_correct(answer, q.answer, q.type),
                         "refused": answer.strip().lower().startswith(INSUFFICIENT_INFORMATION),
                         "named": _named_read(singles["bm25"].facets, q.question, q.evidence_files, row_file,
                                              {chunks[i]["file"] for i in ids}),
                         "articles": len({chunks[i]["file"] for i in ids}),
                         "loop": found_evidence(q.evidence_facts, q.evidence_files, ids, chunks),
                         "single": {m: found_evidence(q.evidence_facts, q.evidence_files, top, chunks)
                                    for m, top in tops.items()}})
    return {"articles": articles, "layout": layout, "indexed_chunks": len(chunks), "retriever": mode, "reader": reader,
            "overall": _cell(rows, list(singles), n_resamples, seed),
            "by_type": {t: _cell(typed, list(singles), n_resamples, seed) for t in TYPES
                        if (typed := [r for r in rows if r["type"] == t])}}


def compare_answers(a: Path, b: Path, *, n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Two ``--answers`` files of the same questions paired by id: each one's accuracy, how many
    questions only each gets right, and the paired-bootstrap CI of ``a`` minus ``b``.
    ``ValueError`` (one line naming the file) for a file that is not such JSONL, or when the
    two do not hold the same questions."""
    scored = []
    for path in (a, b):
        try:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            scored.append({str(r["id"]): bool(r["correct"]) for r in rows})
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: not an --answers file ({type(exc).__name__}: {exc})") from None
    if set(scored[0]) != set(scored[1]):
        raise ValueError(f"{a} and {b} do not hold the same questions ({len(scored[0])} and {len(scored[1])} ids)")
    ids = sorted(scored[0])
    x, y = ([float(s[i]) for i in ids] for s in scored)
    ci = paired_bootstrap_ci(x, y, n_resamples=n_resamples, seed=seed)
    return {"questions": len(ids), "a_accuracy": _share(x), "b_accuracy": _share(y),
            "right_only_in_a": sum(p > q for p, q in zip(x, y)), "right_only_in_b": sum(q > p for p, q in zip(x, y)),
            "a_minus_b": [round(ci.mean_diff, 3), round(ci.low, 3), round(ci.high, 3)]}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conventions", choices=BUILTIN_CONVENTIONS, default=DEFAULT_CONVENTIONS,
                   help="index build / ask --conventions")
    p.add_argument("--layout", choices=LAYOUTS, default="saved",
                   help="how the articles are written: as saved (front matter), as web pages, or with no metadata")
    p.add_argument("--max-passages", type=int, default=10, help="ask --max-passages")
    p.add_argument("--retriever", choices=RETRIEVER_CHOICES, default=DEFAULT_RETRIEVER_MODE, help="ask --retriever")
    p.add_argument("--reader", choices=("none", "local"), default="none", help="ask --reader")
    p.add_argument("--types", help="comma-separated question types to ask (default: all of "
                   f"{','.join(TYPES)})")
    p.add_argument("--limit", type=positive_int, help="the first N questions (of those types) only")
    p.add_argument("--mode", choices=sorted(MODES), help="ask --mode (default: the product's)")
    p.add_argument("--max-tokens", type=positive_int,
                   help="ask --max-tokens, the synth-context budget (default: the product's)")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--answers", type=Path, help="append each question's answer and score to this JSONL file")
    p.add_argument("--compare-answers", type=Path, nargs=2, metavar=("A", "B"),
                   help="ask nothing: pair two --answers files by question and print A minus B with its CI")
    args = p.parse_args(argv)
    if args.compare_answers:
        try:
            print(json.dumps(compare_answers(*args.compare_answers, n_resamples=args.resamples, seed=args.seed)))
        except ValueError as exc:
            p.error(f"--compare-answers: {exc}")
        return 0
    types = args.types.split(",") if args.types else list(TYPES)
    if unknown := sorted(set(types) - set(TYPES)):
        p.error(f"--types: unknown type {unknown[0]!r}; choose from {', '.join(TYPES)}")
    questions = [q for q in load_questions() if q.type in types][:args.limit]
    ask_args = [*(["--mode", args.mode] if args.mode else []),
                *(["--max-tokens", str(args.max_tokens)] if args.max_tokens is not None else [])]
    print(json.dumps({"data": "evals/data/multihoprag (development half)", "questions": len(questions),
                      "conventions": args.conventions, "max_passages": args.max_passages,
                      **run(questions, max_passages=args.max_passages, conventions=args.conventions,
                            mode=args.retriever, reader=args.reader, n_resamples=args.resamples, seed=args.seed,
                            answers=args.answers, ask_args=ask_args, layout=args.layout)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
