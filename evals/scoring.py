"""Evaluation-only scoring of reader replies: gold cited lines, the EBG metric and the
LLM-judge prompt. None of it runs in the product (it reads gold labels).

``Ans`` = some normalised gold answer is a contiguous token run of the normalised prediction
(``diagnostics.answer_in_context``, SQuAD normalisation), so "It was Paris." counts for
"Paris" but "nothing" not for "no"; ``Evid`` (strict) = every gold line is cited (extra
citations allowed; no gold line in the context means Evid is false); ``Joint`` = both.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rootweaver_capabilities.readers.prompts import NumberedContext, _first_json_object
from evals.diagnostics import answer_in_context

__all__ = ["EBGScore", "gold_line_ids", "judge_messages", "parse_judge_score", "score_ebg"]


def gold_line_ids(numbered: NumberedContext, gold_facts: Collection[tuple[str, str]]) -> frozenset[int]:
    """Ids of the numbered facts whose ``(title, sentence)`` is a gold fact (whitespace-folded)."""
    gold = {(" ".join(t.split()), " ".join(s.split())) for t, s in gold_facts}
    return frozenset(i for i, f in enumerate(numbered.facts, start=1) if (" ".join(f.title.split()), f.body) in gold)



@dataclass(frozen=True, slots=True)
class EBGScore:
    ans: bool
    evid: bool
    joint: bool


def score_ebg(
    prediction: str, gold_answers: Sequence[str], cited_ids: Collection[int], gold_ids: Collection[int]
) -> EBGScore:
    """Ans / strict Evid / Joint for one question (see the module docstring)."""
    ans = answer_in_context(list(gold_answers), prediction)
    evid = bool(gold_ids) and set(gold_ids) <= set(cited_ids)
    return EBGScore(ans, evid, ans and evid)


JUDGE_SYSTEM = (
    "You grade answers to questions. Given the question, the gold answer and a predicted "
    'answer, reply with only a JSON object {"score": S}: S = 1 when the prediction states '
    "the gold answer (other wording is fine), 0.5 when it is partly right, 0 otherwise."
)
_NUMBER = re.compile(r"(?<![\w.])(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)(?![\w.])")


def judge_messages(question: str, gold: str, prediction: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Question: {question}\nGold answer: {gold}\nPredicted answer: {prediction}\nJSON:"},
    ]


def parse_judge_score(reply: str) -> float | None:
    """The judge's score in [0, 1]: ``{"score": s}`` first, else the first bare number in
    [0, 1] in the reply; ``None`` when there is none (an unscored reply, counted as such)."""
    obj = _first_json_object(reply)
    if obj is not None and isinstance(obj.get("score"), int | float) and not isinstance(obj["score"], bool):
        score = float(obj["score"])
        return score if 0.0 <= score <= 1.0 else None
    m = _NUMBER.search(reply)
    return float(m.group(1)) if m else None
