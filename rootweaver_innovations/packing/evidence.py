"""The ``evidence`` packing policy: which documents are evidence, which sentence holds the
answer, then an exact covering knapsack.

Why the other packers lose on multi-hop questions: their scores are lexical relevance, and
the sentence that holds the answer of a bridge question usually shares few words with the
question (it is in the *second* paragraph, reached through an entity the first one names).
Per-token gains make it worse by favouring short, low-information sentences.

This policy uses two fixed linear models over what every policy sees (texts, titles,
relevance, document order, the question), never a label, then packs by an exact programme:

1. **Documents** (:func:`document_features`, :data:`DOCUMENT_WEIGHTS`): ``q_d``, a logistic
   model of "document ``d`` is needed evidence", from its retrieval rank, relevance, title
   links (its title is named by another document, it names another's title, *second-order*
   links through a document whose title the question names) and the question's words.
2. **Sentences** (:func:`evidence_features`, :data:`EVIDENCE_WEIGHTS`): ``p_i``, the share of
   "this sentence holds the answer" among the problem's candidates (a softmax, so the ``p``
   of a problem sum to 1), from relevance, lead / second sentence of its document (a
   Wikipedia paragraph's first sentence names its entity), answer-type cues (years for
   *when*, numbers for *how many*, birth brackets for *who*), new capitalised words, title
   links, the question's head words, cost and its document's ``q_d``.
3. **Pack** (:func:`evidence_policy`): maximise
   ``sum_i (p_i - price) + coverage * sum_{d covered} -log(1 - q_d)`` under the token (or
   char) capacity, where each document contributes one or two sentences among its
   ``options_per_doc`` best by ``p`` and its cheapest one: a multiple-choice knapsack
   solved exactly by dynamic programming over the integer capacity. The second term is
   the log-probability, under independent ``q_d``, that no needed document is left out.
   The chosen sentences are taken best first, then leftover budget is filled by ``p``
   with any candidate that fits and whose ``p`` exceeds the price.

Both models were fitted once, on the even-indexed half of the HotpotQA dev questions with
BM25 and dense retrieval (``scripts/fit_evidence_weights.py`` is the record; see
``docs/packing_results.md``); their weights are constants here. The title of a candidate
is its ``source`` when set, else its ``doc_id`` (the synthesis compactor uses titles as
document ids). Ties break by input order, so the policy is deterministic. When every
candidate fits (within the snippet cap) it takes them all, so packing its own output is a
no-op.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..compaction import STOP_WORDS
from .policies import PackingProblem, Selection, register_policy

__all__ = [
    "DOCUMENT_BIAS",
    "DOCUMENT_WEIGHTS",
    "EVIDENCE_WEIGHTS",
    "EvidenceParams",
    "answer_likelihood",
    "document_features",
    "document_likelihood",
    "evidence_features",
    "evidence_policy",
]

DOCUMENT_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("rank_1", -0.989),  # retrieval rank 1 (0-based; rank 0 is the base)
    ("rank_2", -1.679),
    ("rank_3", -2.111),
    ("rank_4+", -2.292),
    ("best_relevance", 1.676),  # its best sentence's relevance / the problem's best
    ("relevance_mass", 1.534),  # its share of the problem's total relevance
    ("lead_relevance", 0.147),  # its first sentence's relevance / the problem's best
    ("named_by_other", 2.461),  # its title occurs in another document's sentence
    ("names_other", 1.217),  # one of its sentences names another document's title
    ("title_in_question", 4.788),
    ("title_word_overlap", -0.031),  # share of its title's words that are question words
    ("question_capitals", 0.023),  # share of the question's capitalised words it contains
    ("named_by_other_x_title_in_question", -4.264),
    ("names_other_x_title_in_question", -1.120),
    ("named_by_question_document", 0.856),  # named by a document whose title the question names
    ("names_question_document", -2.412),  # names the title of a document the question names
)
DOCUMENT_BIAS = -2.180

EVIDENCE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("relevance", 2.767),  # relevance / max relevance
    ("relevance_rank", -0.768),  # 1 / (1 + rank by relevance)
    ("doc_best", 0.307),  # the best-scored sentence of its document
    ("lead", 0.902),  # first sentence of its document
    ("second", 0.268),  # second sentence of its document
    ("doc_rank_1", 0.158),  # document retrieval rank 1 (0-based; rank 0 is the base)
    ("doc_rank_2", 0.121),
    ("doc_rank_3", 0.220),
    ("doc_rank_4+", 0.433),
    ("query_coverage", 0.861),  # share of query content terms in the sentence
    ("year_cue", 3.194),  # a when/what-year question and a year in the sentence
    ("number_cue", 2.938),  # a how-many/much/long/old question and a digit in the sentence
    ("new_capitals", 0.921),  # capitalised words absent from the question (after the 1st word), /5 capped
    ("bridge_out", 0.458),  # names another candidate document's title
    ("bridge_in", 0.358),  # its document's title is named by another document's sentence
    ("title_in_question", 0.139),  # its document's title occurs in the question
    ("log_cost", -0.083),  # log of the ledger cost
    ("pronoun_start", 0.051),  # starts with He/She/It/They/His/Her/Its/Their/This/These
    ("doc_mass", -2.663),  # its document's share of the total relevance
    ("new_number", 0.030),  # a number absent from the question
    ("question_capitals", -1.515),  # share of the question's capitalised words it contains
    ("who_new_capitals", 0.477),  # new_capitals on a who-question
    ("where_new_capitals", 1.226),  # new_capitals on a where/which-city/country question
    ("lead_of_top_doc", -0.069),  # lead sentence of the top-ranked document
    ("relevance_x_lead", -0.803),
    ("comparison_option", 3.201),  # question_capitals on an either/or or "both" question
    ("bridge_in_lead", -0.195),  # bridge_in and lead
    ("any_year", 0.085),  # a year in the sentence
    ("starts_with_title", -0.121),  # begins with its document's title (first 20 characters)
    ("born_on_who", 0.622),  # a birth bracket ("(born", "(1909 – 1992)") on a who-question
    ("head_words", 0.706),  # share of the question's first content words (words 2-6) it contains
    ("born", -0.022),
    ("doc_evidence", 1.305),  # q_d of its document
    ("doc_top_two", 0.991),  # its document is among the two with the highest q_d
    ("lead_x_doc_evidence", 0.648),
    ("lead_x_doc_evidence_title_not_in_question", -0.116),
    ("starts_with_title_x_doc_evidence_title_not_in_question", 0.511),
    ("doc_evidence_title_not_in_question", 1.671),
    ("head_words_x_doc_evidence", -0.772),
    ("lead_title_not_in_question_on_which_who", 0.476),  # a which/what/who question's entity lead
)

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\d+")
_CAPITAL = re.compile(r"\b[A-Z][\w'\-]*")
_PRONOUN = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|This|These)\b")
_PAREN = re.compile(r"\s*\(.*\)$")
_WORD = re.compile(r"\w+")
_Q_CLIP = 1e-4  # q_d is kept in [1e-4, 1 - 1e-4] so that -log(1 - q_d) stays finite
_DOC_W = np.array([w for _name, w in DOCUMENT_WEIGHTS])
_SENT_W = np.array([w for _name, w in EVIDENCE_WEIGHTS])


@dataclass(frozen=True, slots=True)
class EvidenceParams:
    """Packing parameters (chosen on the tuning half, see ``docs/packing_results.md``).

    ``coverage`` (>= 0) weighs the log-probability that no needed document is left out
    against the summed answer shares; ``price`` (>= 0) is charged per sentence taken, so a
    sentence whose share is below it is taken only to cover its document (never as
    filler); ``options_per_doc`` (>= 1) how many of a document's best sentences by ``p``
    the knapsack considers (its cheapest sentence is always considered too),
    ``max_per_doc`` (1 or 2) how many it may take from one document. Bad values raise
    ``ValueError``.
    """

    coverage: float = 1.2
    price: float = 0.02
    options_per_doc: int = 3
    max_per_doc: int = 2

    def __post_init__(self) -> None:
        for name in ("coverage", "price"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        opts = self.options_per_doc
        if isinstance(opts, bool) or not isinstance(opts, int) or opts < 1:
            raise ValueError(f"options_per_doc must be an int >= 1, got {self.options_per_doc!r}")
        if self.max_per_doc not in (1, 2) or isinstance(self.max_per_doc, bool):
            raise ValueError(f"max_per_doc must be 1 or 2, got {self.max_per_doc!r}")


def _question_kind(question: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """``(when, how_many, who, where, comparison, which)`` cues from the question's wording."""
    q = question.lower()
    when = q.startswith("when") or any(k in q for k in ("what year", "which year", "what date"))
    how_many = any(k in q for k in ("how many", "how much", "how long", "how old", "how tall"))
    who = q.startswith("who") or " who " in q or "what person" in q
    where = q.startswith("where") or any(
        k in q for k in ("what city", "what country", "which city", "which country", "what state")
    )
    comparison = " or " in q or "both" in q
    which = q.startswith(("which", "what"))
    return when, how_many, who, where, comparison, which


