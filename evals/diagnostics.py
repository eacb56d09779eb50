"""Diagnostics of a packed reader context and of answers: pure functions, no I/O.

Text normalisation is the official SQuAD / HotpotQA one (:func:`normalize_answer`):
lowercase, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace. Tokens
are the whitespace-split normalised text. Gold labels enter here, after packing; nothing in
this module is ever called by a selector.

- answer-in-context: some normalised gold answer is a contiguous token run of the
  normalised packed context;
- gold-doc reader coverage / all-gold-in-reader: share (all) of the gold documents that
  contribute at least one snippet to the packed context;
- gold-token density: share of the packed context's tokens that come from gold documents;
- recall@k / all-gold@k: on the retrieved ranking, before packing;
- EM / F1: HotpotQA's official answer scoring (yes/no/noanswer must match exactly);
- a paired bootstrap confidence interval for the mean difference of two systems.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BootstrapCI",
    "all_gold_at_k",
    "all_gold_in_reader",
    "answer_in_context",
    "exact_match",
    "f1_score",
    "gold_doc_coverage",
    "gold_token_density",
    "normalize_answer",
    "paired_bootstrap_ci",
    "recall_at_k",
]

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    """The official SQuAD / HotpotQA normalisation.

    >>> normalize_answer("The  Eiffel-Tower, Paris!")
    'eiffeltower paris'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _answers(gold: str | Sequence[str]) -> list[str]:
    answers = [gold] if isinstance(gold, str) else list(gold)
    if not answers:
        raise ValueError("at least one gold answer is required")
    return answers


def _gold_set(gold_doc_ids: Iterable[str]) -> set[str]:
    gold = set(gold_doc_ids)
    if not gold:
        raise ValueError("at least one gold document id is required")
    return gold


def answer_in_context(gold: str | Sequence[str], context: str) -> bool:
    """True if some normalised gold answer occurs as a contiguous token run of the context.

    Answers that normalise to nothing never match.

    >>> answer_in_context("The Beatles", "Yesterday | A song by the Beatles, 1965.")
    True
    >>> answer_in_context("1965", "It came out in 19 65.")
    False
    >>> answer_in_context(["Paris", "Lutetia"], "Old Lutetia stood there.")
    True
    """
    ctx = normalize_answer(context).split()
    for answer in _answers(gold):
        ans = normalize_answer(answer).split()
        k = len(ans)
        if k and any(ctx[i : i + k] == ans for i in range(len(ctx) - k + 1)):
            return True
    return False


def gold_doc_coverage(context_doc_ids: Iterable[str], gold_doc_ids: Iterable[str]) -> float:
    """Share of gold documents with at least one snippet in the packed context.

    >>> gold_doc_coverage(["A", "C", "A"], ["A", "B"])
    0.5
    """
    gold = _gold_set(gold_doc_ids)
    return len(gold.intersection(context_doc_ids)) / len(gold)


def all_gold_in_reader(context_doc_ids: Iterable[str], gold_doc_ids: Iterable[str]) -> bool:
    """Whether every gold document has a snippet in the packed context.

    >>> all_gold_in_reader(["B", "A"], ["A", "B"]), all_gold_in_reader(["A"], ["A", "B"])
    (True, False)
    """
    return _gold_set(gold_doc_ids).issubset(context_doc_ids)


def gold_token_density(snippets: Sequence[tuple[str, str]], gold_doc_ids: Iterable[str]) -> float:
    """Share of the packed context's normalised tokens that come from gold documents.

    ``snippets`` are ``(doc_id, text)`` pairs of the packed context; an empty context has
    density 0.0. Worked example: "The cat sat" normalises to 2 tokens (gold doc A), "a dog
    ran far" to 3 (doc B), so 2 / 5.

    >>> gold_token_density([("A", "The cat sat"), ("B", "a dog ran far")], ["A"])
    0.4
    """
    gold = _gold_set(gold_doc_ids)
    total = from_gold = 0
    for doc_id, text in snippets:
        n = len(normalize_answer(text).split())
        total += n
        if doc_id in gold:
            from_gold += n
    return from_gold / total if total else 0.0


