"""The multi-hop loop: decompose, pick the next sub-query, retrieve, append facts.

The full *trajectory context* drives every hop decision and is never compacted. After
the loop a separate *synth_context* is compacted once; with compaction disabled it is
the full context itself, byte for byte. So the trajectory (sub-queries, retrieved ids,
hop count, stop reason) cannot depend on whether, or how hard, compaction runs.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

import numpy as np

from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.strategies import DEFAULT_BUDGET_TOKENS, DEFAULT_STRATEGY, Compactor, make_compactor
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.defaults import (
    ANSWERABILITY_THRESHOLD,
    BUDGET_UNIT,
    MAX_HOPS,
    MAX_PASSAGES,
    PASSAGES_PER_HOP,
    STOP_RULE,
)
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.loop.decompose import RuleDecomposer, fact_tokens, is_answered
from rootweaver_innovations.loop.files import as_files
from rootweaver_innovations.loop.hops import (
    REASON_FILL,
    REASON_FILL_NAMED,
    REASON_NAMED,
    REASON_QUESTION,
    HopPolicyParams,
    TitleIndex,
    load_hop_policy,
    plan_bridges,
    ranking_of,
    title_keys,
)
from rootweaver_innovations.loop.result import Answer, AnswerRule, Decomposer, Hop, MultiHopResult, Synthesizer
from rootweaver_innovations.retrieval.facets import Facets
from rootweaver_innovations.retrieval.titles import id_titled
from rootweaver_innovations.records import Fact, facts_from_passages, source_tag
from rootweaver_innovations.retrieval.retrievers import Retriever
from rootweaver_innovations.text import reasoning_key_terms

__all__ = [
    "Answer",
    "AnswerRule",
    "Decomposer",
    "Hop",
    "MultiHopRAG",
    "MultiHopResult",
    "RuleDecomposer",
    "STOP_ALL_ANSWERED",
    "STOP_MAX_HOPS",
    "STOP_NO_NEW_EVIDENCE",
    "STOP_PASSAGE_BUDGET",
    "STOP_RULES",
    "Synthesizer",
    "is_answered",
]

STOP_ALL_ANSWERED = "all_answered"
STOP_MAX_HOPS = "max_hops"
STOP_NO_NEW_EVIDENCE = "no_new_evidence"
STOP_PASSAGE_BUDGET = "passage_budget"
STOP_RULES = ("evidence", "coverage")
REASON_COVERAGE = "coverage: first open sub-query"


@dataclass
class MultiHopRAG:
    """The hop loop with retriever, decomposer, synthesizer and compactor injected.

    Two hop policies (``stop_rule``), both stopping at ``max_hops`` hops or once
    ``max_passages`` passages are in the trajectory, whichever comes first; all sentences
    of every new passage become fact lines, and every hop records why it was taken:

    - ``"evidence"`` (default): hop 1 retrieves the question's best passages, then one
      passage per hop along the bridge plan of :func:`~rootweaver_innovations.loop.hops.plan_bridges`
      (compared entities, titles the question names, titles linked from hop 1, entity spans
      of hop 1; a hop takes the entity's own titled passage when the title index has it,
      else the best new passage for its sub-query), with the last hop left to fill the
      budget with the question's next best passages. When the question names sources or days
      the index knows (:meth:`~rootweaver_innovations.retrieval.facets.Facets.named`), one hop
      per named one comes before the bridges, and the fill takes its passages in turn from
      those documents and from all. Sizes per budget come from the fitted ``hop_policy``.
      ``title_index`` defaults to the retriever's own (a saved index's, memory-mapped), else
      one built over ``retriever.passages`` (empty when the retriever exposes none: the loop
      then follows entity spans only).
    - ``"coverage"`` (the seed's rule): the decomposer's first sub-query whose key terms
      the facts do not yet cover to ``answerability_threshold``, ``passages_per_hop`` new
      passages per hop.

    ``conventions`` (corpus and language rules: compared entities, subjects and their names)
    defaults to those the title index or the retriever was built under, else the registry's default; ``decomposer`` to a
    :class:`~rootweaver_innovations.loop.decompose.RuleDecomposer` under them.

    Raises ``ValueError`` on a title index or retriever built under other conventions, ``max_hops < 1``, ``max_passages < 1``, ``passages_per_hop
    < 1``, a threshold outside (0, 1], a ``compaction_budget`` that is not a ``Budget`` (nor a
    ``tagged_budget`` that is not ``None``) or an unknown ``stop_rule``. With ``compaction_enabled``
    the synth context is ``compactor``'s output under ``compaction_budget`` (chars or reader
    tokens), or under ``tagged_budget`` when given and a fact read carries a source or a date
    (:meth:`synth_budget`: such lines spend about half their tokens on headline and source tag);
    without it, the full context byte for byte. With a ``synthesizer`` the result carries an answer: the first of
    ``answer_rules`` that settles the question (the same with compaction on or off), else the
    synthesizer's, read from the synth context.
    """

    retriever: Retriever
    decomposer: Decomposer | None = None
    synthesizer: Synthesizer | None = None
    answer_rules: tuple[AnswerRule, ...] = ()
    max_hops: int = MAX_HOPS
    passages_per_hop: int = PASSAGES_PER_HOP
    answerability_threshold: float = ANSWERABILITY_THRESHOLD
    compaction_enabled: bool = False
    compaction_budget: Budget = field(default_factory=lambda: Budget(DEFAULT_BUDGET_TOKENS, BUDGET_UNIT))
    tagged_budget: Budget | None = None
    compactor: Compactor = field(default_factory=lambda: make_compactor(DEFAULT_STRATEGY))
    max_passages: int = MAX_PASSAGES
    stop_rule: str = STOP_RULE
    title_index: TitleIndex | None = None
    hop_policy: HopPolicyParams = field(default_factory=load_hop_policy)
    conventions: Conventions | None = None
    facets: Facets | None = None

    def __post_init__(self) -> None:
        if self.max_hops < 1:
            raise ValueError(f"max_hops must be >= 1, got {self.max_hops}")
        if self.max_passages < 1:
            raise ValueError(f"max_passages must be >= 1, got {self.max_passages}")
        if self.passages_per_hop < 1:
            raise ValueError(f"passages_per_hop must be >= 1, got {self.passages_per_hop}")
        if not 0 < self.answerability_threshold <= 1:
            raise ValueError(f"answerability_threshold must be in (0, 1], got {self.answerability_threshold}")
        if not isinstance(self.compaction_budget, Budget):
            raise ValueError(f"compaction_budget must be a Budget, got {type(self.compaction_budget).__name__}")
        if self.tagged_budget is not None and not isinstance(self.tagged_budget, Budget):
            raise ValueError(f"tagged_budget must be a Budget, got {type(self.tagged_budget).__name__}")
        if self.stop_rule not in STOP_RULES:
            raise ValueError(f"stop_rule must be one of {STOP_RULES}, got {self.stop_rule!r}")
        if self.title_index is None:
            self.title_index = getattr(self.retriever, "title_index", None)
        built = [c for c in (getattr(self.title_index, "conventions", None), getattr(self.retriever, "conventions", None))
                 if c is not None]
        if self.conventions is None:
            self.conventions = built[0] if built else default_conventions()
        if self.title_index is None:
            self.title_index = TitleIndex(getattr(self.retriever, "passages", ()), conventions=self.conventions)
        for c in built:
            if c.name != self.conventions.name:
                raise ValueError(f"the corpus was indexed under conventions {c.name!r}, the loop was given "
                                 f"{self.conventions.name!r}")
        if self.decomposer is None:
            self.decomposer = RuleDecomposer(conventions=self.conventions)
        if self.facets is None:
            self.facets = getattr(self.retriever, "facets", None)

    def _decompose_query(self, question: str, facts: Sequence[Fact]) -> list[str]:
        return self.decomposer(question, facts)

    def _select_next_query(
        self, sub_queries: Sequence[str], facts: Sequence[Fact], asked: set[str]
    ) -> tuple[str | None, str]:
        """Next open, not-yet-asked sub-query, or ``(None, stop_reason)``."""
        tokens = fact_tokens(facts)
        open_ones = [q for q in sub_queries if not is_answered(q, tokens, self.answerability_threshold)]
        if not open_ones:
            return None, STOP_ALL_ANSWERED
        for q in open_ones:
            if q not in asked:
                return q, ""
        return None, STOP_NO_NEW_EVIDENCE

    def _retrieve_new(self, sub_query: str, seen: set[str], k: int) -> list[tuple[int, Passage]]:
        return ranking_of(self.retriever, self.title_index, sub_query, k + len(seen)).unseen(seen, k)

    def _coverage_hops(self, question: str):
        """The seed's rule: yields ``(sub_query, reason, [(row, passage), ...])`` per hop, then
        the stop reason."""
        seen: set[str] = set()
        asked: set[str] = set()
        facts: list[Fact] = []
        for hop in range(self.max_hops):
            if len(seen) >= self.max_passages:
                return STOP_PASSAGE_BUDGET
            sub_queries = self._decompose_query(question, facts)
            nxt, reason = self._select_next_query(sub_queries, facts, asked)
            if nxt is None:
                return reason
            asked.add(nxt)
            passages = self._retrieve_new(nxt, seen, min(self.passages_per_hop, self.max_passages - len(seen)))
            if not passages:
                return STOP_NO_NEW_EVIDENCE
            seen.update(p.id for _, p in passages)
            facts.extend(facts_from_passages([p for _, p in passages], hop=hop, sub_query=nxt))
            yield nxt, REASON_COVERAGE, passages
        return STOP_PASSAGE_BUDGET if len(seen) >= self.max_passages else STOP_MAX_HOPS

    def _evidence_hops(self, question: str):
        """The evidence policy: yields ``(sub_query, reason, [(row, passage), ...])`` per hop,
        then the stop reason."""
        schedule = self.hop_policy.for_budget(self.max_passages)
        ranking = ranking_of(self.retriever, self.title_index, question, max(schedule.link_depth, self.max_passages))
        first = ranking.unseen((), min(schedule.first_hop, self.max_passages))
        if not first:
            return STOP_NO_NEW_EVIDENCE
        seen = {p.id for _, p in first}
        first += self._pulled_neighbours(question, first, seen)
        yield question, REASON_QUESTION, first
        hops = 1
        named = self.facets.named(question) if self.facets else []
        for facet in named:
            if len(seen) >= self.max_passages:
                return STOP_PASSAGE_BUDGET
            if hops >= self.max_hops - 1:
                break
            new = ranking_of(self.retriever, self.title_index, question, len(seen) + 1, facet.rows).unseen(seen, 1)
            if new:
                seen.update(p.id for _, p in new)
                hops += 1
                yield question, REASON_NAMED.format(kind=facet.kind, label=facet.label), new
        bridges = plan_bridges(question, first, ranking, self.retriever, self.title_index, schedule, self.conventions)
        for proposal in bridges:
            if len(seen) >= self.max_passages:
                return STOP_PASSAGE_BUDGET
            if hops >= self.max_hops - 1:
                break
            page = next(((row, p) for row, p in proposal.pages if p.id not in seen), None)
            new = [page] if page is not None else self._retrieve_new(proposal.sub_query, seen, 1)
            if not new:
                continue
            if page is not None and len(seen) + 2 <= self.max_passages:
                _, after = self._adjacent(*page)
                new += [after] if after is not None and after[1].id not in seen else []
            seen.update(p.id for _, p in new)
            hops += 1
            yield proposal.sub_query, proposal.reason, new
        if len(seen) >= self.max_passages:
            return STOP_PASSAGE_BUDGET
        if hops >= self.max_hops:
            return STOP_MAX_HOPS
        k = self.max_passages - len(seen)
        fill = ranking.unseen(seen, k)  # the ranking is max_passages deep
        if named:  # in turn from the documents the question names and from all of them
            within = np.unique(np.concatenate([facet.rows for facet in named]))
            named_fill = ranking_of(self.retriever, self.title_index, question, len(seen) + k, within).unseen(seen, k)
            fill = _in_turn(named_fill, fill, k)
        if not fill:
            return STOP_NO_NEW_EVIDENCE
        seen.update(p.id for _, p in fill)
        yield question, REASON_FILL_NAMED if named else REASON_FILL, fill
        return STOP_PASSAGE_BUDGET if len(seen) >= self.max_passages else STOP_NO_NEW_EVIDENCE

    def _adjacent(self, row: int, page: Passage) -> tuple[tuple[int, Passage] | None, tuple[int, Passage] | None]:
        """``(row, passage)`` of the records before and after ``page`` (at ``row`` of the title
        index) in its file when it is titled by an id (:func:`~rootweaver_innovations.retrieval.titles.id_titled`:
        the windows a user cut from one file, in corpus order), else ``(None, None)``. Reads
        only those two records."""
        keys = title_keys(page.title) if row >= 0 and id_titled(page) else ()
        if not keys:  # a real title, an id with no word in it ("", "-"), or a passage outside the index
            return None, None
        index = self.title_index
        rows = index.rows(keys[0])
        at = bisect_left(rows, row)
        if at == len(rows) or rows[at] != row:
            return None, None
        return ((rows[at - 1], index.passages[rows[at - 1]]) if at > 0 else None,
                (rows[at + 1], index.passages[rows[at + 1]]) if at + 1 < len(rows) else None)

    def _pulled_neighbours(self, question: str, first: Sequence[tuple[int, Passage]],
                           seen: set[str]) -> list[tuple[int, Passage]]:
        """For each record of hop 1 titled by an id, best first and while the passage budget
        lasts, the unread record before or after it in its file, whichever the retriever
        scores higher for ``question`` (the one after on a tie, or when the retriever cannot
        score given rows): a window cut from a file often misses the subject named before it
        or the end of the sentence it stops in. Adds the pulled ids to ``seen``."""
        index = self.title_index
        row_scores = getattr(self.retriever, "row_scores", None)
        if getattr(self.retriever, "passages", None) is not index.passages:
            row_scores = None
        pulled: list[tuple[int, Passage]] = []
        for row, page in first:
            if len(seen) >= self.max_passages:
                break
            after, before = (n if n is not None and n[1].id not in seen else None for n in self._adjacent(row, page)[::-1])
            if after is not None and before is not None and row_scores is not None:
                score_after, score_before = row_scores(question, [after[0], before[0]])
                after = before if score_before > score_after else after
            take = after or before
            if take is not None:
                pulled.append(take)
                seen.add(take[1].id)
        return pulled

    def synth_budget(self, facts: Sequence[Fact]) -> Budget:
        """The synth context's budget for a trajectory that read ``facts``: ``tagged_budget`` when
        one of them carries a source tag (:func:`~rootweaver_innovations.records.source_tag`),
        else ``compaction_budget``."""
        if self.tagged_budget is not None and any(source_tag(f.meta) for f in facts):
            return self.tagged_budget
        return self.compaction_budget

    def multi_hop_search(self, question: str, on_hop: Callable[[Hop], None] | None = None) -> MultiHopResult:
        """Run the loop for ``question`` (non-empty, else ``ValueError``); ``on_hop`` is called
        with each :class:`Hop` as it is taken (in this thread), before the next one."""
        if not question or not question.strip():
            raise ValueError("question must be a non-empty string")
        hops: list[Hop] = []
        facts: list[Fact] = []
        rows: dict[str, int] = {}  # passage id -> its row of the title index
        steps = self._coverage_hops(question) if self.stop_rule == "coverage" else self._evidence_hops(question)
        while True:
            try:
                sub_query, why, passages = next(steps)
            except StopIteration as done:
                stop = done.value
                break
            rows.update((p.id, row) for row, p in passages)
            facts.extend(facts_from_passages([p for _, p in passages], hop=len(hops), sub_query=sub_query))
            hops.append(Hop(sub_query, tuple(p.id for _, p in passages), why, tuple(p.title for _, p in passages)))
            if on_hop is not None:
                on_hop(hops[-1])
        facts = as_files(self.title_index, facts, rows, question)
        full = SynthContext(tuple(facts), tuple(h.sub_query for h in hops))

        final_subs = tuple(self._decompose_query(question, facts))
        tokens = fact_tokens(facts)
        open_terms = tuple(dict.fromkeys(
            t for q in final_subs if not is_answered(q, tokens, self.answerability_threshold)
            for t in reasoning_key_terms(q)
        ))
        result = MultiHopResult(
            question=question,
            hops=tuple(hops),
            stop_reason=stop,
            sub_queries=final_subs,
            open_terms=open_terms,
            full=full,
            compaction=None,
        )
        if self.compaction_enabled:
            budget = self.synth_budget(full.facts)
            result = dataclasses.replace(result, compaction=self.compactor(result.compaction_request(budget)))
        if self.synthesizer is None:
            return result
        answer = next((a for rule in self.answer_rules if (a := rule(question, result.facts)) is not None), None)
        if answer is None:
            answer = self.synthesizer(question, result.synth)
        return dataclasses.replace(result, answer=answer)


def _in_turn(first: Sequence[tuple[int, Passage]], second: Sequence[tuple[int, Passage]],
             k: int) -> list[tuple[int, Passage]]:
    """The first ``k`` distinct passages taking one from ``first`` and one from ``second`` in
    turn (``first`` leads; a list that runs out leaves the rest to the other)."""
    out: dict[str, tuple[int, Passage]] = {}
    for pair in zip_longest(first, second):
        for rp in pair:
            if rp is not None and len(out) < k:
                out.setdefault(rp[1].id, rp)
    return list(out.values())