_PARSED: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool, bool, bool]] = {}
_PARSED_MAX = 65536


def _parse(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool, bool]:
    """Question-independent parse of a text, memoised (bounded) like the token counts:
    ``(lowercased capitalised words, numbers, has a year, starts with a pronoun, birth bracket)``."""
    hit = _PARSED.get(text)
    if hit is None:
        hit = (
            tuple(w.lower() for w in _CAPITAL.findall(text)),
            tuple(_NUMBER.findall(text)),
            _YEAR.search(text) is not None,
            _PRONOUN.match(text) is not None,
            "(born" in text or (" – " in text[:120] and "(" in text[:80]),
        )
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = hit
    return hit


@dataclass(frozen=True, slots=True, eq=False)
class _Structure:
    """What both models read: per-sentence document facts and the documents' title links."""

    rel: np.ndarray  # relevance / max relevance
    positions: np.ndarray  # per sentence: Candidate.position
    doc_best: np.ndarray  # per document: its highest rel
    doc_share: np.ndarray  # per document: its share of the total relevance (0 when there is none)
    doc_rank: np.ndarray  # per sentence: its document's retrieval rank
    in_doc: np.ndarray  # per sentence: its index inside its document (position order)
    titles: list[str]  # per document: lowercased title without a trailing "(...)"
    lowered: list[str]  # per sentence: lowercased text
    links: np.ndarray  # (n_doc, n_doc) bool: document j has a sentence naming document k's title
    bridge_out: np.ndarray  # per sentence: names another document's title
    title_in_q: np.ndarray  # per document


