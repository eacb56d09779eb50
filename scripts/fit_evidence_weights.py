"""Refit the ``evidence`` packer's two models (the record of how ``DOCUMENT_WEIGHTS`` /
``DOCUMENT_BIAS`` and ``EVIDENCE_WEIGHTS`` in ``rootweaver_innovations/packing/evidence.py``
were made).

Usage: python scripts/fit_evidence_weights.py [--data PATH] [--retrievers bm25,dense]
(the ``dense`` retriever needs the ``dense`` extra; scipy comes with it.)

Tuning half only: the even-indexed HotpotQA dev rows (``rows[0::2]``), top-5 of each
question's own paragraphs by each retriever, one candidate per sentence exactly as
``rootweaver eval packing`` builds them. Labels (used here, offline, never by the policy):
a document is a gold paragraph; a sentence contains the normalised answer.

1. Documents: L2-regularised logistic regression (penalty ||w||^2 / (2C), C = 1, bias
   unpenalised) of "gold paragraph" on the shipped ``document_features``, by Newton's method.
2. Sentences: conditional logit (a softmax over each question's candidates) of "holds the
   answer" on the shipped ``evidence_features`` computed with step 1's fitted document
   likelihoods, over the non-yes/no questions with at least one answer sentence; features
   standardised, penalty ``l2 * ||w||^2`` (l2 = 10) on the standardised scale, L-BFGS.

Prints both weight tables as Python beside the shipped values; deterministic.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from evals.datasets import DATASETS, DEFAULT_CACHE, DEFAULT_DATA_ROOT, build_open_pool
from evals.packing import RETRIEVERS, TOP_K, EmbeddingCache, make_retriever, sentence_candidates
from rootweaver_innovations.corpus import CorpusError, load_qa_rows
from rootweaver_innovations.diagnostics import answer_in_context
from rootweaver_innovations.packing import Budget, default_token_counter, pack, register_policy
from rootweaver_innovations.packing.evidence import (
    DOCUMENT_BIAS,
    DOCUMENT_WEIGHTS,
    EVIDENCE_WEIGHTS,
    _document_likelihood,
    document_features,
    evidence_features,
)
from rootweaver_innovations.packing.policies import POLICIES, PackingProblem, Selection

_CAPTURED: list[PackingProblem] = []


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


def _problems(rows, retriever: str, embed: EmbeddingCache | None, budget: Budget):
    """(row, gold ids, captured problem) for each row with candidates."""
    out = []
    for row in rows:
        own = build_open_pool([row])
        hits = make_retriever(retriever, own.passages, embed).search(row.question, TOP_K)
        cands = sentence_candidates(row.question, [h.passage for h in hits])
        if cands:
            _CAPTURED.clear()
            pack("_capture_problem", cands, row.question, budget)
            out.append((row, own.gold[0], _CAPTURED[0]))
    return out


def _print_table(name: str, table: tuple[tuple[str, float], ...], new: np.ndarray) -> None:
    shipped = np.array([v for _, v in table])
    print(f"{name} = (")
    for (n, old), v in zip(table, new):
        print(f"    ({n!r}, {v:.3f}),  # shipped {old:.3f}")
    print(f")  # max |diff| {np.abs(new - shipped).max():.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_ROOT / DATASETS["hotpotqa"])
    ap.add_argument("--retrievers", default="bm25,dense")
    ap.add_argument("--doc-c", type=float, default=1.0)
    ap.add_argument("--l2", type=float, default=10.0)
    args = ap.parse_args()
    retrievers = args.retrievers.split(",")
    unknown = [r for r in retrievers if r not in RETRIEVERS]
    if unknown:
        ap.error(f"unknown retriever(s) {unknown}; choose from {list(RETRIEVERS)}")
    if "_capture_problem" not in POLICIES:
        register_policy("_capture_problem", _capture)
    budget = Budget.tokens(160, default_token_counter())
    try:
        rows = load_qa_rows(args.data)[0::2]
    except CorpusError as exc:
        ap.error(str(exc))
    embed = None
    if any(r != "bm25" for r in retrievers):
        embed = EmbeddingCache(DEFAULT_CACHE)
        embed.passages(build_open_pool(rows).passages)
    captured = [item for r in retrievers for item in _problems(rows, r, embed, budget)]

    doc_x, doc_y = [], []
    for _row, gold, pr in captured:
        doc_x.append(document_features(pr))
        first = {}
        for c, d in zip(pr.candidates, pr.doc_index.tolist()):
            first.setdefault(d, c.doc_id)
        doc_y.append([float(first[d] in gold) for d in range(len(first))])
    w_doc, b_doc = fit_logistic(np.vstack(doc_x), np.concatenate(doc_y), args.doc_c)

    groups = []
    for (row, _gold, pr), feats in zip(captured, doc_x):
        if row.answer.strip().lower() in ("yes", "no"):
            continue
        y = np.array([float(answer_in_context(row.answer, c.text)) for c in pr.candidates])
        if y.any():
            groups.append((evidence_features(pr, _document_likelihood(feats, w_doc, b_doc)), y))
    w_sent = fit_conditional_logit(groups, args.l2)

    print(f"{len(captured)} problems ({', '.join(retrievers)}); {sum(map(len, doc_y))} documents, "
          f"{len(groups)} answer groups, {sum(len(t) for _, t in groups)} sentences")
    _print_table("DOCUMENT_WEIGHTS", DOCUMENT_WEIGHTS, w_doc)
    print(f"DOCUMENT_BIAS = {b_doc:.3f}  # shipped {DOCUMENT_BIAS:.3f}")
    _print_table("EVIDENCE_WEIGHTS", EVIDENCE_WEIGHTS, w_sent)


if __name__ == "__main__":
    main()
