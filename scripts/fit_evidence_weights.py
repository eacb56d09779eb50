"""Refit the ``evidence`` packer's logistic answer-likelihood weights (the record of how
``EVIDENCE_WEIGHTS`` / ``EVIDENCE_BIAS`` in ``rootweaver_innovations/packing/evidence.py``
were made).

Usage: python scripts/fit_evidence_weights.py [--data PATH] [--c 0.3]

Tuning half only: the even-indexed HotpotQA dev rows (``rows[0::2]``), non-yes/no answers,
top-5 of each question's own paragraphs by BM25, one candidate per sentence exactly as
``rootweaver eval packing`` builds them. Features: the shipped ``evidence_features``. Label
(used here, offline, never by the policy): the sentence contains the normalised answer.
Model: L2-regularised logistic regression (penalty ||w||^2 / (2C) on the summed log-loss,
bias unpenalised, as scikit-learn's ``LogisticRegression(C=...)``), fitted by Newton's
method. Prints the weights beside the shipped ones; deterministic, no sampling.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from evals.datasets import DATASETS, DEFAULT_DATA_ROOT
from evals.packing import TOP_K, sentence_candidates
from rootweaver_innovations.corpus import load_qa_rows
from rootweaver_innovations.diagnostics import answer_in_context
from rootweaver_innovations.packing import Budget, default_token_counter, pack, register_policy
from rootweaver_innovations.packing.evidence import EVIDENCE_BIAS, EVIDENCE_WEIGHTS, evidence_features
from rootweaver_innovations.packing.policies import POLICIES, Selection
from rootweaver_innovations.retrieval import BM25Retriever

_CAPTURED: list = []


def _capture(problem) -> Selection:
    _CAPTURED.append((evidence_features(problem), problem.candidates))
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_ROOT / DATASETS["hotpotqa"])
    ap.add_argument("--c", type=float, default=0.3)
    args = ap.parse_args()
    if "_capture_features" not in POLICIES:
        register_policy("_capture_features", _capture)
    budget = Budget.tokens(160, default_token_counter())
    xs, ys = [], []
    for row in load_qa_rows(args.data)[0::2]:
        if row.answer.strip().lower() in ("yes", "no"):
            continue
        hits = BM25Retriever(row.passages).search(row.question, TOP_K)
        cands = sentence_candidates(row.question, [h.passage for h in hits])
        if not cands:
            continue
        _CAPTURED.clear()
        pack("_capture_features", cands, row.question, budget)
        feats, eligible = _CAPTURED[0]
        xs.append(feats)
        ys.append([float(answer_in_context(row.answer, c.text)) for c in eligible])
    x, y = np.vstack(xs), np.concatenate(ys)
    w, b = fit_logistic(x, y, args.c)
    shipped = np.array([v for _, v in EVIDENCE_WEIGHTS])
    print(f"{x.shape[0]} sentences, {int(y.sum())} positive, C={args.c}")
    for (name, old), new in zip(EVIDENCE_WEIGHTS, w):
        print(f"    ({name!r}, {new:.3f}),   # shipped {old:.3f}")
    print(f"bias {b:.3f} (shipped {EVIDENCE_BIAS:.3f}); max |diff| {np.abs(w - shipped).max():.3f}")


if __name__ == "__main__":
    main()