def _structure(problem: PackingProblem) -> _Structure:
    cands, doc = problem.candidates, problem.doc_index
    n = len(cands)
    relevance = problem.relevance
    top = relevance.max()
    rel = relevance / top if top > 0 else np.zeros(n)
    positions = np.fromiter((c.position for c in cands), dtype=np.int64, count=n)
    n_doc = int(doc.max()) + 1
    by_doc = np.lexsort((np.arange(n), positions, doc))  # grouped by document, in position order
    sorted_doc = doc[by_doc]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_doc[1:] != sorted_doc[:-1]
    starts = np.flatnonzero(new_group)
    in_doc = np.empty(n)
    in_doc[by_doc] = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    first = np.full(n_doc, np.iinfo(np.int64).max)
    first[sorted_doc[starts]] = positions[by_doc[starts]]
    doc_rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")[doc]
    doc_best = np.zeros(n_doc)
    np.maximum.at(doc_best, doc, rel)
    doc_share = np.bincount(doc, weights=relevance, minlength=n_doc)
    total = doc_share.sum()
    if total > 0:
        doc_share /= total

    doc_list = doc.tolist()
    titles = [""] * n_doc
    seen = set()
    for c, d in zip(cands, doc_list):
        if d not in seen:
            seen.add(d)
            titles[d] = _PAREN.sub("", c.source if c.source is not None else c.doc_id).lower()
    lowered = [c.text.lower() for c in cands]  # lowercasing may change lengths: offsets from these
    joined = "\n".join(lowered)
    ends, end = [], 0
    for t in lowered:
        end += len(t) + 1
        ends.append(end)
    links = np.zeros((n_doc, n_doc), dtype=bool)
    bridge_out = np.zeros(n)
    for d, t in enumerate(titles):
        at = joined.find(t) if t else -1
        while at >= 0:
            i = bisect_right(ends, at)
            if doc_list[i] != d and at + len(t) < ends[i]:  # inside one text, of another document
                bridge_out[i] = 1.0
                links[doc_list[i], d] = True
            at = joined.find(t, at + 1)
    q_low = problem.query.lower()
    title_in_q = np.array([1.0 if t and t in q_low else 0.0 for t in titles])
    return _Structure(rel, positions, doc_best, doc_share, doc_rank, in_doc, titles, lowered, links, bridge_out,
                      title_in_q)


