"""``rootweaver serve --http``: the capability as an HTTP service (FastAPI on uvicorn; extra ``service``).

Routes (JSON unless said otherwise):

- ``POST /v1/ask`` ``{question, user_id?, session_id?, max_tokens?, compaction?}`` -> the
  ``rootweaver ask --json`` record (:class:`AskRecord`);
- ``POST /v1/ask/stream``: the same as Server-Sent Events, one ``hop`` event per hop as it
  is taken, then one ``answer`` event (the record) or one ``error`` event ``{status, error}``
  (:mod:`~rootweaver_capabilities.serving.stream`);
- ``GET /``: the page that asks the stream and shows why (:mod:`~rootweaver_capabilities.serving.page`),
  its files under ``/static/``;
- ``GET`` (or ``HEAD``) ``/healthz``: 200 once the index and the reader are loaded (they load
  before serving), with ``auth`` ``"bearer"`` when a key is needed;
- ``GET /metrics``: Prometheus text (this worker's registry); ``GET /openapi.json``.

With API keys (:mod:`~rootweaver_capabilities.serving.auth`) every route but ``GET /healthz``,
the page and its files needs ``Authorization: Bearer <key>`` (``/metrics`` too, unless ``service.metrics_public``);
a missing or wrong key is 401.

Every error is ``{"error": "<one line>"}``: 422 malformed JSON or a wrong field (naming it),
413 a question over ``service.max_question_chars`` (or a body far over it, refused from its
Content-Length before it is read), 503 with ``Retry-After`` when the queue is full, 504
past the request deadline, 403 when the capability flag is off; see
:mod:`~rootweaver_capabilities.serving.answerer` for admission and the deadline.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from rootweaver_capabilities.serving.answerer import COMPACTION_CHOICES, Answerer, AskOptions, Refusal
from rootweaver_capabilities.serving.auth import ApiKeyGate, redact_logs
from rootweaver_capabilities.serving.page import add_page
from rootweaver_capabilities.serving.stream import open_stream
from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.metrics import Metrics
from rootweaver_capabilities.assembly import build_synthesizer

__all__ = ["CONFIG_ENV", "KEYS_ENV", "AskRecord", "AskRequest", "app_from_env", "create_app", "run"]

CONFIG_ENV = "ROOTWEAVER_SERVICE_CONFIG"  # how `--workers N` hands the config file to each worker process
KEYS_ENV = "ROOTWEAVER_SERVICE_KEYS"  # ... and the API keys


class AskRequest(BaseModel):
    """The body of ``POST /v1/ask``; unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(description="The question (non-empty, at most service.max_question_chars characters).")
    user_id: str | None = Field(None, description="Passed to the flag provider (percentage rollouts).")
    session_id: str | None = Field(None, description="Passed to the flag provider.")
    max_tokens: int | None = Field(None, ge=1, description="Synth-context budget in reader tokens for this request.")
    compaction: Literal[COMPACTION_CHOICES] | None = Field(  # type: ignore[valid-type]
        None, description="Compaction strategy for this request; 'off' hands the reader the full context.")


class HopRecord(BaseModel):
    sub_query: str
    reason: str
    retrieved_ids: list[str]


class BudgetRecord(BaseModel):
    limit: int
    unit: str
    used: int


class MetaRecord(BaseModel):
    """A document's or record's metadata; only the fields it has are present."""

    title: str | None = None
    source: str | None = None
    published: str | None = Field(None, description="ISO 8601 date, or date and time with its offset when known.")
    author: str | None = None
    url: str | None = None
    extra: dict[str, str] | None = None


class SourceRecord(BaseModel):
    path: str
    headings: list[str]
    position: int
    prev: str | None = Field(None, description="The id of the chunk before this one in its document, if any.")
    next: str | None = Field(None, description="The id of the chunk after this one in its document, if any.")
    meta: MetaRecord | None = None


