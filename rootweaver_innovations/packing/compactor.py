"""The submodular packer as a drop-in compactor for MultiHopRAG's synthesis context.

:class:`SubmodularCompactor` satisfies :class:`rootweaver_innovations.multihop.Compactor`
with the same contract as :func:`~rootweaver_innovations.compaction.compact_lines`: the
output is whole input lines in input order, at most ``max_chars`` characters counting the
``"\\n"`` separators and the hop headers it re-emits (a header only with at least one of
its kept facts), deterministic, and idempotent (compacting its own output returns it
unchanged, because an output that fits is kept whole). Every input line is accounted for
once in ``kept`` or ``dropped``.

Candidates are the non-blank, non-header lines: ``doc_id`` is the fact's title (a line
that is not a ``"<title> | <sentence>"`` fact is its own document), ``relevance`` the TF-IDF
cosine of the line with the question plus the open terms. Drop reasons are the line
compactor's (``blank``, ``duplicate_text``, ``budget``, ``header_without_kept_facts``)
plus the packer's ``not_selected`` and ``snippet_cap``. A kept line's ``band`` is its
0-based pick step (a header: the first step of its facts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..compaction import REASON_BLANK, REASON_ORPHAN_HEADER, CompactionResult, DroppedLine, KeptLine
from ..context_format import is_header, parse_fact
from ..embeddings import Embedder
from .budget import Budget
from .candidates import Candidate, Header
from .objective import SubmodularWeights
from .policies import pack
from .similarity import dense_similarity, tfidf_relevance

__all__ = ["SubmodularCompactor"]


@dataclass(frozen=True, slots=True)
class SubmodularCompactor:
    """Compacts a trajectory context with a packing policy (``policy``, default ``submodular``).

    ``policy`` names a registered packing policy (unknown: ``ValueError`` on call); ``weights``
    and ``max_snippets`` go to :func:`~rootweaver_innovations.packing.pack`;
    ``embedder`` (optional, injected; see :mod:`rootweaver_innovations.embeddings`)
    switches the similarity from TF-IDF to dense cosine of its embeddings.
    """

    weights: SubmodularWeights = SubmodularWeights()
    max_snippets: int | None = None
    embedder: Embedder | None = None
    policy: str = "submodular"

    def __call__(
        self, context: str, *, max_chars: int, question: str = "", open_terms: Sequence[str] = ()
    ) -> CompactionResult:
        """Compact ``context`` to at most ``max_chars`` characters (``ValueError`` if < 1)."""
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValueError(f"max_chars must be a positive int, got {max_chars!r}")
        lines = context.split("\n")
        dropped: list[DroppedLine] = []
        positions: list[int] = []
        header_of: dict[int, int] = {}
        current = -1
        for i, line in enumerate(lines):
            if is_header(line):
                current = i
            elif not line.strip():
                dropped.append(DroppedLine(i, line, REASON_BLANK))
            else:
                positions.append(i)
                if current >= 0:
                    header_of[i] = current
        texts = [lines[i] for i in positions]
        relevance = tfidf_relevance(" ".join([question, *open_terms]), texts)
        candidates = []
        for k, i in enumerate(positions):
            fact = parse_fact(lines[i])
            doc = fact[0] if fact is not None else f"#{i}"
            candidates.append(Candidate(f"L{i}", doc, lines[i], i, float(relevance[k])))
        headers = {f"L{i}": Header(h, lines[h]) for i, h in header_of.items()}
        similarity = dense_similarity(self.embedder.encode(texts)) if self.embedder and texts else None
        res = pack(
            self.policy,
            candidates,
            " ".join([question, *open_terms]),
            Budget.chars(max_chars),
            similarity=similarity,
            weights=self.weights,
            max_snippets=self.max_snippets,
            headers=headers,
        )

        band: dict[int, int] = {}
        for p in res.packet:
            band[p.candidate.position] = p.step
            h = header_of.get(p.candidate.position)
            if h is not None:
                band[h] = min(band.get(h, p.step), p.step)
        dropped.extend(DroppedLine(o.candidate.position, o.candidate.text, o.reason) for o in res.omissions)
        dropped.extend(
            DroppedLine(i, line, REASON_ORPHAN_HEADER)
            for i, line in enumerate(lines)
            if is_header(line) and i not in band
        )
        return CompactionResult(
            text=res.text,
            kept=tuple(KeptLine(i, lines[i], band[i]) for i in sorted(band)),
            dropped=tuple(sorted(dropped, key=lambda d: d.position)),
            max_chars=max_chars,
            input_chars=len(context),
            strategy=self.policy,
        )
