"""``rootweaver serve``: the capability over HTTP (``--http``) or one JSON line per stdin question."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rootweaver_capabilities.cli.argtypes import UsageError, host_port, positive_int
from rootweaver_capabilities.cli.options import api_key_options, service_config_option, service_keys
from rootweaver_capabilities.cli.safe_output import json_text

__all__ = ["add_serve_parser"]


def _cmd_serve(args: argparse.Namespace) -> int:
    """With ``--http``: the HTTP service (``rootweaver_capabilities.serving.http``) until stopped.
    Otherwise (``--stdin``, the default) answer questions from stdin through the capability,
    one JSON line per question: ``question``, ``answer``, ``method``, ``cited_lines`` and the capability's metadata
    (``multi_hop``). A failing request never ends the loop: a reader failure is already an
    extractive answer with ``multi_hop.answer.error_kind``; any other error is reported
    in ``error`` and the next line is read. Optional /metrics on 127.0.0.1."""
    if args.http is not None:
        from rootweaver_capabilities.serving.http import run

        if args.metrics_port is not None or args.user_id is not None:
            raise UsageError("--metrics-port and --user-id are stdin-mode options (with --http: GET /metrics, "
                             "user_id in the request)")
        run(args.config, *args.http, workers=args.workers, api_keys=service_keys(args))
        return 0
    service_keys(args)  # refuses key options without --http
    if args.workers != 1:
        raise UsageError("--workers needs --http")
    from rootweaver_capabilities.assembly import build_synthesizer
    from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
    from rootweaver_capabilities.config import MultiHopConfig
    from rootweaver_capabilities.metrics import Metrics

    config = MultiHopConfig.load(args.config)
    synthesizer = build_synthesizer(config)  # a missing reader fails here, once, exit 2
    if hasattr(synthesizer, "load"):  # tokenizer / model loaded before the first request's deadline
        synthesizer.load()
    metrics = Metrics()
    if args.metrics_port is not None:
        server = metrics.serve(args.metrics_port)
        print(f"metrics: http://{server.addr}:{server.port}/metrics", file=sys.stderr, flush=True)
    capability = MultiHopCapability(config, metrics=metrics, synthesizer=synthesizer)
    for line in sys.stdin:
        question = line.strip()
        if not question:
            continue
        if too_long := config.service.question_too_long(question):  # as the HTTP service refuses it (413)
            print(json_text({"question": question[:config.service.max_question_chars], "answer": None,
                             "method": None, "cited_lines": [], "error": f"question of {too_long}"}), flush=True)
            continue
        ctx = RequestContext(query=question, user_id=args.user_id)
        try:
            capability.execute(ctx)
        except Exception as exc:  # noqa: BLE001 - one bad request must not end serving
            ctx.metadata["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        answer = (ctx.metadata.get("multi_hop") or {}).get("answer") or {}
        print(json_text({"question": question, "answer": answer.get("text"), "method": answer.get("method"),
                         "cited_lines": answer.get("cited_lines", []), **ctx.metadata}, default=str), flush=True)
    return 0


def add_serve_parser(sub: Any) -> None:
    """``serve`` on the top-level subparsers ``sub``."""
    serve = sub.add_parser("serve", help="answer questions over HTTP (--http) or from stdin (the default)")
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--http", type=host_port, metavar="[HOST:]PORT",
                      help="HTTP service (POST /v1/ask, /v1/ask/stream, /healthz, /metrics); host 127.0.0.1 by default")
    mode.add_argument("--stdin", action="store_true", help="one question per stdin line, one JSON line out (default)")
    serve.add_argument("--workers", type=positive_int, default=1, help="--http: worker processes sharing the index")
    service_config_option(serve)
    api_key_options(serve)
    serve.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on 127.0.0.1:PORT")
    serve.add_argument("--user-id", help="user id passed to the flag provider (percentage rollouts)")
    serve.set_defaults(func=_cmd_serve)
