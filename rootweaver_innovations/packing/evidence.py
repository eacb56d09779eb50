"""The ``evidence`` packing policy: answer-likelihood scores, then an exact covering knapsack.

Why the other packers lose on multi-hop questions: their scores are lexical relevance, and
the sentence that holds the answer of a bridge question usually shares few words with the
question (it is in the *second* paragraph, reached through an entity the first one names).
Per-token gains make it worse by favouring short, low-information sentences.

This policy scores each candidate with a fixed logistic model of "this sentence holds the
answer", built only from what every policy sees (text, relevance, document, position, the
question) and never from a label, then packs by an exact dynamic programme:

1. **Score** (:func:`evidence_features`, :data:`EVIDENCE_WEIGHTS`): relevance and its rank,
   being its document's best sentence, a lead-sentence prior (a Wikipedia paragraph's
   first sentence names its entity and its key facts), the document's retrieval rank,
   query-term coverage, answer-type cues (years for *when*, numbers for *how many*),
   capitalised words the question does not already contain, bridge links (the sentence
   names another candidate document's title, or its document's title is named by another
   document), the title named in the question, the options of a comparison question, cost.
   The weights were fitted once, by logistic regression on the even-indexed half of the
   HotpotQA dev questions (see ``docs/packing_results.md``), and are constants here.
2. **Pack** (:func:`evidence_policy`): maximise ``sum (p_i - price) + sum_d bonus_d [d covered]``
   under the token (or char) capacity, where each document contributes one or two of its
   ``options_per_doc`` best sentences and ``bonus_d = doc_bonus / (1 + rank_decay * r_d)``
   rewards covering retrieved documents (``r_d`` its retrieval rank): a multiple-choice
   knapsack solved exactly by dynamic programming over the capacity (costs are the
   ledger's integer costs). The chosen sentences are taken best first, then the rest of
   the budget is filled by score with any candidate that still fits and whose likelihood
   exceeds the price (:class:`EvidenceParams`; defaults chosen on the same tuning half).

The title of a candidate is its ``source`` when set, else its ``doc_id`` (the synthesis
compactor uses titles as document ids). Ties break by input order, so the policy is
deterministic. When every candidate fits (within the snippet cap) it takes them all, so
packing its own output is a no-op.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .policies import PackingProblem, Selection, register_policy

__all__ = [
    "EVIDENCE_BIAS",
    "EVIDENCE_WEIGHTS",
    "EvidenceParams",
    "answer_likelihood",
    "evidence_features",
    "evidence_policy",
]

EVIDENCE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("relevance", 1.158),  # relevance / max relevance
    ("relevance_rank", 0.308),  # 1 / (1 + rank by relevance)
    ("doc_best", 0.411),  # the best-scored sentence of its document
    ("lead", 0.732),  # first sentence of its document
    ("second", 0.320),  # second sentence of its document
    ("doc_rank_1", -0.085),  # document retrieval rank 1 (0-based; rank 0 is the base)
    ("doc_rank_2", -0.479),
    ("doc_rank_3", -0.632),
    ("doc_rank_4+", -0.506),
    ("query_coverage", 0.576),  # share of query content terms in the sentence
    ("year_cue", 0.456),  # a when/what-year question and a year in the sentence
    ("number_cue", 0.311),  # a how-many/much/long/old question and a digit in the sentence
    ("new_capitals", 0.699),  # capitalised words absent from the question (after the 1st word), /5 capped
    ("bridge_out", 0.917),  # names another candidate document's title
    ("bridge_in", 1.006),  # its document's title is named by another document's sentence
    ("title_in_question", -0.452),  # its document's title occurs in the question
    ("log_cost", 0.207),  # log of the ledger cost
    ("pronoun_start", -0.065),  # starts with He/She/It/They/His/Her/Its/Their/This/These
    ("doc_mass", 0.099),  # its document's share of the total relevance
    ("new_number", -0.188),  # a number absent from the question
    ("question_capitals", -0.775),  # share of the question's capitalised words it contains
    ("who_new_capitals", -0.211),  # new_capitals on a who-question
    ("where_new_capitals", -0.212),  # new_capitals on a where/which-city/country question
    ("lead_of_top_doc", 0.530),  # lead sentence of the top-ranked document
    ("relevance_x_lead", -0.399),
    ("comparison_option", 1.943),  # question_capitals on an either/or or "both" question
    ("bridge_in_lead", 0.324),  # bridge_in and lead
    ("any_year", 0.108),  # a year in the sentence
)
EVIDENCE_BIAS = -4.836

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\d+")
_CAPITAL = re.compile(r"\b[A-Z][\w'\-]*")
_PRONOUN = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|This|These)\b")
_PAREN = re.compile(r"\s*\(.*\)$")
_WEIGHTS = np.array([w for _name, w in EVIDENCE_WEIGHTS])


@dataclass(frozen=True, slots=True)
class EvidenceParams:
    """Packing parameters (chosen on the tuning half, see the module docstring).

    ``doc_bonus`` (>= 0) is the value of covering the top document, ``rank_decay`` (>= 0)
    how fast it falls with the document's retrieval rank; ``price`` (>= 0) is charged per
    sentence taken, so a sentence whose likelihood is below it is taken only to cover its
    document (and never as filler); ``options_per_doc`` (>= 1) how many of a document's
    best sentences the knapsack considers, ``max_per_doc`` (1 or 2) how many it may take
    from one document. Bad values raise ``ValueError``.
    """

    doc_bonus: float = 0.2
    rank_decay: float = 0.1
    price: float = 0.03
    options_per_doc: int = 3
    max_per_doc: int = 2

    def __post_init__(self) -> None:
        for name in ("doc_bonus", "rank_decay", "price"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        opts = self.options_per_doc
        if isinstance(opts, bool) or not isinstance(opts, int) or opts < 1:
            raise ValueError(f"options_per_doc must be an int >= 1, got {self.options_per_doc!r}")
        if self.max_per_doc not in (1, 2) or isinstance(self.max_per_doc, bool):
            raise ValueError(f"max_per_doc must be 1 or 2, got {self.max_per_doc!r}")


def _question_kind(question: str) -> tuple[bool, bool, bool, bool, bool]:
    """``(when, how_many, who, where, comparison)`` cues from the question's wording."""
    q = question.lower()
    when = q.startswith("when") or any(k in q for k in ("what year", "which year", "what date"))
    how_many = any(k in q for k in ("how many", "how much", "how long", "how old", "how tall"))
    who = q.startswith("who") or " who " in q or "what person" in q
    where = q.startswith("where") or any(
        k in q for k in ("what city", "what country", "which city", "which country", "what state")
    )
    comparison = " or " in q or "both" in q
    return when, how_many, who, where, comparison


