"""Refit the ``evidence`` packer's two models and write ``rootweaver_innovations/data/evidence_model.json``.

Usage: python scripts/fit_evidence_weights.py [--section titled|untitled] [--datasets hotpotqa,musique]
       [--no-opaque-copies] [--chunk-layouts txt,txt5,win40] [--source loop|top5] [--out PATH] [--check]

Tuning half only: the even-indexed rows (``rows[0::2]``) of each bundled dev set named by
``--datasets`` (``name:k`` counts that set's problems k times in both fits). Candidates
are product-shaped: the facts the shipped ``MultiHopRAG`` loop retrieves for each question
over the open pool of every paragraph of the file (``--source loop``, the default), or the
BM25 top-5 of the question's own paragraphs (``--source top5``), turned into candidates by
:func:`~rootweaver_innovations.compaction.packing.candidates.fact_candidates`, the function the product
compactor calls. Unless ``--no-opaque-copies``, every problem is also fitted a second time
with each title replaced by an opaque id (``doc-<passage id>``, as ``--opaque-titles`` does
in the evals): what users with their own documents get, so the title-free features carry
weight. ``--chunk-layouts`` adds each problem once more per layout, the pool written as a
user's files or chunks (:mod:`evals.documents_folder`) and read as the product reads them.
``--section untitled`` fits the model's ``untitled`` weights instead (what a problem whose every
candidate is titled by an id is scored with): on the opaque copies and the chunk layouts only
(``win40`` unless ``--chunk-layouts`` names others), never on titled problems, keeping the
titled weights of the file at ``--out``; ``--section titled`` (the default) keeps its
``untitled`` weights.
Labels (used here, offline, never by the policy): a document is a gold paragraph (in a chunk
layout: holds a fact from a gold paragraph's file that opens with 8 of its words); a sentence
contains the normalised answer.

1. Documents: L2-regularised logistic regression (penalty ||w||^2 / (2C), C = 1, bias
   unpenalised) of "gold paragraph" on the document features, by Newton's method.
2. Sentences: conditional logit (a softmax over each question's candidates) of "holds the
   answer" on the sentence features computed with step 1's fitted document likelihoods, over
   the non-yes/no questions with at least one answer sentence; features standardised,
   penalty ``l2 * ||w||^2`` (l2 = 10) on the standardised scale, L-BFGS.

Writes the model file (weights by feature name, the packing parameters kept from the file at
``--out`` when it exists, provenance: data, rows, source, date, command). ``--check`` only
prints the largest difference to the same section of the shipped file.
Deterministic (same data, same weights).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from evals.datasets import DATASETS, DEFAULT_DATA_ROOT, build_open_pool
from evals.documents_folder import LAYOUTS, write_layout
from evals.loops import product_loop
from evals.packing import TOP_K, retrieved_candidates
from evals.qa_rows import load_qa_rows
from rootweaver_innovations.documents.corpus import CorpusError, load_corpus_jsonl
from evals.diagnostics import answer_in_context
from rootweaver_innovations.documents.folders import load_documents
from rootweaver_innovations.compaction.evidence import MODEL_FILE, EvidenceModel, EvidenceParams, ProblemFeatures
from rootweaver_innovations.compaction.packing import Budget, default_token_counter, fact_candidates, pack
from rootweaver_innovations.compaction.packing import register_policy
from rootweaver_innovations.compaction.packing.policies import POLICIES, PackingProblem, Selection
from rootweaver_innovations.retrieval.retrievers import BM25Retriever

SHIPPED = Path(__file__).resolve().parent.parent / "rootweaver_innovations" / "data" / MODEL_FILE
DEFAULT_DATASETS = "hotpotqa,musique"  # chosen on the even rows (docs/results.md)
_CAPTURED: list[PackingProblem] = []
PARAMS_NOTE = ("kept from the previous model file: coverage (of the linear bonus coverage * q_d), price and "
               "fill_evidence chosen on the even rows (product path, 160 tokens, 256 tokens and half the off "
               "context's median; MuSiQue cross-fitted over two folds of its even rows; docs/results.md)")


def _capture(problem: PackingProblem) -> Selection:
    _CAPTURED.append(problem)
    return Selection((), ())


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float, iters: int = 50) -> tuple[np.ndarray, float]:
    """Newton's method on sum log-loss + ||w||^2 / (2c); returns (weights, bias)."""
    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], 1.0 / c)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(xb.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w[:-1], float(w[-1])


def fit_conditional_logit(groups: list[tuple[np.ndarray, np.ndarray]], l2: float) -> np.ndarray:
    """Maximise sum_g log(sum of softmax over g's positives) - l2 ||w_std||^2; returns raw-scale weights."""
    x = np.vstack([f for f, _ in groups])
    y = np.concatenate([t for _, t in groups])
    gid = np.concatenate([np.full(len(t), g) for g, (_, t) in enumerate(groups)])
    n_groups = len(groups)
    sd = x.std(axis=0) + 1e-9
    xs = (x - x.mean(axis=0)) / sd  # centring is free: a softmax ignores per-group constants

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = xs @ w
        zmax = np.full(n_groups, -np.inf)
        np.maximum.at(zmax, gid, z)
        e = np.exp(z - zmax[gid])
        den = np.bincount(gid, weights=e, minlength=n_groups)
        num = np.bincount(gid, weights=e * y, minlength=n_groups)
        value = -(np.log(num) - np.log(den)).sum() + l2 * w @ w
        grad = xs.T @ (e / den[gid] - e * y / num[gid]) + 2 * l2 * w
        return float(value), grad

    res = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B")
    return res.x / sd


def _opaque(facts):
    """The same facts with every title replaced by an opaque id (``doc-<passage id>``)."""
    return [dataclasses.replace(f, title=f"doc-{f.passage_id}") for f in facts]


def _chunk_items(rows, layout: str) -> list:
    """(row, gold document ids, facts) for each row: the pool written as ``layout``
    (:func:`evals.documents_folder.write_layout`), read as the product reads it, and the loop run
    over it. A document (:func:`~rootweaver_innovations.compaction.packing.candidates.fact_candidates`'
    ``doc_id``) is gold when one of its facts comes from a gold paragraph's file and shares a run
    of min(8, its length) words with that paragraph."""
    pool = build_open_pool(rows)
    text = {p.id: " ".join(p.text.lower().split()) for p in pool.passages}
    with tempfile.TemporaryDirectory() as tmp:
        corpus, where = write_layout(layout, pool.passages, Path(tmp))
        passages = load_documents(corpus).passages if corpus.is_dir() else load_corpus_jsonl(corpus)
    rag = product_loop(BM25Retriever(list(passages)))
    items = []
    for row, gold in zip(rows, pool.gold):
        facts = rag.multi_hop_search(row.question).facts
        docs = set()
        for f, c in zip((f for f in facts if f.body), fact_candidates(row.question, facts)):
            words = f.body.lower().split()
            run = " ".join(words[:8])
            if any(where[g] == (f.source.path if f.source else f.title) and run in text[g] for g in gold):
                docs.add(c.doc_id)
        items.append((row, frozenset(docs), facts))
    return items


def _problems(rows, source: str, budget: Budget, opaque_copies: bool, chunk_layouts: tuple[str, ...] = (),
              titled: bool = True):
    """(row, gold ids, captured problem) for each row with candidates, product-shaped (with
    ``titled``, as titled), with ``opaque_copies`` each row with opaque titles, and once more
    per layout of ``chunk_layouts`` (loop source only)."""
    out = []
    if source == "loop":
        pool = build_open_pool(rows)
        rag = product_loop(BM25Retriever(pool.passages))
        items = [(row, pool.gold[i], rag.multi_hop_search(row.question).facts) for i, row in enumerate(rows)]
    else:
        items = []
        for row in rows:
            own = build_open_pool([row])
            facts, _cands = retrieved_candidates(row.question, BM25Retriever(own.passages).search(row.question, TOP_K))
            items.append((row, own.gold[0], facts))
    variants = (False,) * titled + (True,) * opaque_copies
    for opaque in variants:
        for row, gold, facts in items:
            cands = fact_candidates(row.question, _opaque(facts) if opaque else facts)
            if cands:
                _CAPTURED.clear()
                pack("_capture_problem", cands, row.question, budget)
                out.append((row, gold, _CAPTURED[0]))
    for layout in chunk_layouts:
        for row, gold, facts in _chunk_items(rows, layout):
            cands = fact_candidates(row.question, facts)
            if cands:
                _CAPTURED.clear()
                pack("_capture_problem", cands, row.question, budget)
                out.append((row, gold, _CAPTURED[0]))
    return out


def _dataset_weights(text: str) -> list[tuple[str, int]]:
    """``"hotpotqa,musique:2"`` -> ``[("hotpotqa", 1), ("musique", 2)]``."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, k = part.partition(":")
        if name not in DATASETS or (k and (not k.isdigit() or int(k) < 1)):
            raise argparse.ArgumentTypeError(f"expected names of {sorted(DATASETS)} with optional :k, got {part!r}")
        out.append((name, int(k) if k else 1))
    if not out:
        raise argparse.ArgumentTypeError("no dataset named")
    return out


def _layouts(text: str) -> tuple[str, ...]:
    """``"txt,win40"`` -> ``("txt", "win40")``; a layout not in ``evals.documents_folder`` is refused."""
    out = tuple(filter(None, (p.strip() for p in text.split(","))))
    bad = [x for x in out if x not in LAYOUTS or x == "jsonl"]
    if bad:
        raise argparse.ArgumentTypeError(f"expected layouts of {[x for x in LAYOUTS if x != 'jsonl']}, got {bad}")
    return out


def _named(columns: dict[str, np.ndarray], rows: int) -> tuple[list[str], np.ndarray]:
    names = list(columns)
    return names, np.column_stack([np.broadcast_to(np.asarray(columns[n], dtype=np.float64), (rows,)) for n in names])


def fit_model(captured, params: EvidenceParams, doc_c: float, l2: float) -> tuple[EvidenceModel, dict[str, int]]:
    """Both fits (module docstring, steps 1 and 2) on ``captured`` (row, gold document ids, problem)
    triples; returns the model (weights rounded to 4 places, ``params`` kept, no provenance) and
    the counts of problems, documents and answer groups it was fitted on."""
    doc_x, doc_y, doc_names, features = [], [], None, []
    for _row, gold, pr in captured:
        f = ProblemFeatures(pr)
        columns = f.documents()
        doc_names, x = _named(columns, f.n_documents)
        doc_x.append(x)
        features.append((f, columns))
        first = {}
        for c, d in zip(pr.candidates, pr.doc_index.tolist()):
            first.setdefault(d, c.doc_id)
        doc_y.append([float(first[d] in gold) for d in range(len(first))])
    w_doc, b_doc = fit_logistic(np.vstack(doc_x), np.concatenate(doc_y), doc_c)
    doc_model = EvidenceModel(dict(zip(doc_names, w_doc.tolist())), b_doc, {})

    groups, sent_names = [], None
    for (row, _gold, pr), (f, columns) in zip(captured, features):
        if row.answer.strip().lower() in ("yes", "no"):
            continue
        y = np.array([float(answer_in_context(row.answer, c.text)) for c in pr.candidates])
        if y.any():
            q = doc_model.document_likelihood(columns, f.n_documents)
            sent_names, feats = _named(f.sentences(q), len(pr.candidates))
            groups.append((feats, y))
    w_sent = fit_conditional_logit(groups, l2)
    model = EvidenceModel(
        document_weights={n: round(float(v), 4) for n, v in zip(doc_names, w_doc)},
        document_bias=round(float(b_doc), 4),
        sentence_weights={n: round(float(v), 4) for n, v in zip(sent_names, w_sent)},
        params=params,
    )
    counts = {"problems": len(captured), "documents": int(sum(map(len, doc_y))), "answer_groups": len(groups)}
    return model, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", choices=("titled", "untitled"), default="titled",
                    help="which weights to fit: titled (default) or untitled (opaque ids and chunk layouts only)")
    ap.add_argument("--datasets", type=_dataset_weights, default=_dataset_weights(DEFAULT_DATASETS),
                    help=f"comma list of name[:k] (default {DEFAULT_DATASETS})")
    ap.add_argument("--no-opaque-copies", dest="opaque_copies", action="store_false",
                    help="fit on titled candidates only")
    ap.add_argument("--source", choices=("loop", "top5"), default="loop")
    ap.add_argument("--chunk-layouts", type=_layouts, default=(),
                    help="comma list of evals.documents_folder layouts (txt, txt5, win40, md) the pool is also "
                         "written as and fitted on (loop source; default none)")
    ap.add_argument("--doc-c", type=float, default=1.0)
    ap.add_argument("--l2", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=SHIPPED)
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = ap.parse_args()
    untitled = args.section == "untitled"
    previous = EvidenceModel.load(args.out) if args.out.is_file() else None
    if untitled:
        if previous is None:
            ap.error(f"--section untitled keeps the titled weights of --out, but {args.out} does not exist")
        if not args.opaque_copies:
            ap.error("--section untitled fits on the opaque copies: drop --no-opaque-copies")
        args.chunk_layouts = args.chunk_layouts or ("win40",)
    if "_capture_problem" not in POLICIES:
        register_policy("_capture_problem", _capture)
    budget = Budget.tokens(160, default_token_counter())
    captured, used = [], []
    for name, k in args.datasets:
        try:
            all_rows = load_qa_rows(DEFAULT_DATA_ROOT / DATASETS[name])
        except CorpusError as exc:
            ap.error(str(exc))
        rows = all_rows[0::2]
        captured += _problems(rows, args.source, budget, args.opaque_copies, args.chunk_layouts, not untitled) * k
        used.append(f"evals/data/{DATASETS[name]}: even-indexed rows 0, 2, ... ({len(rows)} of {len(all_rows)})"
                    + (f", counted {k} times" if k > 1 else ""))
    params = previous.params if previous is not None else EvidenceParams()

    model, counts = fit_model(captured, params, args.doc_c, args.l2)
    model = dataclasses.replace(
        model,
        provenance={
            "data": used,
            "rows": "even-indexed rows only (the odd rows are held out)",
            "candidates": f"{args.source}: " + ("MultiHopRAG facts over the open pool" if args.source == "loop"
                                                else f"BM25 top-{TOP_K} of the question's own paragraphs")
            + ", packing.candidates.fact_candidates"
            + (", each problem with opaque titles (doc-<passage id>) only" if untitled
               else ", each problem also with opaque titles (doc-<passage id>)" if args.opaque_copies else "")
            + (f", and over the pool written as {', '.join(args.chunk_layouts)} (evals.documents_folder; a "
               "document is gold when a fact of it comes from a gold paragraph's file and opens with 8 of its "
               "words)" if args.chunk_layouts else ""),
            "fit": {**counts, "doc_c": args.doc_c, "l2": args.l2},
            **({} if untitled else {"params": PARAMS_NOTE}),
            "command": "python " + " ".join(["scripts/fit_evidence_weights.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
        },
    )
    print(f"{counts['problems']} problems; {counts['documents']} documents, {counts['answer_groups']} answer groups")
    if args.check:
        shipped = previous.untitled if untitled else previous
        if shipped is None:
            print(f"{args.out} has no {args.section} weights to compare with")
            return
        diff = max(*(abs(w - shipped.document_weights.get(n, np.nan)) for n, w in model.document_weights.items()),
                   *(abs(w - shipped.sentence_weights.get(n, np.nan)) for n, w in model.sentence_weights.items()))
        print(f"max |new - shipped| weight: {diff:.4f}")
        return
    if untitled:
        model = dataclasses.replace(previous, untitled=model)
    else:
        model = dataclasses.replace(model, untitled=previous.untitled if previous is not None else None)
    args.out.write_text(json.dumps(model.to_mapping(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
