"""PACE evaluations: evidence frontloading (offline recall) and adaptive rerank depth (simulation).

(a) ``frontload``: every paragraph of every question of a dataset is pooled into one open
corpus (deduplicated by ``(title, text)``), BM25 retrieves the top 100, the pool is ordered
(first-stage order, PACE frontloading, or MMR), the first ``D`` are re-scored by the
second stage and the top 5 kept. Metric: complete-evidence recall@5, the share of questions
whose gold paragraphs are *all* in the final top 5.

(b) ``pace``: a discrete-event simulation of an open-loop Poisson stream through a
single-server reranker (service time per ``D`` measured here from the real
:class:`~rootweaver_innovations.rerank.BiEncoderScorer`) and an LLM stage (a configured
rate, or measured from an OpenAI-compatible reader at ``LLM_BASE_URL``), fixed ``D`` versus
the pressure-adaptive controller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rootweaver_innovations.corpus import Passage
from rootweaver_innovations.diagnostics import paired_bootstrap_ci

from .datasets import (
    DATASETS,
    DEFAULT_CACHE,
    DEFAULT_DATA_ROOT,
    build_open_pool,
    cached_embeddings,
    load_rows,
)
from .report import write_json, write_text


class _KnownVectors:
    """An embedder that answers precomputed texts from a table and defers the rest."""

    def __init__(self, embedder, texts: Sequence[str], vectors: np.ndarray):
        self.name = getattr(embedder, "name", "embedder")
        self._inner = embedder
        self._known = {t: v for t, v in zip(texts, vectors, strict=True)}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if texts and all(t in self._known for t in texts):
            return np.stack([self._known[t] for t in texts])
        return self._inner.encode(texts)


def run_frontload_eval(
    dataset: str = "hotpotqa",
    limit: int | None = None,
    *,
    depths: Sequence[int] = (20, 50, 100),
    k: int = 5,
    pool_size: int = 100,
    pool_limit: int | None = None,
    data_root: Path = DEFAULT_DATA_ROOT,
    cache_dir: Path = DEFAULT_CACHE,
    embedder=None,
    seed: int = 13,
    frontload_options: dict | None = None,
) -> dict:
    """Complete-evidence recall@k after the bi-encoder second stage, per ordering and depth.

    The open pool holds every paragraph of the first ``pool_limit`` rows (default: all
    rows of the dataset); the first ``limit`` rows are the questions evaluated. Rows with
    no gold paragraph in the pool are counted and left out. ``subset="gold_in_pool"``
    restricts to questions whose gold paragraphs are all in the BM25 top ``pool_size``
    (the source paper's filter). Returns a JSON-ready report dict.
    """
    import time

    from rootweaver_innovations.rerank import (
        ORDERINGS,
        BiEncoderScorer,
        BM25TermVectors,
        TwoStageRetriever,
        passage_text,
    )
    from rootweaver_innovations.retrieval import BM25Retriever

    if k < 1 or pool_size < 1 or not depths or min(depths) < 1:
        raise ValueError(f"k, pool_size and every depth must be >= 1, got k={k}, pool_size={pool_size}, depths={depths}")
    t0 = time.perf_counter()
    pool_rows = load_rows(dataset, pool_limit, data_root)
    n_eval = len(pool_rows) if limit is None else min(limit, len(pool_rows))
    pool = build_open_pool(pool_rows)
    if embedder is None:
        from rootweaver_innovations.embeddings import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    p_vecs = cached_embeddings([passage_text(p) for p in pool.passages], embedder, cache_dir)
    questions = list(pool.questions[:n_eval])
    q_vecs = cached_embeddings(questions, embedder, cache_dir)
    t_embed = time.perf_counter() - t0
    bm25 = BM25Retriever(pool.passages)
    vectors = BM25TermVectors(pool.passages)
    scorer = BiEncoderScorer(_KnownVectors(embedder, questions, q_vecs), [p.id for p in pool.passages], p_vecs)
    options = dict(frontload_options or {})
    retrievers = {
        o: TwoStageRetriever(bm25, scorer, pool_size=pool_size, ordering=o, term_vectors=vectors, **(options if o == "frontload" else {}))
        for o in ORDERINGS
    }
    per_question = []
    no_gold = 0
    for qi in range(n_eval):
        gold = pool.gold[qi]
        if not gold:
            no_gold += 1
            continue
        query = questions[qi]
        cands = retrievers["first_stage"].candidates(query)
        cand_ids = [c.passage.id for c in cands]
        row = {"index": qi, "n_gold": len(gold), "gold_in_pool": gold <= set(cand_ids), "prefix": {}, "complete": {}}
        for name, retriever in retrievers.items():
            order = retriever.order(query, cands)
            row["prefix"][name] = {d: gold <= {cand_ids[i] for i in order[:d]} for d in depths}
            row["complete"][name] = {
                d: gold <= {s.passage.id for s in retriever.rerank(query, cands, order, d, k).top} for d in depths
            }
        per_question.append(row)
    t_total = time.perf_counter() - t0

    def table(rows: list[dict], key: str) -> dict[str, dict[str, float]]:
        return {
            o: {str(d): (float(np.mean([r[key][o][d] for r in rows])) if rows else float("nan")) for d in depths}
            for o in ORDERINGS
        }

    subsets = {"all": per_question, "gold_in_pool": [r for r in per_question if r["gold_in_pool"]]}
    report: dict = {
        "eval": "frontload",
        "dataset": dataset,
        "metric": f"complete-evidence recall@{k} (all gold paragraphs in the final top {k}) after the second stage",
        "second_stage": f"BiEncoderScorer({getattr(embedder, 'name', 'embedder')})",
        "first_stage": f"BM25 top {pool_size} over the open pool",
        "pool": {"rows": len(pool_rows), "paragraphs": len(pool.passages)},
        "questions": n_eval,
        "questions_without_gold_in_pool": no_gold,
        "depths": list(depths),
        "k": k,
        "frontload_options": {
            key: getattr(retrievers["frontload"], key) for key in ("n_seeds", "anchor_weight", "seed_expansion", "dim_background")
        },
        "seed": seed,
        "seconds": {"embed_or_cache": round(t_embed, 1), "total": round(t_total, 1)},
        "subsets": {},
    }
    lo, hi = (20 if 20 in depths else min(depths)), max(depths)
    for name, rows in subsets.items():
        entry = {"n": len(rows), "recall": table(rows, "complete"), "all_gold_in_first_D": table(rows, "prefix")}
        entry["paired"] = {}
        for (oa, da), (ob, db) in (((("frontload", lo), ("first_stage", hi))), ((("frontload", lo), ("first_stage", lo)))):
            if rows:
                a = np.array([r["complete"][oa][da] for r in rows], dtype=float)
                b = np.array([r["complete"][ob][db] for r in rows], dtype=float)
                ci = paired_bootstrap_ci(a, b, n_resamples=2000, seed=seed)
                entry["paired"][f"{oa}@{da} - {ob}@{db}"] = {"diff": ci.mean_diff, "ci95": [ci.low, ci.high]}
        report["subsets"][name] = entry
    return report


def frontload_markdown(report: dict) -> str:
    """A Markdown table of a :func:`run_frontload_eval` report."""
    depths = report["depths"]
    opts = ", ".join(f"{k}={v}" for k, v in report["frontload_options"].items())
    lines = [
        f"### {report['dataset']}: {report['metric']}",
        "",
        f"{report['first_stage']} ({report['pool']['paragraphs']} paragraphs from {report['pool']['rows']} rows), "
        f"second stage {report['second_stage']}; {report['questions']} questions "
        f"({report['questions_without_gold_in_pool']} without gold in the pool left out); frontloading {opts}.",
        "",
    ]
    for name, entry in report["subsets"].items():
        lines += [f"**{name}** (n={entry['n']})", "", "| ordering | " + " | ".join(f"D={d}" for d in depths) + " |"]
        lines.append("|---|" + "---|" * len(depths))
        for o, row in entry["recall"].items():
            prefix = entry["all_gold_in_first_D"][o]
            cells = [f"{100 * row[str(d)]:.2f}% ({100 * prefix[str(d)]:.1f}%)" for d in depths]
            lines.append(f"| {o} | " + " | ".join(cells) + " |")
        for key, d in entry["paired"].items():
            lines += ["", f"{key}: {100 * d['diff']:+.2f} points (95% paired bootstrap CI "
                      f"{100 * d['ci95'][0]:+.2f} to {100 * d['ci95'][1]:+.2f})"]
        lines.append("")
    lines.append("Cells: recall after the second stage (share of questions with all gold in the first D, before it).")
    return "\n".join(lines) + "\n"


# --- (b) serving simulation --------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class SimTrace:
    """Per-request times of one simulated run (seconds; arrays aligned by request)."""

    arrival: np.ndarray
    depth: np.ndarray
    rerank_wait: np.ndarray
    rerank_service: np.ndarray
    llm_wait: np.ndarray
    llm_service: np.ndarray
    end_to_end: np.ndarray


def simulate_tandem(
    arrivals: np.ndarray,
    rerank_service: dict[int, float],
    llm_service: np.ndarray,
    llm_servers: int,
    policy,
) -> SimTrace:
    """Discrete-event simulation of a FIFO single-server reranker feeding a FIFO LLM stage.

    ``arrivals`` sorted arrival times; ``rerank_service[D]`` the reranker's service time
    at depth ``D``; ``llm_service[i]`` request ``i``'s LLM service time on one of
    ``llm_servers`` parallel slots. ``policy`` is a fixed depth (``int``) or a
    :class:`~rootweaver_innovations.frontload.DepthController`, which decides each
    request's depth when its rerank service starts from the two backlogs at that instant:
    seconds of queued (not yet started) work, per server, at each stage. Both stages are
    FIFO, so the events are processed exactly in request order (the Lindley recursion).
    """
    import heapq

    from rootweaver_innovations.frontload import DepthController

    n = arrivals.shape[0]
    adaptive = isinstance(policy, DepthController)
    depth_now = policy.d_max if adaptive else int(policy)
    if depth_now not in rerank_service:
        raise ValueError(f"no rerank service time for depth {depth_now}")
    depth = np.zeros(n, dtype=int)
    start1 = np.zeros(n)
    start2 = np.zeros(n)
    finish2 = np.zeros(n)
    free = [0.0] * llm_servers  # when each LLM slot is next free
    finish1 = 0.0
    for i in range(n):
        t = max(arrivals[i], finish1)
        if adaptive:
            waiting_rr = int(np.searchsorted(arrivals, t, side="right")) - i - 1
            waiting_llm = i - int(np.searchsorted(start2[:i], t, side="right"))
            rr_backlog = waiting_rr * rerank_service[depth_now]
            llm_backlog = float(llm_service[i - waiting_llm : i].sum()) / llm_servers if waiting_llm else 0.0
            depth_now = policy.next_depth(depth_now, rr_backlog, llm_backlog)
        depth[i] = depth_now
        start1[i] = t
        finish1 = t + rerank_service[depth_now]
        slot = heapq.heappop(free)
        start2[i] = max(finish1, slot)
        finish2[i] = start2[i] + llm_service[i]
        heapq.heappush(free, finish2[i])
    service1 = np.array([rerank_service[d] for d in depth])
    return SimTrace(
        arrivals, depth, start1 - arrivals, service1, start2 - (start1 + service1), np.asarray(llm_service), finish2 - arrivals
    )


def measure_rerank_service(embedder, passages: Sequence[Passage], depths: Sequence[int], reps: int = 3, batch: int = 20) -> dict:
    """Median wall time of the real :class:`BiEncoderScorer` scoring ``D`` passages, per ``D``.

    No passage vector is precomputed, so each call encodes its ``D`` passages in batches of
    ``batch`` (the work a cross-encoder does per query; sets ``embedder.batch_size``). Returns ``{"median": {D: s},
    "all": {D: [s, ...]}}``.
    """
    import time

    from rootweaver_innovations.rerank import BiEncoderScorer

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


def fit_service(samples: dict[int, list[float]]) -> tuple[float, float]:
    """Least-squares ``(intercept, seconds per passage)`` of service time against ``D``.

    Encoding cost is linear in the passages scored; the fit smooths timing noise from a
    shared CPU (``ValueError`` with fewer than two distinct depths).
    """
    pairs = [(d, t) for d, ts in samples.items() for t in ts]
    if len({d for d, _ in pairs}) < 2:
        raise ValueError("need timings at two or more depths to fit a service-time line")
    slope, intercept = np.polyfit([d for d, _ in pairs], [t for _, t in pairs], 1)
    return float(intercept), float(slope)


def measure_llm_service(base_url: str, prompts: Sequence[str], max_tokens: int = 32, model: str | None = None) -> float:
    """Mean wall time of sequential chat completions at an OpenAI-compatible ``base_url``."""
    import json
    import time
    import urllib.request

    root = base_url.rstrip("/")
    root = root if root.endswith("/v1") else root + "/v1"
    times = []
    try:
        if model is None:
            with urllib.request.urlopen(root + "/models", timeout=30) as resp:
                model = json.load(resp)["data"][0]["id"]
        for prompt in prompts:
            body = json.dumps(
                {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0}
            ).encode()
            req = urllib.request.Request(root + "/chat/completions", body, {"Content-Type": "application/json"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=600) as resp:
                resp.read()
            times.append(time.perf_counter() - t0)
    except (OSError, KeyError, IndexError, ValueError) as exc:
        raise RuntimeError(
            f"could not time the LLM at {root} ({exc}); unset LLM_BASE_URL to use the configured rate"
        ) from exc
    return float(np.mean(times))


def _pct(a: np.ndarray, q: float) -> float:
    return round(float(np.percentile(a, q)), 3)


LOAD_FACTORS = (0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05)


def run_pace_simulation(
    *,
    rates: Sequence[float] | None = None,
    fixed_depths: Sequence[int] = (20, 50, 100),
    controller=None,
    n_requests: int = 3000,
    warmup: int = 300,
    seed: int = 7,
    rerank_service: dict[int, float] | None = None,
    rerank_samples: dict[int, list[float]] | None = None,
    embedder=None,
    measure_reps: int = 3,
    llm_service_s: float = 6.0,
    llm_servers: int = 4,
    llm_cv: float = 0.5,
    llm_base_url: str | None = None,
    recall_by_depth: dict[int, float] | None = None,
    data_root: Path = DEFAULT_DATA_ROOT,
) -> dict:
    """Fixed ``D`` versus adaptive ``D`` across Poisson arrival rates (requests/s).

    Rerank service times are timed here at every depth (``measure_reps`` times each; or
    taken from ``rerank_samples``, ``{D: [seconds, ...]}`` from an earlier report) and the
    simulation uses the least-squares line through them (:func:`fit_service`);
    ``rerank_service`` (``{D: seconds}``) bypasses both, for tests.
    ``rates`` default to :data:`LOAD_FACTORS` times the reranker's capacity at the
    smallest depth (``1 / service(d_min)``), so the sweep crosses every fixed depth's
    saturation point on any machine. The LLM stage has ``llm_servers`` slots with
    gamma-distributed service times of mean ``llm_service_s`` and coefficient of variation
    ``llm_cv``; with ``llm_base_url`` the mean is measured from that server (one slot).
    Arrivals and LLM draws are shared by all policies at a rate (common random numbers).
    The first ``warmup`` requests are not counted. ``recall_by_depth`` (``{D: recall}``,
    e.g. from :func:`run_frontload_eval`) adds each policy's mean recall over its
    requests. Returns a JSON-ready report.
    """
    import os

    from rootweaver_innovations.frontload import DepthController

    controller = controller or DepthController()
    rates_given = rates is not None
    if n_requests <= warmup or warmup < 0:
        raise ValueError(f"need n_requests > warmup >= 0, got {n_requests} and {warmup}")
    if rates is not None and (not rates or min(rates) <= 0):
        raise ValueError(f"rates must be positive, got {rates}")
    all_depths = sorted(set(fixed_depths) | set(controller.depths))
    measured = None
    llm_source = "configured"
    if rerank_service is None or llm_base_url:
        rows = load_rows("hotpotqa", 40, data_root)
        passages = list(build_open_pool(rows).passages)
    fit = None
    timed_here = rerank_service is None and rerank_samples is None
    if rerank_service is None:
        if rerank_samples is None:
            if embedder is None:
                from rootweaver_innovations.embeddings import MiniLMEmbedder

                embedder = MiniLMEmbedder()
            measured = measure_rerank_service(embedder, passages, all_depths, measure_reps, controller.batch)
            rerank_samples = measured["all"]
        measured = {"all": {int(d): list(v) for d, v in rerank_samples.items()}}
        fit = fit_service(measured["all"])
        rerank_service = {d: fit[0] + fit[1] * d for d in all_depths}
    missing = [d for d in all_depths if d not in rerank_service]
    if missing:
        raise ValueError(f"no rerank service time for depths {missing}")
    if recall_by_depth is not None and any(d not in recall_by_depth for d in all_depths):
        raise ValueError(f"recall_by_depth must cover depths {all_depths}")
    if rates is None:
        rates = tuple(round(f / rerank_service[controller.d_min], 4) for f in LOAD_FACTORS)
    if llm_base_url:
        from rootweaver_innovations.rerank import passage_text

        prompts = [
            "Answer briefly.\n" + "\n".join(passage_text(p) for p in passages[5 * i : 5 * i + 5]) + f"\nQuestion: {q}"
            for i, q in enumerate(r.question for r in rows[:3])
        ]
        llm_service_s, llm_servers, llm_source = measure_llm_service(llm_base_url, prompts), 1, f"measured at {llm_base_url}"
    rng = np.random.default_rng(seed)
    policies = {f"fixed D={d}": d for d in fixed_depths} | {"adaptive": controller}
    results = []
    for rate in rates:
        arrivals = np.cumsum(rng.exponential(1.0 / rate, n_requests))
        if llm_cv > 0:
            shape = 1.0 / llm_cv**2
            llm = rng.gamma(shape, llm_service_s / shape, n_requests)
        else:
            llm = np.full(n_requests, llm_service_s)
        for name, policy in policies.items():
            tr = simulate_tandem(arrivals, rerank_service, llm, llm_servers, policy)
            keep = slice(warmup, None)
            results.append(
                {
                    "rate": rate,
                    "policy": name,
                    "mean_depth": round(float(tr.depth[keep].mean()), 2),
                    "rerank_load": round(rate * float(tr.rerank_service[keep].mean()), 3),
                    "mean_recall": None
                    if recall_by_depth is None
                    else round(float(np.mean([recall_by_depth[d] for d in tr.depth[keep]])), 4),
                    "rerank_queue_p50": _pct(tr.rerank_wait[keep], 50),
                    "rerank_queue_p95": _pct(tr.rerank_wait[keep], 95),
                    "llm_queue_p50": _pct(tr.llm_wait[keep], 50),
                    "llm_queue_p95": _pct(tr.llm_wait[keep], 95),
                    "rerank_stage_mean": round(float((tr.rerank_wait + tr.rerank_service)[keep].mean()), 3),
                    "llm_stage_mean": round(float((tr.llm_wait + tr.llm_service)[keep].mean()), 3),
                    "e2e_p50": _pct(tr.end_to_end[keep], 50),
                    "e2e_p95": _pct(tr.end_to_end[keep], 95),
                }
            )
    return {
        "eval": "pace",
        "rates": list(rates),
        "rates_note": "explicit" if rates_given else f"load factors {list(LOAD_FACTORS)} x 1/service(D={controller.d_min})",
        "recall_by_depth": None if recall_by_depth is None else {str(d): recall_by_depth[d] for d in all_depths},
        "n_requests": n_requests,
        "warmup": warmup,
        "seed": seed,
        "controller": {"d_min": controller.d_min, "d_max": controller.d_max, "batch": controller.batch},
        "rerank_service_s": {str(d): round(s, 4) for d, s in sorted(rerank_service.items())},
        "rerank_service_measured": None
        if measured is None
        else {
            "all_s": {str(d): [round(x, 4) for x in v] for d, v in sorted(measured["all"].items())},
            "fit": {"intercept_s": round(fit[0], 4), "per_passage_s": round(fit[1], 5)},
            "source": "timed in this run" if timed_here else "timings reused from an earlier run",
            "load_average_after": [round(x, 2) for x in os.getloadavg()] if timed_here else None,
        },
        "llm": {"mean_service_s": round(llm_service_s, 4), "servers": llm_servers, "cv": llm_cv, "source": llm_source},
        "results": results,
    }


def pace_markdown(report: dict) -> str:
    """Markdown tables of a :func:`run_pace_simulation` report (times in seconds)."""
    svc = ", ".join(f"D={d}: {s:.3f}s" for d, s in report["rerank_service_s"].items())
    llm = report["llm"]
    meas = report["rerank_service_measured"]
    timed = ""
    if meas:
        raw = "; ".join(f"D={d}: " + "/".join(f"{t:.2f}" for t in ts) for d, ts in meas["all_s"].items())
        load = f"; load average {meas['load_average_after']}" if meas.get("load_average_after") else ""
        timed = (
            f" Timed on this machine (BiEncoderScorer, no precomputed vectors, s per request: {raw}; "
            f"{meas.get('source', 'timed')}{load}), fitted {meas['fit']['intercept_s']}s + {meas['fit']['per_passage_s']}s x D."
        )
    lines = [
        "### Serving simulation: reranker then LLM, open-loop Poisson arrivals",
        "",
        f"Rerank service per request ({svc}).{timed} LLM mean {llm['mean_service_s']}s on {llm['servers']} slot(s), "
        f"cv {llm['cv']} ({llm['source']}); {report['n_requests']} requests per rate, first {report['warmup']} "
        f"dropped, seed {report['seed']}. Rerank load = rate x mean service (>= 1: the queue grows without "
        "bound and its percentiles grow with the run length).",
        "",
        "| QPS | policy | mean D | rerank load | recall@5 | rerank queue p50/p95 | LLM queue p50/p95 | mean time in rerank/LLM stage | e2e p50/p95 | heavier stage |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        neck = "reranker" if r["rerank_stage_mean"] > r["llm_stage_mean"] else "LLM"
        recall = "-" if r["mean_recall"] is None else f"{100 * r['mean_recall']:.2f}%"
        lines.append(
            f"| {r['rate']} | {r['policy']} | {r['mean_depth']} | {r['rerank_load']} | {recall} | {r['rerank_queue_p50']}/{r['rerank_queue_p95']} | "
            f"{r['llm_queue_p50']}/{r['llm_queue_p95']} | {r['rerank_stage_mean']}/{r['llm_stage_mean']} | "
            f"{r['e2e_p50']}/{r['e2e_p95']} | {neck} |"
        )
    lines += [
        "",
        "| QPS | adaptive mean D | adaptive e2e p95 | best fixed e2e p95 | adaptive <= best fixed | "
        "smallest fixed D >= adaptive mean D: e2e p95 | adaptive <= it |",
        "|---|---|---|---|---|---|---|",
    ]
    for rate in report["rates"]:
        rows = {r["policy"]: r for r in report["results"] if r["rate"] == rate}
        fixed = {int(k.split("=")[1]): v for k, v in rows.items() if k.startswith("fixed")}
        best = min(fixed, key=lambda d: fixed[d]["e2e_p95"])
        ad = rows["adaptive"]
        same = min((d for d in fixed if d >= ad["mean_depth"]), default=max(fixed))
        a = ad["e2e_p95"]
        lines.append(
            f"| {rate} | {ad['mean_depth']} | {a} | {fixed[best]['e2e_p95']} (D={best}) | "
            f"{'yes' if a <= fixed[best]['e2e_p95'] else 'no'} | {fixed[same]['e2e_p95']} (D={same}) | "
            f"{'yes' if a <= fixed[same]['e2e_p95'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def plot_pace(report: dict, path: Path) -> Path:
    """PNG: p95 end-to-end latency and p95 queue time per stage versus arrival rate."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("the plot needs the 'eval' extra: pip install 'rootweaver[eval]'") from exc
    policies = list(dict.fromkeys(r["policy"] for r in report["results"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for n, name in enumerate(policies):
        rows = [r for r in report["results"] if r["policy"] == name]
        x = [r["rate"] for r in rows]
        style = dict(color=f"C{n}", marker="o", lw=2.5 if name == "adaptive" else 1.2, ls="-" if name == "adaptive" else "--")
        axes[0].plot(x, [r["e2e_p95"] for r in rows], label=name, **style)
        axes[1].plot(x, [r["rerank_queue_p95"] for r in rows], label=f"{name}: reranker", **style)
        axes[1].plot(x, [r["llm_queue_p95"] for r in rows], color=f"C{n}", ls=":", marker="x", lw=1, label=f"{name}: LLM")
        axes[2].plot(x, [r["mean_depth"] for r in rows], label=name, **style)
    for ax, title, ylab in zip(
        axes,
        ("p95 end-to-end latency", "p95 queue time per stage", "mean rerank depth D"),
        ("seconds (log)", "seconds (symlog)", "D"),
        strict=True,
    ):
        ax.set_title(title)
        ax.set_xlabel("arrival rate (requests/s)")
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[1].set_yscale("symlog", linthresh=0.1)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _write(out_dir: Path, stem: str, report: dict, markdown: str) -> None:
    write_json(out_dir / f"{stem}.json", report)
    write_text(out_dir / f"{stem}.md", markdown)


def main(argv: Sequence[str] | None = None) -> int:
    """``frontload`` or ``pace``: run the eval, print Markdown, write JSON + Markdown (+ PNG)."""
    import argparse
    import os

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
        kwargs = {"rates": args.rates} if args.rates else {}
        if args.recall_from:
            import json

            fl_report = json.loads(args.recall_from.read_text(encoding="utf-8"))
            kwargs["recall_by_depth"] = {
                int(d): v for d, v in fl_report["subsets"]["all"]["recall"]["frontload"].items()
            }
        if args.service_from:
            import json

            earlier = json.loads(args.service_from.read_text(encoding="utf-8"))["rerank_service_measured"]
            kwargs["rerank_samples"] = {int(d): v for d, v in earlier["all_s"].items()}
        report = run_pace_simulation(
            n_requests=args.requests,
            warmup=args.requests // 10,
            seed=args.seed,
            measure_reps=args.reps,
            llm_service_s=args.llm_service,
            llm_servers=args.llm_servers,
            llm_cv=args.llm_cv,
            llm_base_url=os.environ.get("LLM_BASE_URL") or None,
            data_root=args.data_root,
            **kwargs,
        )
        md = pace_markdown(report)
        stem = f"pace_simulation{args.tag}"
        _write(args.out, stem, report, md)
        md += f"\nPlot: {plot_pace(report, args.out / f'{stem}.png')}\n"
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