_PARSED: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool, bool]] = {}
_PARSED_MAX = 65536


def _parse(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool]:
    """Question-independent parse of a text, memoised (bounded) like the token counts:
    ``(lowercased capitalised words, numbers, has a year, starts with a pronoun)``."""
    hit = _PARSED.get(text)
    if hit is None:
        hit = (
            tuple(w.lower() for w in _CAPITAL.findall(text)),
            tuple(_NUMBER.findall(text)),
            _YEAR.search(text) is not None,
            _PRONOUN.match(text) is not None,
        )
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = hit
    return hit


def _text_features(text: str, q_low: str, q_capitals: set[str]) -> tuple[float, ...]:
    """``(new_capitals, question_capitals, any_year, new_number, digit, pronoun_start)`` of one text."""
    caps, numbers, year, pronoun = _parse(text)
    new_caps = min(5, sum(w not in q_low for w in caps[1:])) / 5
    q_caps = len(q_capitals.intersection(caps)) / max(1, len(q_capitals))
    return new_caps, q_caps, year, any(m not in q_low for m in numbers), bool(numbers), pronoun


def evidence_features(problem: PackingProblem) -> np.ndarray:
    """The ``(n, len(EVIDENCE_WEIGHTS))`` feature matrix of the problem's candidates (columns in that order)."""
    cands = problem.candidates
    n = len(cands)
    if n == 0:
        return np.zeros((0, len(EVIDENCE_WEIGHTS)))
    relevance = problem.relevance
    doc = problem.doc_index
    positions = np.fromiter((c.position for c in cands), dtype=np.int64, count=n)
    top = relevance.max()
    rel = relevance / top if top > 0 else np.zeros(n)
    rank = np.empty(n)
    rank[np.lexsort((np.arange(n), positions, -relevance))] = np.arange(n)
    n_doc = int(doc.max()) + 1
    by_doc = np.lexsort((np.arange(n), positions, doc))  # grouped by document, in position order
    sorted_doc = doc[by_doc]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_doc[1:] != sorted_doc[:-1]
    starts = np.flatnonzero(new_group)
    in_doc = np.empty(n)  # sentence index inside its document
    in_doc[by_doc] = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    first = np.full(n_doc, np.iinfo(np.int64).max)
    first[sorted_doc[starts]] = positions[by_doc[starts]]
    doc_rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")[doc]
    lead = (in_doc == 0).astype(np.float64)
    doc_max = np.zeros(n_doc)
    np.maximum.at(doc_max, doc, relevance)
    doc_mass = np.bincount(doc, weights=relevance, minlength=n_doc)
    total = doc_mass.sum()
    mass = doc_mass[doc] / total if total > 0 else np.zeros(n)
    terms = problem.incidence.shape[1]
    coverage = problem.incidence.sum(axis=1) / terms if terms else np.zeros(n)

    question = problem.query
    q_low = question.lower()
    when, how_many, who, where, comparison = _question_kind(question)
    q_capitals = {w.lower() for w in _CAPITAL.findall(question)[1:]}
    texts = [c.text for c in cands]
    new_caps, q_caps, has_year, new_number, digit, pronoun = np.array(
        [_text_features(t, q_low, q_capitals) for t in texts], dtype=np.float64
    ).T

    doc_list = doc.tolist()
    titles: dict[int, str] = {}
    for c, d in zip(cands, doc_list):
        if d not in titles:
            titles[d] = _PAREN.sub("", c.source if c.source is not None else c.doc_id).lower()
    lowered = [t.lower() for t in texts]  # lowercasing may change lengths: offsets from these
    joined = "\n".join(lowered)
    ends, end = [], 0
    for t in lowered:
        end += len(t) + 1
        ends.append(end)
    bridge_out = np.zeros(n)
    target = np.zeros(n_doc)
    for d, t in titles.items():
        at = joined.find(t) if t else -1
        while at >= 0:
            i = bisect_right(ends, at)
            if doc_list[i] != d and at + len(t) < ends[i]:  # inside one text, of another document
                bridge_out[i] = 1.0
                target[d] = 1.0
            at = joined.find(t, at + 1)
    bridge_in = target[doc]
    title_in_q = np.array([1.0 if titles.get(d) and titles[d] in q_low else 0.0 for d in range(n_doc)])[doc]

    return np.column_stack([
        rel, 1.0 / (1.0 + rank), relevance >= doc_max[doc], lead, in_doc == 1,
        doc_rank == 1, doc_rank == 2, doc_rank == 3, doc_rank >= 4, coverage,
        has_year * when, digit * how_many, new_caps, bridge_out, bridge_in, title_in_q,
        np.log(np.maximum(problem.knapsack.item, 1)), pronoun, mass, new_number, q_caps, new_caps * who,
        new_caps * where, lead * (doc_rank == 0), rel * lead, q_caps * comparison, bridge_in * lead, has_year,
    ]).astype(np.float64)


