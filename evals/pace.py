"""PACE evaluations: evidence frontloading (offline recall) and adaptive rerank depth (simulation).

``rootweaver eval frontload|pace`` lands in :func:`main`. The work is split by kind:

- :mod:`evals.frontload_eval`: (a) ``frontload``, complete-evidence recall@5 of BM25 top
  100 -> ordering (first stage, PACE frontloading, MMR) -> first ``D`` re-scored -> top 5,
  over an open pool of a dataset's paragraphs;
- :mod:`evals.pace_sim`: (b) ``pace``, a discrete-event simulation of an open-loop
  Poisson stream through a single-server reranker and an LLM stage, fixed ``D`` versus the
  pressure-adaptive controller (pure computation on the service times it is given);
- :mod:`evals.pace_render`: the Markdown tables and the PNG;
- this module: the CLI and the two measurements that feed the simulation, the reranker's
  service time per ``D`` (the real :class:`~evals.rerank.BiEncoderScorer`
  on this machine) and, when ``LLM_BASE_URL`` is set, the LLM's mean service time through
  the product's :class:`~rootweaver_capabilities.readers.openai_client.OpenAIChatClient`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rootweaver_innovations.documents.corpus import Passage

from .datasets import DATASETS, DEFAULT_DATA_ROOT, build_open_pool, load_rows
from .frontload_eval import run_frontload_eval
from .pace_render import frontload_markdown, pace_markdown, plot_pace
from .pace_sim import FIXED_DEPTHS, run_pace_simulation
from .report import write_json, write_text

LLM_API_KEY_ENV = "ROOTWEAVER_LLM_API_KEY"  # the product's default (rootweaver_capabilities.config)


def measure_rerank_service(embedder, passages: Sequence[Passage], depths: Sequence[int], reps: int = 3, batch: int = 20) -> dict:
    """Median wall time of the real :class:`BiEncoderScorer` scoring ``D`` passages, per ``D``.

    No passage vector is precomputed, so each call encodes its ``D`` passages in batches of
    ``batch`` (the work a cross-encoder does per query; sets ``embedder.batch_size``). Returns ``{"median": {D: s},
    "all": {D: [s, ...]}}``.
    """
    import time

    from evals.rerank import BiEncoderScorer

    if len(passages) < max(depths):
        raise ValueError(f"need {max(depths)} passages to time depth {max(depths)}, got {len(passages)}")
    if hasattr(embedder, "batch_size"):
        embedder.batch_size = batch
    scorer = BiEncoderScorer(embedder)
    scorer.score("warm up", list(passages[:batch]))
    times: dict[int, list[float]] = {}
    for d in sorted(set(depths)):
        times[d] = []
        for r in range(reps):
            head = list(passages[r : r + d])
            t0 = time.perf_counter()
            scorer.score(f"timing query {r}", head)
            times[d].append(time.perf_counter() - t0)
    return {"median": {d: float(np.median(v)) for d, v in times.items()}, "all": times}


def measure_llm_service(
    base_url: str,
    prompts: Sequence[str],
    max_tokens: int = 32,
    model: str | None = None,
    *,
    context_window: int = 2048,
    transport=None,
) -> float:
    """Mean seconds per request of sequential chat completions at an OpenAI-compatible ``base_url``.

    Sent by the product's :class:`~rootweaver_capabilities.readers.openai_client.OpenAIChatClient` with no
    retries (a retried request would time two) at temperature 0; each request counts its
    ``ChatCompletion.latency_s`` (the POST and the reply, not the client's prompt-token
    count). ``base_url`` with or without the ``/v1`` prefix; ``model`` defaults to the first
    one the server lists at ``/models``; the key, if any, is read from
    ``$ROOTWEAVER_LLM_API_KEY``. A prompt that does not fit ``context_window`` with
    ``max_tokens`` reserved is refused before sending. ``transport`` (an
    ``httpx.BaseTransport``) is for tests. Any failure raises ``RuntimeError`` naming the
    server. Needs the ``llm`` extra (httpx).
    """
    import os

    try:
        import httpx

        from rootweaver_capabilities.readers.errors import LLMError
        from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("timing the LLM needs the 'llm' extra: pip install 'rootweaver[llm]'") from exc

    if not prompts:
        raise ValueError("need at least one prompt to time the LLM")
    root = base_url.rstrip("/")
    root = root if root.endswith("/v1") else root + "/v1"
    key = os.environ.get(LLM_API_KEY_ENV)
    try:
        if model is None:
            with httpx.Client(timeout=30, transport=transport) as http:
                resp = http.get(root + "/models", headers={"Authorization": f"Bearer {key}"} if key else {})
                resp.raise_for_status()
                model = str(resp.json()["data"][0]["id"])
        with OpenAIChatClient(
            root, model, api_key_env=LLM_API_KEY_ENV, timeout_s=600, max_retries=0,
            context_window=context_window, max_tokens=max_tokens, transport=transport,
        ) as client:
            times = [
                client.chat([{"role": "user", "content": p}], max_tokens=max_tokens, temperature=0.0).latency_s
                for p in prompts
            ]
    except (httpx.HTTPError, LLMError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise RuntimeError(
            f"could not time the LLM at {root} ({exc}); unset LLM_BASE_URL to use the configured rate"
        ) from exc
    return float(np.mean(times))


def _write(out_dir: Path, stem: str, report: dict, markdown: str) -> None:
    write_json(out_dir / f"{stem}.json", report)
    write_text(out_dir / f"{stem}.md", markdown)


def _pace_report(args) -> dict:
    """``pace``: time the reranker (or reuse timings) and the LLM (if ``LLM_BASE_URL``), then simulate."""
    import json
    import os

    from evals.frontload import DepthController

    controller = DepthController()
    llm_base_url = os.environ.get("LLM_BASE_URL") or None
    kwargs: dict = {"rates": args.rates} if args.rates else {}
    if args.recall_from:
        fl_report = json.loads(args.recall_from.read_text(encoding="utf-8"))
        kwargs["recall_by_depth"] = {int(d): v for d, v in fl_report["subsets"]["all"]["recall"]["frontload"].items()}
    if args.service_from is None or llm_base_url:
        rows = load_rows("hotpotqa", 40, args.data_root)
        passages = list(build_open_pool(rows).passages)
    if args.service_from:
        earlier = json.loads(args.service_from.read_text(encoding="utf-8"))["rerank_service_measured"]
        kwargs["rerank_samples"] = {int(d): v for d, v in earlier["all_s"].items()}
    else:
        from rootweaver_innovations.retrieval.embeddings import MiniLMEmbedder

        depths = sorted(set(FIXED_DEPTHS) | set(controller.depths))
        measured = measure_rerank_service(MiniLMEmbedder(), passages, depths, args.reps, controller.batch)
        kwargs["rerank_samples"] = measured["all"]
        kwargs["samples_provenance"] = {
            "source": "timed in this run",
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
    llm = {"llm_service_s": args.llm_service, "llm_servers": args.llm_servers}
    if llm_base_url:
        from evals.rerank import passage_text

        prompts = [
            "Answer briefly.\n" + "\n".join(passage_text(p) for p in passages[5 * i : 5 * i + 5]) + f"\nQuestion: {q}"
            for i, q in enumerate(r.question for r in rows[:3])
        ]
        llm = {
            "llm_service_s": measure_llm_service(llm_base_url, prompts),
            "llm_servers": 1,
            "llm_source": f"measured at {llm_base_url}",
        }
    return run_pace_simulation(
        controller=controller, n_requests=args.requests, warmup=args.requests // 10, seed=args.seed,
        llm_cv=args.llm_cv, **llm, **kwargs,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``frontload`` or ``pace``: run the eval, print Markdown, write JSON + Markdown (+ PNG)."""
    import argparse

    parser = argparse.ArgumentParser(prog="rootweaver eval", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fl = sub.add_parser("frontload", help="complete-evidence recall@5 with/without frontloading, per depth")
    fl.add_argument("--dataset", choices=sorted(DATASETS), default="hotpotqa")
    fl.add_argument("--limit", type=int, default=None, help="questions evaluated (the pool is always all rows)")
    fl.add_argument("--depths", type=int, nargs="+", default=[20, 50, 100])
    fl.add_argument("--k", type=int, default=5)
    fl.add_argument("--seed", type=int, default=13)
    fl.add_argument("--anchor-weight", type=float, default=None, help="frontloading soft-anchor weight")
    fl.add_argument("--seed-expansion", type=float, default=None, help="frontloading seed-term dimension weight")
    pc = sub.add_parser("pace", help="serving simulation: fixed vs adaptive rerank depth")
    pc.add_argument("--rates", type=float, nargs="+", default=None, help="arrival rates, requests/s")
    pc.add_argument("--requests", type=int, default=3000)
    pc.add_argument("--reps", type=int, default=3, help="timing repetitions per depth")
    pc.add_argument("--llm-service", type=float, default=6.0, help="mean LLM service time, s (configured mode)")
    pc.add_argument("--llm-servers", type=int, default=4, help="parallel LLM slots (configured mode)")
    pc.add_argument("--recall-from", type=Path, default=None,
                    help="a frontload eval JSON: adds each policy's recall@5 (frontload ordering, subset 'all')")
    pc.add_argument("--tag", default="", help="suffix of the output file names")
    pc.add_argument("--service-from", type=Path, default=None,
                    help="reuse the rerank timings of an earlier pace report JSON instead of timing again")
    pc.add_argument("--llm-cv", type=float, default=0.5)
    pc.add_argument("--seed", type=int, default=7)
    for p in (fl, pc):
        p.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
        p.add_argument("--out", type=Path, default=Path("out/pace"))
    args = parser.parse_args(argv)
    if args.command == "frontload":
        options = {
            key: value
            for key, value in (("anchor_weight", args.anchor_weight), ("seed_expansion", args.seed_expansion))
            if value is not None
        }
        report = run_frontload_eval(
            args.dataset, args.limit, depths=args.depths, k=args.k, data_root=args.data_root, seed=args.seed,
            frontload_options=options,
        )
        md = frontload_markdown(report)
        tag = "".join(f"_{k}{v:g}" for k, v in options.items())
        _write(args.out, f"frontload_{args.dataset}_{args.limit or 'all'}{tag}", report, md)
    else:
        report = _pace_report(args)
        md = pace_markdown(report)
        stem = f"pace_simulation{args.tag}"
        _write(args.out, stem, report, md)
        md += f"\nPlot: {plot_pace(report, args.out / f'{stem}.png')}\n"
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
