"""``rootweaver mcp``: the capability as an MCP server (official ``mcp`` SDK; extra ``service``).

One tool, ``multi_hop_answer(question, max_tokens=None)``: its structured content is a
:class:`ToolAnswer` (the answer, how it was produced, the context lines it cites, the hop
trail, the stop reason and the URI of its synth context); a refused request (empty or
over-long question, busy, past the deadline) is a tool error with a one-line message.
The synth context of the last :data:`KEPT_CONTEXTS` answers is readable as the resource
``rootweaver://synth-context/{answer_id}``.

Transports: stdio (the default; stdout carries only the protocol) or streamable HTTP at
``http://HOST:PORT/mcp`` (stateless, JSON responses: every call stands alone), behind
``Authorization: Bearer <key>`` when API keys are given
(:class:`~rootweaver_capabilities.serving.auth.ApiKeyGate`). The index
and the reader load before the server starts; the answers run on the
:class:`~rootweaver_capabilities.serving.answerer.Answerer`'s bounded pool.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ResourceError, ToolError
from pydantic import BaseModel, Field

from rootweaver_capabilities.serving.answerer import Answerer, AskOptions, Refusal
from rootweaver_capabilities.serving.auth import ApiKeyGate, redact_logs
from rootweaver_capabilities.config import MultiHopConfig

__all__ = ["KEPT_CONTEXTS", "HopTrail", "ToolAnswer", "build_server", "run"]

KEPT_CONTEXTS = 64
CONTEXT_URI = "rootweaver://synth-context/{answer_id}"
TOOL_DESCRIPTION = ("Answer a question that needs facts from several documents: retrieve over several hops, "
                    "compact the evidence, read the answer. Returns the answer, the context lines it cites "
                    "and the hop trail.")


class HopTrail(BaseModel):
    """One hop: the sub-query issued, why it was taken and the ids of the passages it added."""

    sub_query: str
    reason: str
    retrieved_ids: list[str]


class ToolAnswer(BaseModel):
    """The structured result of ``multi_hop_answer``."""

    answer: str = Field(description="The answer text.")
    method: str = Field(description="How it was produced: the reader model, or the labelled extractive fallback.")
    cited_lines: list[str] = Field(description="The synth-context lines the answer cites.")
    citations: list[dict[str, Any]] = Field(description=(
        "The cited facts: passage_id, title, sentence_index, sentence, and for a document's chunk its source "
        "(path, headings, position, prev, next: the neighbouring chunks' ids, meta: title, source, published, "
        "author, url); as in `ask --json`."))
    hops: list[HopTrail] = Field(description="The retrieval hops, in order.")
    stop_reason: str = Field(description="Why the hop loop stopped.")
    reader_error: str | None = Field(description="Why the reader failed when the answer degraded to extractive.")
    synth_context_uri: str = Field(description="Resource holding the synth context the answer was read from.")


def build_server(config: MultiHopConfig, host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The MCP server for ``config`` (index and reader loaded now); ``host``/``port`` are
    used by the streamable-HTTP transport only."""
    answerer = Answerer(config)
    contexts: OrderedDict[str, str] = OrderedDict()
    lock = threading.Lock()
    ids = itertools.count(1)
    server = FastMCP("rootweaver", host=host, port=port, log_level="WARNING", stateless_http=True, json_response=True,
                     instructions="Multi-hop question answering over rootweaver's corpus: call multi_hop_answer "
                                  "with a question that needs facts from several documents.")

    @server.tool(structured_output=True, description=TOOL_DESCRIPTION)
    async def multi_hop_answer(
        question: Annotated[str, Field(description="The question, in natural language.")],
        max_tokens: Annotated[int | None, Field(  # >= 1 checked by the answerer: a one-line refusal
            json_schema_extra={"minimum": 1},
            description="Budget of the synthesis context in reader tokens; default: the configured one.")] = None,
    ) -> ToolAnswer:
        try:
            record = await answerer.ask(question, AskOptions(max_tokens=max_tokens))
        except Refusal as exc:
            raise ToolError(exc.message) from None
        answer = record["answer"]
        answer_id = str(next(ids))
        with lock:
            contexts[answer_id] = record["synth_context"]
            if len(contexts) > KEPT_CONTEXTS:
                contexts.popitem(last=False)
        return ToolAnswer(answer=answer["text"], method=answer["method"], cited_lines=answer["cited_lines"],
                          citations=answer["citations"], hops=[HopTrail(**h) for h in record["hops"]], stop_reason=record["stop_reason"],
                          reader_error=answer["error"], synth_context_uri=CONTEXT_URI.format(answer_id=answer_id))

    @server.resource(CONTEXT_URI, mime_type="text/plain", description="The synth context of a recent answer.")
    def synth_context(answer_id: str) -> str:
        with lock:
            text = contexts.get(answer_id)
        if text is None:
            raise ResourceError(f"no synth context for answer {answer_id} (only the last {KEPT_CONTEXTS} are kept)")
        return text

    return server


def run(config_path: Path | None, http: tuple[str, int] | None = None, api_keys: Sequence[str] = ()) -> None:
    """Serve over stdio, or over streamable HTTP at ``http = (host, port)`` (needing one of
    ``api_keys`` when there are any), until stopped; ``config_path`` ``None``: every default."""
    config = MultiHopConfig.load(config_path)
    if http is None:
        build_server(config).run("stdio")
        return
    import uvicorn

    app = build_server(config, *http).streamable_http_app()
    if api_keys:
        redact_logs(api_keys)
        app = ApiKeyGate(app, api_keys)
    uvicorn.run(app, host=http[0], port=http[1], log_level="warning")
