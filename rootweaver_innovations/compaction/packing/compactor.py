"""A packing policy as a compaction strategy for the synthesis context.

:class:`PackingCompactor` turns the loop's facts into candidates with
:func:`~rootweaver_innovations.compaction.packing.candidates.fact_candidates` (the function the packing
eval and the evidence model's fitting script use too, so the policy sees exactly the inputs
it was measured and fitted on) and packs them under the request's budget. The synth context
is the kept facts in loop order, layout ``"facts"`` (no hop headers). Every fact is either
kept or dropped with the packer's omission reason (``budget``, ``not_selected``,
``snippet_cap``, ``duplicate_text``, ...; ``blank`` for a fact with no text). Deterministic; an
output that fits is kept whole, so compacting facts that already fit changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from rootweaver_innovations.compaction.line import REASON_BLANK, CompactionRequest, CompactionResult, DroppedFact
from rootweaver_innovations.retrieval.embeddings import Embedder
from rootweaver_innovations.compaction.packing.candidates import fact_candidates
from rootweaver_innovations.compaction.packing.objective import SubmodularWeights
from rootweaver_innovations.compaction.packing.policies import pack
from rootweaver_innovations.compaction.packing.similarity import dense_similarity

__all__ = ["PackingCompactor"]


@dataclass(frozen=True, slots=True)
class PackingCompactor:
    """Compacts a trajectory's facts with the packing policy named ``policy``.

    ``weights`` and ``max_snippets`` go to :func:`~rootweaver_innovations.compaction.packing.pack`;
    ``embedder`` (optional) switches the similarity the ``submodular`` and ``mmr`` policies
    use from TF-IDF to the cosine of its sentence embeddings. An unknown policy is a
    ``ValueError`` on call.
    """

    policy: str = "evidence"
    weights: SubmodularWeights = SubmodularWeights()
    max_snippets: int | None = None
    embedder: Embedder | None = None

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        facts = request.facts
        cands = fact_candidates(request.question, facts)
        nonblank = [i for i, f in enumerate(facts) if f.body]  # as fact_candidates skips
        index_of = {c.id: i for c, i in zip(cands, nonblank)}
        similarity = dense_similarity(self.embedder.encode([c.text for c in cands])) if self.embedder and cands else None
        res = pack(self.policy, cands, request.question, request.budget, similarity=similarity,
                   weights=self.weights, max_snippets=self.max_snippets)
        kept = sorted(index_of[p.candidate.id] for p in res.packet)
        dropped = [DroppedFact(index_of[o.candidate.id], facts[index_of[o.candidate.id]], o.reason)
                   for o in res.omissions]
        dropped += [DroppedFact(i, f, REASON_BLANK) for i, f in enumerate(facts) if not f.body]
        context = request.context.with_facts([facts[i] for i in kept], "facts")
        return CompactionResult(context, tuple(sorted(dropped)), request.context, request.budget, res.used,
                                self.policy)
