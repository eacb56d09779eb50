"""The one JSON-ready form of a :class:`~rootweaver_innovations.multihop.MultiHopResult`.

``rootweaver ask --json`` prints it, ``rootweaver serve`` and the capability's
``context.metadata["multi_hop"]`` carry it; a compaction that did not run is strategy
``"off"`` (and ``compaction`` false, ``budget``/``kept_lines``/``dropped_lines`` null) everywhere.
"""

from __future__ import annotations

from typing import Any

from rootweaver_innovations.multihop import MultiHopResult

__all__ = ["result_record"]


def result_record(res: MultiHopResult, *, detail: bool = False) -> dict[str, Any]:
    """Hops, stop reason, sizes, the compaction summary and the answer of ``res``.

    ``detail`` adds the texts: the question, the synth context and each dropped line with
    its reason (for a person reading one answer; metadata for a runtime leaves them out).
    """
    comp = res.compaction
    answer = res.answer
    out: dict[str, Any] = {
        "hops": [{"sub_query": h.sub_query, "retrieved_ids": list(h.retrieved_ids)} for h in res.hops],
        "hop_count": res.hop_count,
        "stop_reason": res.stop_reason,
        "full_context_chars": res.full_context_chars,
        "context_chars": res.context_chars,
        "compaction": comp is not None,
        "strategy": comp.strategy if comp is not None else "off",
        "budget": {"limit": comp.limit, "unit": comp.unit, "used": comp.used} if comp is not None else None,
        "kept_lines": len(comp.kept) if comp is not None else None,
        "dropped_lines": len(comp.dropped) if comp is not None else None,
        "answer": {"text": answer.text, "method": answer.method, "cited_lines": list(answer.cited_lines)}
        if answer is not None else None,
    }
    if detail:
        out = {"question": res.question, **out, "synth_context": res.synth_context,
               "dropped": [{"line": d.position, "reason": d.reason, "text": d.text} for d in comp.dropped]
               if comp is not None else []}
    return out
