"""One answer as Server-Sent Events, hop by hop as the loop takes them (``POST /v1/ask/stream``).

Each event is one chunk ``event: NAME\\ndata: JSON\\n\\n`` (UTF-8, the JSON on one line):

- ``hop`` ``{"hop", "sub_query", "reason", "retrieved_ids", "titles"}`` for each hop, in
  order, sent as soon as the loop has taken it (``hop`` counts from 1; ``titles`` are the
  titles of the passages in ``retrieved_ids``, same order);
- then exactly one last event: ``answer`` with the record ``POST /v1/ask`` returns for the
  same request, or ``error`` ``{"status", "error"}`` (the status ``/v1/ask`` would have
  answered with and its one-line message) when the answer failed after the stream began.

A request refused before it is admitted (bad field, too long, busy) never starts a stream:
:func:`open_stream` raises the :class:`~rootweaver_capabilities.serving.answerer.Refusal`.
A client that goes away only closes its generator: the answer finishes in its pool thread
(holding its admission slot until then, so the count stays true) and its events are dropped.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from concurrent.futures import Future
from typing import Any

from rootweaver_innovations.loop.multihop import Hop

from rootweaver_capabilities.serving.answerer import Answerer, AskOptions, Refusal, internal_error

__all__ = ["hop_event", "open_stream", "sse"]


def hop_event(index: int, hop: Hop) -> dict[str, Any]:
    """The ``hop`` event's data for the ``index``-th hop (from 1)."""
    return {"hop": index, "sub_query": hop.sub_query, "reason": hop.reason,
            "retrieved_ids": list(hop.retrieved_ids), "titles": list(hop.titles)}


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One Server-Sent Event: its name and its data as one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def open_stream(answerer: Answerer, question: str, options: AskOptions, *, user_id: str | None = None,
                session_id: str | None = None) -> AsyncIterator[bytes]:
    """Admit one request (else :class:`Refusal` at once) and return its events; call it on
    the event loop that will read them."""
    loop = asyncio.get_running_loop()
    hops: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    count = itertools.count(1)

    def on_hop(hop: Hop) -> None:  # in the answer thread
        try:
            loop.call_soon_threadsafe(hops.put_nowait, hop_event(next(count), hop))
        except RuntimeError:  # the event loop is closed: the server is stopping and nobody reads
            pass

    future = answerer.submit(question, options, user_id=user_id, session_id=session_id, on_hop=on_hop)
    return _events(answerer, future, hops)


async def _events(answerer: Answerer, future: Future[dict[str, Any]],
                  hops: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[bytes]:
    """``hop`` events while the answer runs, then ``answer`` or ``error``. The hops a thread
    reports are queued on the loop before its result is, so none is lost at the end."""
    done = asyncio.ensure_future(answerer.wait(future))
    getter: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            getter = asyncio.ensure_future(hops.get())
            await asyncio.wait({getter, done}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield sse("hop", getter.result())
                continue
            getter.cancel()
            while not hops.empty():
                yield sse("hop", hops.get_nowait())
            yield _final(done)
            return
    finally:  # also when the client went away mid-stream
        if getter is not None:
            getter.cancel()
        if done.done():
            if not done.cancelled():
                done.exception()  # retrieved, so asyncio does not log it as lost
        else:
            done.cancel()  # stops waiting only: the answer's thread finishes on its own


def _final(done: asyncio.Future[dict[str, Any]]) -> bytes:
    try:
        return sse("answer", done.result())
    except Exception as exc:  # noqa: BLE001 - one error event; the server keeps serving
        refusal = exc if isinstance(exc, Refusal) else internal_error(exc)
        return sse("error", {"status": refusal.status, "error": refusal.message})
