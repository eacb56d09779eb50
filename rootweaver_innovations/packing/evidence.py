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
2. **Pack** (:func:`evidence_policy`): maximise ``sum p_i + sum_d bonus_d [d covered]``
   under the token (or char) capacity, where each document contributes one or two of its
   ``options_per_doc`` best sentences and ``bonus_d = doc_bonus / (1 + rank_decay * r_d)``
   rewards covering retrieved documents (``r_d`` its retrieval rank): a multiple-choice
   knapsack solved exactly by dynamic programming over the capacity (costs are the
   ledger's integer costs). The chosen sentences are taken best first, then the rest of
   the budget is filled by score with any candidate that still fits.

The title of a candidate is its ``source`` when set, else its ``doc_id`` (the synthesis
compactor uses titles as document ids). Ties break by input order, so the policy is
deterministic. When every candidate fits (within the snippet cap) it takes them all, so
packing its own output is a no-op.
"""

from __future__ import annotations

import re
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
_DIGIT = re.compile(r"\d")
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
    document (and never as filler); ``options_per_doc`` (>= 1) how
    many of a document's best sentences the knapsack considers, ``max_per_doc`` (1 or 2)
    how many it may take from one document. Bad values raise ``ValueError``.
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
        if isinstance(self.options_per_doc, bool) or not isinstance(self.options_per_doc, int) or self.options_per_doc < 1:
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


def evidence_features(problem: PackingProblem) -> np.ndarray:
    """The ``(n, len(EVIDENCE_WEIGHTS))`` feature matrix of the problem's candidates (columns in that order)."""
    cands = problem.candidates
    n = len(cands)
    if n == 0:
        return np.zeros((0, len(EVIDENCE_WEIGHTS)))
    texts = [c.text for c in cands]
    relevance = problem.relevance
    doc = problem.doc_index
    positions = np.array([c.position for c in cands], dtype=np.int64)
    cost = problem.knapsack.item.astype(np.float64)
    top = relevance.max()
    rel = relevance / top if top > 0 else np.zeros(n)
    rank = np.empty(n)
    rank[np.lexsort((np.arange(n), positions, -relevance))] = np.arange(n)
    n_doc = int(doc.max()) + 1
    first = np.full(n_doc, np.iinfo(np.int64).max)
    np.minimum.at(first, doc, positions)
    doc_rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")[doc]
    in_doc = np.zeros(n)  # sentence index inside its document
    for d in range(n_doc):
        idx = np.flatnonzero(doc == d)
        in_doc[idx[np.argsort(positions[idx], kind="stable")]] = np.arange(len(idx))
    lead = (in_doc == 0).astype(np.float64)
    doc_max = np.zeros(n_doc)
    np.maximum.at(doc_max, doc, relevance)
    doc_mass = np.zeros(n_doc)
    np.add.at(doc_mass, doc, relevance)
    mass = doc_mass[doc] / doc_mass.sum() if doc_mass.sum() > 0 else np.zeros(n)
    terms = problem.incidence.shape[1]
    coverage = problem.incidence.sum(axis=1) / terms if terms else np.zeros(n)

    question = problem.query
    q_low = question.lower()
    when, how_many, who, where, comparison = _question_kind(question)
    q_capitals = {w.lower() for w in _CAPITAL.findall(question)[1:]}
    lowered = [t.lower() for t in texts]
    capitals = [_CAPITAL.findall(t) for t in texts]
    new_caps = np.array([min(5, sum(w.lower() not in q_low for w in caps[1:])) / 5 for caps in capitals])
    q_caps = np.array([len(q_capitals & {w.lower() for w in caps}) / max(1, len(q_capitals)) for caps in capitals])
    has_year = np.array([bool(_YEAR.search(t)) for t in texts], dtype=np.float64)
    new_number = np.array([any(m not in q_low for m in _NUMBER.findall(t)) for t in texts], dtype=np.float64)
    digit = np.array([bool(_DIGIT.search(t)) for t in texts], dtype=np.float64)
    pronoun = np.array([bool(_PRONOUN.match(t)) for t in texts], dtype=np.float64)

    title = {}
    for c, d in zip(cands, doc):
        title.setdefault(int(d), _PAREN.sub("", c.source if c.source is not None else c.doc_id).lower())
    bridge_out = np.zeros(n)
    target = np.zeros(n_doc)
    for i, low in enumerate(lowered):
        for d, t in title.items():
            if d != doc[i] and t and t in low:
                bridge_out[i] = 1.0
                target[d] = 1.0
    bridge_in = target[doc]
    title_in_q = np.array([bool(title[int(d)]) and title[int(d)] in q_low for d in doc], dtype=np.float64)

    return np.column_stack([
        rel, 1.0 / (1.0 + rank), relevance >= doc_max[doc], lead, in_doc == 1,
        doc_rank == 1, doc_rank == 2, doc_rank == 3, doc_rank >= 4, coverage,
        has_year * when, digit * how_many, new_caps, bridge_out, bridge_in, title_in_q,
        np.log(np.maximum(cost, 1.0)), pronoun, mass, new_number, q_caps, new_caps * who, new_caps * where,
        lead * (doc_rank == 0), rel * lead, q_caps * comparison, bridge_in * lead, has_year,
    ]).astype(np.float64)


def answer_likelihood(problem: PackingProblem) -> np.ndarray:
    """Each candidate's modelled probability of holding the answer (a fixed logistic model)."""
    return 1.0 / (1.0 + np.exp(-(evidence_features(problem) @ _WEIGHTS + EVIDENCE_BIAS)))


def _options(p: np.ndarray, cost: np.ndarray, members: np.ndarray, params: EvidenceParams, bonus: float):
    """A document's knapsack options: ``(members, cost, value)`` for 1..max_per_doc of its best sentences."""
    best = members[np.lexsort((members, -p[members]))][: params.options_per_doc]
    for k in range(1, params.max_per_doc + 1):
        for sub in combinations(best.tolist(), k):
            yield sub, int(cost[list(sub)].sum()), bonus + float(p[list(sub)].sum()) - k * params.price


def _cover(p: np.ndarray, problem: PackingProblem, params: EvidenceParams) -> list[int]:
    """Exact multiple-choice knapsack: at most one option per document, most total value within capacity."""
    cost = problem.knapsack.item
    cap = int(problem.knapsack.capacity)
    doc = problem.doc_index
    n_doc = int(doc.max()) + 1
    first = np.full(n_doc, len(doc))
    np.minimum.at(first, doc, np.arange(len(doc)))
    best = np.full(cap + 1, -np.inf)
    best[0] = 0.0
    trail = []
    for r, d in enumerate(np.argsort(first, kind="stable")):
        bonus = params.doc_bonus / (1.0 + params.rank_decay * r)
        new = best.copy()
        pick = np.full(cap + 1, -1)
        opts = []
        for sub, c, v in _options(p, cost, np.flatnonzero(doc == d), params, bonus):
            if c > cap:
                continue
            shifted = np.full(cap + 1, -np.inf)
            shifted[c:] = best[: cap + 1 - c] + v
            better = shifted > new
            new[better] = shifted[better]
            pick[better] = len(opts)
            opts.append((sub, c))
        trail.append((pick, opts))
        best = new
    w = int(np.argmax(best))
    chosen: list[int] = []
    for pick, opts in reversed(trail):
        if pick[w] >= 0:
            sub, c = opts[pick[w]]
            chosen.extend(sub)
            w -= c
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
