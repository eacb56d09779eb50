"""The one JSON-ready form of a :class:`~rootweaver_innovations.loop.multihop.MultiHopResult`.

``rootweaver ask --json`` prints it, ``rootweaver serve`` and the capability's
``context.metadata["multi_hop"]`` carry it; a compaction that did not run is strategy
``"off"`` (and ``compaction`` false, ``budget``/``kept_lines``/``kept_ids``/``dropped_lines`` null)
everywhere.
"""

from __future__ import annotations

from typing import Any

from rootweaver_innovations.loop.multihop import Answer, MultiHopResult
from rootweaver_innovations.records import Fact

from rootweaver_capabilities.readers.prompts import ReaderAnswer

__all__ = ["answer_record", "result_record"]


def _citation(f: Fact) -> dict[str, Any]:
    out: dict[str, Any] = {"passage_id": f.passage_id, "title": f.title, "sentence_index": f.sentence_index,
                           "sentence": f.body}
    if f.source is not None:
        out["source"] = {"path": f.source.path, "headings": list(f.source.headings), "position": f.source.position,
                         "prev": f.source.prev, "next": f.source.next}
        if f.meta is not None:
            out["source"]["meta"] = f.meta.to_json()
    elif f.meta is not None:
        out["meta"] = f.meta.to_json()
    return out


def answer_record(answer: Answer | None) -> dict[str, Any] | None:
    """``{"text", "method", "cited_lines", "citations", "reader", "error_kind", "error",
    "prompt_tokens"}`` of one answer (this request's own outcome; ``cited_lines`` the cited
    facts' context lines, ``citations`` the same facts as ``{passage_id, title,
    sentence_index, sentence}``, plus ``source`` ``{path, headings, position, prev, next}`` for a
    chunk of a document (``prev``/``next``: the ids of the chunks before and after it, or null),
    with ``meta`` (its metadata: title, source, published, author, url, extra) when it has any,
    and ``meta`` beside them for a JSONL record with metadata of its own;
    ``reader`` the model asked, ``"none"`` when no model was
    (extractive or computed answers); ``error_kind`` ``None`` unless the reader failed and the
    answer degraded to the extractive one); ``None`` without a synthesizer."""
    if answer is None:
        return None
    outcome = answer if isinstance(answer, ReaderAnswer) else None
    return {
        "text": answer.text,
        "method": answer.method,
        "cited_lines": [f.line for f in answer.citations],
        "citations": [_citation(f) for f in answer.citations],
        "reader": outcome.reader if outcome else "none",
        "error_kind": (outcome.error_kind or None) if outcome else None,
        "error": (outcome.error or None) if outcome else None,
        "prompt_tokens": outcome.prompt_tokens if outcome else None,
    }


def result_record(res: MultiHopResult, *, detail: bool = False) -> dict[str, Any]:
    """Hops, stop reason, sizes, the compaction summary and the answer of ``res``.

    ``detail`` adds the texts: the question, the synth context and each dropped line with
    its reason (for a person reading one answer; metadata for a runtime leaves them out).
    """
    comp = res.compaction
    dropped = comp.dropped_lines() if comp is not None else ()
    out: dict[str, Any] = {
        "hops": [{"sub_query": h.sub_query, "reason": h.reason, "retrieved_ids": list(h.retrieved_ids)}
                 for h in res.hops],
        "hop_count": res.hop_count,
        "stop_reason": res.stop_reason,
        "full_context_chars": res.full_context_chars,
        "context_chars": res.context_chars,
        "compaction": comp is not None,
        "strategy": comp.strategy if comp is not None else "off",
        "budget": {"limit": comp.budget.limit, "unit": comp.budget.unit, "used": comp.used} if comp is not None else None,
        "kept_lines": comp.context.rendering.line_count if comp is not None else None,
        # the passages the synth context holds a sentence of, in order, each once
        "kept_ids": list(dict.fromkeys(f.passage_id for f in comp.context.facts)) if comp is not None else None,
        "dropped_lines": len(dropped) if comp is not None else None,
        "answer": answer_record(res.answer),
    }
    if detail:
        out = {"question": res.question, **out, "synth_context": res.synth_context,
               "dropped": [{"line": d.position, "reason": d.reason, "text": d.text} for d in dropped]}
    return out
