"""Diagnostics against the official HotpotQA/SQuAD scoring and hand-computed examples."""

from __future__ import annotations

import doctest
import re
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.diagnostics as diag
from evals.diagnostics import (
    all_gold_at_k,
    answer_in_context,
    exact_match,
    f1_score,
    gold_doc_coverage,
    gold_token_density,
    normalize_answer,
    paired_bootstrap_ci,
    recall_at_k,
)


# Reference: hotpot_evaluate_v1.py (HotpotQA, Apache-2.0), normalize_answer / f1_score /
# exact_match_score as published, reduced to the F1 value.
def ref_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def ref_f1(prediction, ground_truth):
    normalized_prediction = ref_normalize_answer(prediction)
    normalized_ground_truth = ref_normalize_answer(ground_truth)
    if normalized_prediction in ["yes", "no", "noanswer"] and normalized_prediction != normalized_ground_truth:
        return 0
    if normalized_ground_truth in ["yes", "no", "noanswer"] and normalized_prediction != normalized_ground_truth:
        return 0
    prediction_tokens = normalized_prediction.split()
    ground_truth_tokens = normalized_ground_truth.split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


answers = st.one_of(
    st.text(max_size=25),
    st.lists(st.sampled_from(["The", "a", "an", "Paris", "yes", "no", "noanswer", "1965", "U.S.", "big,", "red"]),
             max_size=5).map(" ".join),
)


def test_docstring_examples():
    result = doctest.testmod(diag)
    assert result.attempted >= 15 and result.failed == 0


@settings(max_examples=500, deadline=None)
@given(answers, answers)
def test_matches_the_official_normalisation_em_and_f1(prediction, gold):
    assert normalize_answer(prediction) == ref_normalize_answer(prediction)
    assert f1_score(prediction, gold) == pytest.approx(ref_f1(prediction, gold))
    assert exact_match(prediction, gold) == float(ref_normalize_answer(prediction) == ref_normalize_answer(gold))


@settings(max_examples=300, deadline=None)
@given(answers, answers, answers)
def test_answer_embedded_between_words_is_in_context(before, answer, after):
    context = f"{before} {answer} {after}"
    assert answer_in_context(answer, context) == bool(normalize_answer(answer))
    # and a context is always judged against every alias
    assert answer_in_context([answer, "zzqx"], context) == answer_in_context(answer, context)


def test_answer_in_context_worked_examples():
    # "U.S. Navy" -> "us navy"; context -> "he served in us navy": contiguous run, True
    assert answer_in_context("U.S. Navy", "He served in the US Navy.")
    # punctuation is deleted, not turned into a boundary: "navy; seal" -> "navy seal"
    assert answer_in_context("Navy Seal", "US Navy; Seal Beach")
    # whole tokens only: "art" is not a token of "the artist"
    assert not answer_in_context("art", "The artist")
    # an answer that normalises to nothing never matches
    assert not answer_in_context("The", "the end")


def test_coverage_density_and_recall_worked_examples():
    # packed snippets from docs A, A, C; gold {A, B}: coverage 1/2, not all gold
    assert gold_doc_coverage(["A", "A", "C"], ["A", "B"]) == 0.5
    assert not diag.all_gold_in_reader(["A", "A", "C"], ["A", "B"])
    # density: A "Paris is big" -> 3 tokens; C "the river Seine" -> 2 ("the" dropped)
    assert gold_token_density([("A", "Paris is big"), ("C", "the river Seine")], ["A", "B"]) == 3 / 5
    assert gold_token_density([], ["A"]) == 0.0
    # ranking A, C, A, B: distinct top-2 {A, C} -> 1/2; top-3 {A, C, B} -> all gold
    assert recall_at_k(["A", "C", "A", "B"], ["A", "B"], 2) == 0.5
    assert all_gold_at_k(["A", "C", "A", "B"], ["A", "B"], 3)


def test_f1_takes_the_best_alias():
    # "new york city" vs "New York": 2 shared, P 2/3, R 1 -> 0.8; vs alias "NYC": 0
    assert f1_score("new york city", ["NYC", "New York"]) == pytest.approx(0.8)
    assert exact_match("nyc", ["NYC", "New York"]) == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: gold_doc_coverage(["A"], []), "at least one gold document id is required"),
        (lambda: recall_at_k(["A"], ["A"], 0), "k must be a positive int, got 0"),
        (lambda: f1_score("x", []), "at least one gold answer is required"),
        (lambda: paired_bootstrap_ci([1, 2], [1]),
         "a and b must be equal-length non-empty 1-D sequences, got (2,) and (1,)"),
        (lambda: paired_bootstrap_ci([], []),
         "a and b must be equal-length non-empty 1-D sequences, got (0,) and (0,)"),
        (lambda: paired_bootstrap_ci([1], [0], confidence=1.0), "confidence must be in (0, 1), got 1.0"),
        (lambda: paired_bootstrap_ci([1], [0], n_resamples=0), "n_resamples must be a positive int, got 0"),
    ],
)
def test_bad_inputs_raise(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30), st.integers(0, 99))
def test_paired_bootstrap_is_seeded_and_brackets_the_mean(pairs, seed):
    a, b = zip(*pairs)
    ci = paired_bootstrap_ci(a, b, n_resamples=500, seed=seed)
    assert ci == paired_bootstrap_ci(a, b, n_resamples=500, seed=seed)
    diffs = [x - y for x, y in pairs]
    assert min(diffs) - 1e-12 <= ci.low <= ci.high <= max(diffs) + 1e-12
    assert 0.0 <= ci.p_value <= 1.0 and ci.n == len(pairs)
    swapped = paired_bootstrap_ci(b, a, n_resamples=500, seed=seed)
    assert swapped.mean_diff == pytest.approx(-ci.mean_diff) and swapped.p_value == pytest.approx(ci.p_value)


def test_paired_bootstrap_on_a_clear_win():
    # system a is right on 8 of 10 questions, b on 2 of them (both right on the same 2)
    a = [1] * 8 + [0] * 2
    b = [1] * 2 + [0] * 8
    ci = paired_bootstrap_ci(a, b, n_resamples=2000, seed=42)
    assert ci.mean_diff == pytest.approx(0.6)  # (8 - 2) / 10
    assert 0.2 <= ci.low < 0.6 < ci.high <= 0.9 and ci.p_value < 0.01