class Citation(BaseModel):
    """A cited fact; ``source`` for a chunk of a document, ``meta`` for a JSONL record with
    metadata of its own (each present only then)."""

    passage_id: str
    title: str
    sentence_index: int
    sentence: str
    source: SourceRecord | None = None
    meta: MetaRecord | None = None


class AnswerRecord(BaseModel):
    text: str
    method: str
    cited_lines: list[str]
    citations: list[Citation]
    reader: str
    error_kind: str | None
    error: str | None
    prompt_tokens: int | None


class DroppedLine(BaseModel):
    line: int
    reason: str
    text: str


class AskRecord(BaseModel):
    """What ``rootweaver ask --json`` prints (:func:`~rootweaver_capabilities.result_json.result_record`, detail)."""

    question: str
    hops: list[HopRecord]
    hop_count: int
    stop_reason: str
    full_context_chars: int
    context_chars: int
    compaction: bool
    strategy: str
    budget: BudgetRecord | None
    kept_lines: int | None
    kept_ids: list[str] | None
    dropped_lines: int | None
    answer: AnswerRecord | None
    synth_context: str
    dropped: list[DroppedLine]


class ErrorRecord(BaseModel):
    error: str


def _refused(exc: Refusal) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)


def _validation_line(exc: RequestValidationError) -> str:
    """FastAPI's list of validation errors as one line naming the first bad field."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    kind = first.get("type", "")
    if kind == "json_invalid":
        where = f" at character {loc[0]}" if loc else ""
        line = f"body: malformed JSON ({first.get('ctx', {}).get('error', 'cannot parse')}{where})"
    elif isinstance(first.get("input"), bytes):
        line = "body: not read as JSON (send Content-Type: application/json)"
    elif not loc:
        line = "body: must be a JSON object with a 'question' field"
    elif kind == "extra_forbidden":
        line = f"field '{'.'.join(loc)}': not a known field"
    else:
        line = f"field '{'.'.join(loc)}': {first.get('msg', 'invalid')}"
    more = len(errors) - 1
    return " ".join(line.split()) + (f" (and {more} more)" if more else "")


class _CountResponses:
    """ASGI middleware: counts responses by route (``other`` for any other path) and status."""

    def __init__(self, app: Any, responses: Any):
        self.app = app
        self.responses = responses

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"] if scope["path"] in _ROUTES else "other"

        async def counted(message: dict) -> None:
            if message["type"] == "http.response.start":
                self.responses.labels(path=path, status=str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counted)


class _BodyLimit:
    """ASGI middleware: refuses a body whose Content-Length is far over what the question
    limit allows (413, before reading it)."""

    def __init__(self, app: Any, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        length = dict(scope["headers"]).get(b"content-length") if scope["type"] == "http" else None
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            response = JSONResponse({"error": f"body: {int(length):,} bytes, over the limit of "
                                              f"{self.max_body_bytes:,} (service.max_question_chars)"},
                                    status_code=413)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


_ROUTES = ("/", "/v1/ask", "/v1/ask/stream", "/healthz", "/metrics", "/openapi.json")


def create_app(config: MultiHopConfig, api_keys: Sequence[str] = ()) -> FastAPI:
    """The service for ``config``; the index and the reader load in its start-up (lifespan).
    With ``api_keys`` every route but the public ones needs one of them, and they are scrubbed
    from the responses and from this process's log records."""
    from prometheus_client import CONTENT_TYPE_LATEST, Counter, generate_latest

    metrics = Metrics()
    responses = Counter("rootweaver_http_responses", "HTTP responses by route and status code.",
                        ["path", "status"], registry=metrics.registry)
    state: dict[str, Answerer] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state["answerer"] = Answerer(config, metrics)
        print(f"rootweaver: worker {os.getpid()} ready", file=sys.stderr, flush=True)
        try:
            yield
        finally:
            state.pop("answerer").close()

    app = FastAPI(title="rootweaver", version="0.1.0", lifespan=lifespan,
                  description="Multi-hop question answering over a corpus, with a compacted synthesis context.")
    app.add_middleware(_BodyLimit, max_body_bytes=12 * config.service.max_question_chars + 4096)
    if api_keys:  # outside the body limit, so an unauthenticated request learns nothing of it
        redact_logs(api_keys)
        app.add_middleware(ApiKeyGate, keys=api_keys, metrics_public=config.service.metrics_public)
    app.add_middleware(_CountResponses, responses=responses)  # outermost: 401s are counted too

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_line(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": " ".join(str(exc.detail).split())}, status_code=exc.status_code,
                            headers=exc.headers)

    @app.exception_handler(Refusal)
    async def _refusal(_request: Request, exc: Refusal) -> JSONResponse:
        return _refused(exc)

    errors = {code: {"model": ErrorRecord} for code in (403, 413, 422, 500, 503, 504)}

    @app.post("/v1/ask", response_model=AskRecord, response_model_exclude_unset=True, responses=errors)
    async def ask(body: AskRequest) -> dict[str, Any]:
        """Answer one question; the record of ``rootweaver ask --json``."""
        return await state["answerer"].ask(body.question, AskOptions(body.max_tokens, body.compaction),
                                           user_id=body.user_id, session_id=body.session_id)

    @app.post("/v1/ask/stream", responses={200: {"content": {"text/event-stream": {}}}, **errors})
    async def ask_stream(body: AskRequest) -> StreamingResponse:
        """Server-Sent Events: ``hop`` per hop as it is taken, then ``answer`` (the record of
        ``/v1/ask``) or ``error`` (``{status, error}``)."""
        events = open_stream(state["answerer"], body.question, AskOptions(body.max_tokens, body.compaction),
                             user_id=body.user_id, session_id=body.session_id)
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.api_route("/healthz", methods=["GET", "HEAD"])
    async def healthz() -> JSONResponse:
        """200 ``{"status": "ok", ...}`` once the index and the reader are loaded, else 503."""
        answerer = state.get("answerer")
        if answerer is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ok", "pid": os.getpid(), "reader": config.llm.provider,
                             "index": config.retriever.index, "in_flight": answerer.in_flight,
                             "auth": "bearer" if api_keys else "none"})

    @app.get("/metrics", response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        """This worker's Prometheus metrics (capability series and HTTP responses)."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    add_page(app)
    return app


def app_from_env() -> FastAPI:
    """The app for the config file named by ``$ROOTWEAVER_SERVICE_CONFIG`` (empty: every default)
    and the keys in ``$ROOTWEAVER_SERVICE_KEYS`` (one a line) (uvicorn's factory in each worker)."""
    config = MultiHopConfig.load(os.environ.get(CONFIG_ENV) or None)
    return create_app(config, os.environ.get(KEYS_ENV, "").split())


def run(config_path: Path | None, host: str, port: int, workers: int = 1, api_keys: Sequence[str] = ()) -> None:
    """Serve on ``host:port`` until SIGINT/SIGTERM; ``workers`` > 1 forks that many processes
    (each opens the memory-mapped index and loads the reader before it accepts requests, and
    gets the config file and the keys through its environment); ``config_path`` ``None``: every
    default."""
    import uvicorn

    config = MultiHopConfig.load(config_path)  # a bad config fails here, once, before any worker starts
    build_synthesizer(config)  # likewise a reader that is not installed
    if config.llm.provider == "local" and config.llm.model_path is None:
        from rootweaver_capabilities.readers.models import DEFAULT_READER, ensure_model

        ensure_model(DEFAULT_READER)  # assembled once, not raced by the workers
    common = dict(host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)
    if workers == 1:
        uvicorn.run(create_app(config, api_keys), **common)
    else:
        os.environ[CONFIG_ENV] = "" if config_path is None else str(config_path.resolve())
        os.environ[KEYS_ENV] = "\n".join(api_keys)
        uvicorn.run(f"{__name__}:app_from_env", factory=True, workers=workers, **common)
