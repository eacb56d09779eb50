"""PACE serving simulation: an open-loop Poisson stream through a reranker then an LLM stage.

Pure computation on numbers it is given: no file, network, model or clock. The service
times come from :mod:`evals.pace` (timed on the machine, or configured) and go in as
arguments; the report comes out as a JSON-ready dict (:mod:`evals.pace_render` draws it).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FIXED_DEPTHS", "LOAD_FACTORS", "SimTrace", "fit_service", "run_pace_simulation", "simulate_tandem"]

FIXED_DEPTHS = (20, 50, 100)  # the fixed-D policies the adaptive controller is compared with
LOAD_FACTORS = (0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05)


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
    rerank_service: Mapping[int, float],
    llm_service: np.ndarray,
    llm_servers: int,
    policy,
) -> SimTrace:
    """Discrete-event simulation of a FIFO single-server reranker feeding a FIFO LLM stage.

    ``arrivals`` sorted arrival times; ``rerank_service[D]`` the reranker's service time
    at depth ``D``; ``llm_service[i]`` request ``i``'s LLM service time on one of
    ``llm_servers`` parallel slots. ``policy`` is a fixed depth (``int``) or a
    :class:`~evals.frontload.DepthController` (anything with ``d_max``
    and ``next_depth``), which decides each request's depth when its rerank service
    starts from the two backlogs at that instant: seconds of queued (not yet started)
    work, per server, at each stage. Both stages are FIFO, so the events are processed
    exactly in request order (the Lindley recursion).
    """
    n = arrivals.shape[0]
    adaptive = hasattr(policy, "next_depth")
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


def fit_service(samples: Mapping[int, Sequence[float]]) -> tuple[float, float]:
    """Least-squares ``(intercept, seconds per passage)`` of service time against ``D``.

    Encoding cost is linear in the passages scored; the fit smooths timing noise from a
    shared CPU (``ValueError`` with fewer than two distinct depths).
    """
    pairs = [(d, t) for d, ts in samples.items() for t in ts]
    if len({d for d, _ in pairs}) < 2:
        raise ValueError("need timings at two or more depths to fit a service-time line")
    slope, intercept = np.polyfit([d for d, _ in pairs], [t for _, t in pairs], 1)
    return float(intercept), float(slope)


def _pct(a: np.ndarray, q: float) -> float:
    return round(float(np.percentile(a, q)), 3)


def run_pace_simulation(
    *,
    rates: Sequence[float] | None = None,
    fixed_depths: Sequence[int] = FIXED_DEPTHS,
    controller=None,
    n_requests: int = 3000,
    warmup: int = 300,
    seed: int = 7,
    rerank_service: Mapping[int, float] | None = None,
    rerank_samples: Mapping[int, Sequence[float]] | None = None,
    samples_provenance: Mapping | None = None,
    llm_service_s: float = 6.0,
    llm_servers: int = 4,
    llm_cv: float = 0.5,
    llm_source: str = "configured",
    recall_by_depth: Mapping[int, float] | None = None,
) -> dict:
    """Fixed ``D`` versus adaptive ``D`` across Poisson arrival rates (requests/s).

    The reranker's service time per depth is the least-squares line (:func:`fit_service`)
    through ``rerank_samples`` (``{D: [seconds, ...]}``, timed by
    :func:`evals.pace.measure_rerank_service` or read from an earlier report;
    ``samples_provenance`` is copied into the report beside them, default
    ``{"source": "timings reused from an earlier run", "load_average_after": None}``), or
    ``rerank_service`` (``{D: seconds}``) as given; exactly one of the two.
    ``rates`` default to :data:`LOAD_FACTORS` times the reranker's capacity at the
    smallest depth (``1 / service(d_min)``), so the sweep crosses every fixed depth's
    saturation point on any machine. The LLM stage has ``llm_servers`` slots with
    gamma-distributed service times of mean ``llm_service_s`` and coefficient of variation
    ``llm_cv`` (``llm_source`` says where the mean came from).
    Arrivals and LLM draws are shared by all policies at a rate (common random numbers).
    The first ``warmup`` requests are not counted. ``recall_by_depth`` (``{D: recall}``,
    e.g. from :func:`evals.frontload_eval.run_frontload_eval`) adds each policy's mean
    recall over its requests. Returns a JSON-ready report.
    """
    if controller is None:
        from evals.frontload import DepthController

        controller = DepthController()
    rates_given = rates is not None
    if n_requests <= warmup or warmup < 0:
        raise ValueError(f"need n_requests > warmup >= 0, got {n_requests} and {warmup}")
    if rates is not None and (not rates or min(rates) <= 0):
        raise ValueError(f"rates must be positive, got {rates}")
    if (rerank_service is None) == (rerank_samples is None):
        raise ValueError("give exactly one of rerank_service ({D: s}) and rerank_samples ({D: [s, ...]})")
    all_depths = sorted(set(fixed_depths) | set(controller.depths))
    measured = None
    if rerank_samples is not None:
        samples = {int(d): [float(x) for x in v] for d, v in rerank_samples.items()}
        intercept, slope = fit_service(samples)
        rerank_service = {d: intercept + slope * d for d in all_depths}
        prov = {"source": "timings reused from an earlier run", "load_average_after": None} | dict(samples_provenance or {})
        measured = {
            "all_s": {str(d): [round(x, 4) for x in v] for d, v in sorted(samples.items())},
            "fit": {"intercept_s": round(intercept, 4), "per_passage_s": round(slope, 5)},
            **prov,
        }
    missing = [d for d in all_depths if d not in rerank_service]
    if missing:
        raise ValueError(f"no rerank service time for depths {missing}")
    if recall_by_depth is not None and any(d not in recall_by_depth for d in all_depths):
        raise ValueError(f"recall_by_depth must cover depths {all_depths}")
    if rates is None:
        rates = tuple(round(f / rerank_service[controller.d_min], 4) for f in LOAD_FACTORS)
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
        "rerank_service_measured": measured,
        "llm": {"mean_service_s": round(llm_service_s, 4), "servers": llm_servers, "cv": llm_cv, "source": llm_source},
        "results": results,
    }