def _document_features(problem: PackingProblem, s: _Structure) -> np.ndarray:
    doc = problem.doc_index
    n_doc = len(s.titles)
    rank = np.zeros(n_doc, dtype=np.int64)
    rank[doc] = s.doc_rank
    lead_rel = np.zeros(n_doc)
    lead = s.in_doc == 0
    lead_rel[doc[lead]] = s.rel[lead]
    named_by = s.links.any(axis=0)  # some other document names d
    names = s.links.any(axis=1)
    tq = s.title_in_q.astype(bool)
    named_by_q = s.links[tq].any(axis=0)  # named by a document the question names (never itself)
    names_q = s.links[:, tq].any(axis=1)
    q_low = problem.query.lower()
    q_words = set(_WORD.findall(q_low))
    overlap = np.array([
        len(set(w) & q_words) / max(1, len(set(w))) for w in (_WORD.findall(t) for t in s.titles)
    ])
    q_caps = {w.lower() for w in _CAPITAL.findall(problem.query)[1:]}
    doc_lines: list[list[str]] = [[] for _ in range(n_doc)]
    for low, d in zip(s.lowered, doc.tolist()):
        doc_lines[d].append(low)
    caps = np.array([sum(c in text for c in q_caps) / max(1, len(q_caps)) for text in map("\n".join, doc_lines)])
    return np.column_stack([
        rank == 1, rank == 2, rank == 3, rank >= 4, s.doc_best, s.doc_share, lead_rel, named_by, names, tq, overlap, caps,
        named_by & tq, names & tq, named_by_q, names_q,
    ]).astype(np.float64)


def _document_likelihood(
    features: np.ndarray, weights: np.ndarray = _DOC_W, bias: float = DOCUMENT_BIAS
) -> np.ndarray:
    """``q_d`` from document features: the logistic model (shipped weights by default), clipped."""
    z = features @ weights + bias
    return np.clip(1.0 / (1.0 + np.exp(-z)), _Q_CLIP, 1.0 - _Q_CLIP)


def _sentence_features(problem: PackingProblem, s: _Structure, q: np.ndarray) -> np.ndarray:
    cands, doc = problem.candidates, problem.doc_index
    n = len(cands)
    n_doc = len(s.titles)
    relevance = problem.relevance
    rank = np.empty(n)
    rank[np.lexsort((np.arange(n), s.positions, -relevance))] = np.arange(n)
    terms = problem.incidence.shape[1]
    coverage = problem.incidence.sum(axis=1) / terms if terms else np.zeros(n)

    question = problem.query
    q_low = question.lower()
    when, how_many, who, where, comparison, which = _question_kind(question)
    q_capitals = {w.lower() for w in _CAPITAL.findall(question)[1:]}
    head = [w for w in _WORD.findall(q_low)[1:6] if w not in STOP_WORDS]
    rows = []
    for text, low, d in zip((c.text for c in cands), s.lowered, doc.tolist()):
        caps, numbers, year, pronoun, born = _parse(text)
        title = s.titles[d]
        rows.append((
            min(5, sum(w not in q_low for w in caps[1:])) / 5,
            len(q_capitals.intersection(caps)) / max(1, len(q_capitals)),
            year, any(m not in q_low for m in numbers), bool(numbers), pronoun, born,
            bool(title) and low.startswith(title[:20]),
            sum(w in low for w in head) / max(1, len(head)),
        ))
    new_caps, q_caps, has_year, new_number, digit, pronoun, born, starts_title, head_words = np.array(
        rows, dtype=np.float64
    ).T
    lead = (s.in_doc == 0).astype(np.float64)
    bridge_in = s.links.any(axis=0)[doc].astype(np.float64)
    q_doc = q[doc]
    top_two = np.zeros(n_doc)
    top_two[np.argsort(-q, kind="stable")[:2]] = 1.0
    not_in_q = 1.0 - s.title_in_q[doc]
    doc_rank = s.doc_rank
    return np.column_stack([
        s.rel, 1.0 / (1.0 + rank), s.rel >= s.doc_best[doc], lead, s.in_doc == 1,
        doc_rank == 1, doc_rank == 2, doc_rank == 3, doc_rank >= 4, coverage,
        has_year * when, digit * how_many, new_caps, s.bridge_out, bridge_in, s.title_in_q[doc],
        np.log(np.maximum(problem.knapsack.item, 1)), pronoun, s.doc_share[doc], new_number, q_caps, new_caps * who,
        new_caps * where, lead * (doc_rank == 0), s.rel * lead, q_caps * comparison, bridge_in * lead, has_year,
        starts_title, born * who, head_words, born, q_doc, top_two[doc], lead * q_doc, lead * q_doc * not_in_q,
        starts_title * q_doc * not_in_q, q_doc * not_in_q, head_words * q_doc, lead * not_in_q * (which or who),
    ]).astype(np.float64)