def _top_k(ranked_doc_ids: Sequence[str], k: int) -> set[str]:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    return set(list(dict.fromkeys(ranked_doc_ids))[:k])


def recall_at_k(ranked_doc_ids: Sequence[str], gold_doc_ids: Iterable[str], k: int) -> float:
    """Share of gold documents among the first ``k`` distinct retrieved ids.

    >>> recall_at_k(["A", "A", "C", "B"], ["A", "B"], 2)
    0.5
    """
    gold = _gold_set(gold_doc_ids)
    return len(gold & _top_k(ranked_doc_ids, k)) / len(gold)


def all_gold_at_k(ranked_doc_ids: Sequence[str], gold_doc_ids: Iterable[str], k: int) -> bool:
    """Whether all gold documents are among the first ``k`` distinct retrieved ids.

    >>> all_gold_at_k(["A", "C", "B"], ["A", "B"], 2), all_gold_at_k(["A", "C", "B"], ["A", "B"], 3)
    (False, True)
    """
    return _gold_set(gold_doc_ids).issubset(_top_k(ranked_doc_ids, k))


def exact_match(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals some normalised gold answer, else 0.0.

    >>> exact_match("the Eiffel Tower.", "Eiffel Tower"), exact_match("Tower", "Eiffel Tower")
    (1.0, 0.0)
    """
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _answers(gold)))


def _f1(prediction: str, gold: str) -> float:
    pred, truth = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or truth in _SPECIAL) and pred != truth:
        return 0.0
    pred_tokens, truth_tokens = pred.split(), truth.split()
    same = sum((Counter(pred_tokens) & Counter(truth_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: str | Sequence[str]) -> float:
    """HotpotQA's token F1, the best over the gold answers.

    yes / no / noanswer score 0 unless matched exactly. Worked example: "the big red
    barn" -> [big, red, barn], gold "red barn" -> [red, barn]: 2 shared tokens, precision
    2/3, recall 1, F1 = 2 * (2/3) / (5/3) = 0.8.

    >>> f1_score("the big red barn", "red barn")
    0.8
    >>> f1_score("yes", "yes indeed"), f1_score("no", "No.")
    (0.0, 1.0)
    """
    return max(_f1(prediction, g) for g in _answers(gold))


@dataclass(frozen=True, slots=True)
class BootstrapCI:
    """Mean of ``a - b``, its percentile interval, a two-sided bootstrap p-value, and ``n``."""

    mean_diff: float
    low: float
    high: float
    p_value: float
    n: int


def paired_bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapCI:
    """Paired bootstrap of the mean of ``a[i] - b[i]`` (same questions, two systems).

    Resamples question indices with replacement ``n_resamples`` times (numpy
    ``default_rng(seed)``). The interval is the percentile interval at ``confidence``; the
    p-value is ``min(1, 2 * min(P(d <= 0), P(d >= 0)))`` over the resampled means. Raises
    ``ValueError`` for unequal or empty inputs or bad parameters. Identical systems give a
    zero-width interval at 0 and p = 1:

    >>> paired_bootstrap_ci([1, 0, 1], [1, 0, 1], n_resamples=100)
    BootstrapCI(mean_diff=0.0, low=0.0, high=0.0, p_value=1.0, n=3)
    >>> ci = paired_bootstrap_ci([1, 1, 1, 1], [0, 0, 0, 0], n_resamples=100)
    >>> ci.mean_diff, ci.low, ci.high, ci.p_value
    (1.0, 1.0, 1.0, 0.0)
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size == 0:
        raise ValueError(f"a and b must be equal-length non-empty 1-D sequences, got {x.shape} and {y.shape}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    d = x - y
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_resamples, d.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    p = min(1.0, 2.0 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0))))
    return BootstrapCI(float(d.mean()), float(low), float(high), p, int(d.size))