def answer_likelihood(problem: PackingProblem) -> np.ndarray:
    """Each candidate's modelled probability of holding the answer (a fixed logistic model)."""
    return 1.0 / (1.0 + np.exp(-(evidence_features(problem) @ _WEIGHTS + EVIDENCE_BIAS)))


def _cover(p: np.ndarray, problem: PackingProblem, params: EvidenceParams) -> list[int]:
    """Exact multiple-choice knapsack: at most one option per document, most total value within capacity.

    A document's options are 1..``max_per_doc`` of its ``options_per_doc`` best sentences by
    ``p`` (ties by input order), worth ``bonus_d + sum(p) - k * price``. Documents are taken
    in the order they first appear (``doc_index`` numbers them so), which is their rank.
    On equal value the earlier option, and not taking the document at all, win.
    """
    cost = problem.knapsack.item
    cap = int(problem.knapsack.capacity)
    doc = problem.doc_index
    n = len(doc)
    grouped = np.lexsort((np.arange(n), -p, doc))
    grouped_doc = doc[grouped]
    bounds = np.flatnonzero(np.concatenate(([True], grouped_doc[1:] != grouped_doc[:-1], [True])))
    cost_of, p_of, order = cost.tolist(), p.tolist(), grouped.tolist()
    grid = np.arange(cap + 1)
    at = grid + (cap + 1)
    # padded[cap + 1 + w]: most value at used capacity w; the left half (-inf) absorbs w < 0
    padded = np.full(2 * (cap + 1), -np.inf)
    padded[cap + 1] = 0.0
    best = padded[cap + 1:]  # a view
    trail = []
    for r in range(len(bounds) - 1):
        members = order[bounds[r]:bounds[r + 1]][: params.options_per_doc]
        subsets = [sub for k in range(1, params.max_per_doc + 1) for sub in combinations(members, k)]
        opt_cost = [sum(cost_of[i] for i in sub) for sub in subsets]
        bonus = params.doc_bonus / (1.0 + params.rank_decay * r)
        opt_value = [bonus + sum(p_of[i] for i in sub) - len(sub) * params.price for sub in subsets]
        shift = np.array([min(c, cap + 1) for c in opt_cost])
        value = padded[at - shift[:, None]]
        value += np.array(opt_value)[:, None]
        j = value.argmax(axis=0)
        top = value[j, grid]
        better = top > best
        trail.append((better, j, subsets, opt_cost))
        np.maximum(best, top, out=best)
    w = int(np.argmax(best))
    chosen: list[int] = []
    for better, j, subsets, opt_cost in reversed(trail):
        if better[w]:
            k = int(j[w])
            chosen.extend(subsets[k])
            w -= opt_cost[k]
    return chosen


def evidence_policy(problem: PackingProblem, params: EvidenceParams = EvidenceParams()) -> Selection:
    """Pack ``problem`` (see the module docstring); gains are the answer likelihoods."""
    knap = problem.knapsack
    knap.reset()
    n = len(problem.candidates)
    if n == 0:
        return Selection((), ())
    p = answer_likelihood(problem)
    if n <= problem.cap and int(knap.item.sum() + knap.group_cost.sum()) <= knap.capacity:
        return Selection(tuple(range(n)), tuple(float(x) for x in p))
    by_score = np.lexsort((np.arange(n), -p))
    chosen = set(_cover(p, problem, params))
    order: list[int] = []
    for pass_ in (by_score[[i in chosen for i in by_score]], by_score[p[by_score] > params.price]):
        for i in pass_.tolist():
            if len(order) == problem.cap:
                break
            if not knap.taken[i] and knap.used + knap.marginal_of(i) <= knap.capacity:
                knap.take(i)
                order.append(i)
    return Selection(tuple(order), tuple(float(p[i]) for i in order))


register_policy("evidence", evidence_policy)