def document_features(problem: PackingProblem) -> np.ndarray:
    """The ``(n_doc, len(DOCUMENT_WEIGHTS))`` matrix of the problem's documents (``doc_index`` order)."""
    if not problem.candidates:
        return np.zeros((0, len(DOCUMENT_WEIGHTS)))
    return _document_features(problem, _structure(problem))


def document_likelihood(problem: PackingProblem) -> np.ndarray:
    """Each document's modelled probability of being needed evidence, in ``[1e-4, 1 - 1e-4]``."""
    return _document_likelihood(document_features(problem))


def evidence_features(problem: PackingProblem, doc_likelihood: np.ndarray | None = None) -> np.ndarray:
    """The ``(n, len(EVIDENCE_WEIGHTS))`` matrix of the problem's candidates (columns in that order).

    ``doc_likelihood`` (per document, ``doc_index`` order) defaults to the shipped
    :func:`document_likelihood`; the fitting script passes its own.
    """
    if not problem.candidates:
        return np.zeros((0, len(EVIDENCE_WEIGHTS)))
    s = _structure(problem)
    q = _document_likelihood(_document_features(problem, s)) if doc_likelihood is None else doc_likelihood
    return _sentence_features(problem, s, q)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def _likelihoods(problem: PackingProblem) -> tuple[np.ndarray, np.ndarray]:
    """``(p, q)``: per-candidate answer shares and per-document evidence likelihoods."""
    s = _structure(problem)
    q = _document_likelihood(_document_features(problem, s))
    return _softmax(_sentence_features(problem, s, q) @ _SENT_W), q


def answer_likelihood(problem: PackingProblem) -> np.ndarray:
    """Each candidate's modelled share of "holds the answer" (non-negative, sums to 1)."""
    if not problem.candidates:
        return np.zeros(0)
    return _likelihoods(problem)[0]


def _options(members: list[int], cost: list[int], params: EvidenceParams) -> list[int]:
    """A document's ``options_per_doc`` best members (``members`` is in ``p`` order) and its cheapest."""
    best = members[: params.options_per_doc]
    cheapest = min(members, key=lambda i: cost[i])  # first in p order among the cheapest
    return best if cheapest in best else [*best, cheapest]


def _cover(p: np.ndarray, bonus: np.ndarray, problem: PackingProblem, params: EvidenceParams) -> list[int]:
    """Exact multiple-choice knapsack: at most one option per document, most total value within capacity.

    A document ``d``'s options are 1..``max_per_doc`` of its :func:`_options`, worth
    ``bonus[d] + sum(p) - k * price``. On equal value the earlier option, and not taking
    the document at all, win.
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
        members = _options(order[bounds[r]:bounds[r + 1]], cost_of, params)
        d = int(grouped_doc[bounds[r]])
        subsets = [sub for k in range(1, params.max_per_doc + 1) for sub in combinations(members, k)]
        opt_cost = [sum(cost_of[i] for i in sub) for sub in subsets]
        opt_value = [bonus[d] + sum(p_of[i] for i in sub) - len(sub) * params.price for sub in subsets]
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
    """Pack ``problem`` (see the module docstring); gains are the answer shares ``p``."""
    knap = problem.knapsack
    knap.reset()
    n = len(problem.candidates)
    if n == 0:
        return Selection((), ())
    p, q = _likelihoods(problem)
    if n <= problem.cap and int(knap.item.sum() + knap.group_cost.sum()) <= knap.capacity:
        return Selection(tuple(range(n)), tuple(float(x) for x in p))
    by_score = np.lexsort((np.arange(n), -p))
    chosen = set(_cover(p, -params.coverage * np.log1p(-q), problem, params))
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
