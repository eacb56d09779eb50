"""A packing policy as a compaction strategy for the synthesis context.

:class:`PackingCompactor` turns the loop's facts into candidates with
:func:`~rootweaver_innovations.packing.candidates.fact_candidates` (the function the packing
eval and the evidence model's fitting script use too, so the policy sees exactly the inputs
it was measured and fitted on), packs them under the request's budget and renders the kept
fact lines in loop order. The synth context holds fact lines only: hop headers are dropped
(reason ``hop_header``), blank separators too (``blank``). Every full-context line is
accounted for once in ``kept`` or ``dropped``; the packer's omission reasons (``budget``,
``not_selected``, ``snippet_cap``, ``duplicate_text``, ...) carry over. Deterministic; an
output that fits is kept whole, so compacting facts that already fit changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compaction import REASON_BLANK, REASON_HOP_HEADER, CompactionRequest, CompactionResult, DroppedLine, KeptLine
from ..embeddings import Embedder
from .candidates import fact_candidates
from .objective import SubmodularWeights
from .policies import pack
from .similarity import dense_similarity

__all__ = ["PackingCompactor"]


@dataclass(frozen=True, slots=True)
class PackingCompactor:
    """Compacts a trajectory's facts with the packing policy named ``policy``.

    ``weights`` and ``max_snippets`` go to :func:`~rootweaver_innovations.packing.pack`;
    ``embedder`` (optional) switches the similarity the ``submodular`` and ``mmr`` policies
    use from TF-IDF to the cosine of its sentence embeddings. An unknown policy is a
    ``ValueError`` on call.
    """

    policy: str = "evidence"
    weights: SubmodularWeights = SubmodularWeights()
    max_snippets: int | None = None
    embedder: Embedder | None = None

    @property
    def name(self) -> str:
        return self.policy

    def __call__(self, request: CompactionRequest) -> CompactionResult:
        layout = request.layout
        lines = layout.text.split("\n")  # only to report each dropped line's text by position
        cands = fact_candidates(request.question, request.facts)
        nonblank = [i for i, f in enumerate(request.facts) if f.body]  # as fact_candidates skips
        line_of = {c.id: layout.fact_lines[i] for c, i in zip(cands, nonblank)}
        similarity = dense_similarity(self.embedder.encode([c.text for c in cands])) if self.embedder and cands else None
        res = pack(self.policy, cands, request.question, request.budget, similarity=similarity,
                   weights=self.weights, max_snippets=self.max_snippets)
        facts_at = {line: f for f, line in zip(request.facts, layout.fact_lines)}
        kept_lines = sorted(line_of[p.candidate.id] for p in res.packet)
        step = {line_of[p.candidate.id]: p.step for p in res.packet}
        dropped = [DroppedLine(line_of[o.candidate.id], o.candidate.text, o.reason) for o in res.omissions]
        for i in set(range(len(lines))).difference(kept_lines, [d.position for d in dropped]):
            dropped.append(DroppedLine(i, lines[i], REASON_HOP_HEADER if i in layout.header_lines else REASON_BLANK))
        return CompactionResult(
            text=res.text,
            kept=tuple(KeptLine(i, lines[i], step[i]) for i in kept_lines),
            dropped=tuple(sorted(dropped)),
            limit=request.budget.limit,
            input_chars=len(layout.text),
            strategy=self.policy,
            unit=request.budget.unit,
            used=res.used,
            kept_facts=tuple(facts_at[i] for i in kept_lines),
        )

