"""The Ray side of ``rootweaver batch --ray``: an actor pool that survives losing actors.

:func:`run_on_ray` connects to a running cluster, starts one actor per CPU (or
``workers``), spread over the nodes; each actor builds the capability once
(:func:`rootweaver_capabilities.batch.run._capability`: the index opened from the configured
path, the reader loaded). The driver keeps two chunks in flight per actor and hands each
result to ``deliver`` (the driver's only writer); ``summary.per_node`` counts the questions
each node answered (by node id prefix).

Failure handling: actors are created with ``max_restarts=0``. When a call fails because its
actor died (its node was lost, its process killed), the actor is dropped and the chunk is
put back at the head of the queue for the surviving actors. Ray's own restart
(``max_restarts``/``max_task_retries``) is deliberately not used: with one CPU per node, a
restarted actor would wait for a CPU that the surviving actor holds, and the batch would
hang. The driver's de-duplication (:class:`rootweaver_capabilities.batch.run._Writer`) makes a
resubmitted chunk harmless even if its first delivery also arrived.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from rootweaver_capabilities.batch.work import BatchError, BatchSummary, _answer_chunk, _capability

__all__ = ["run_on_ray"]

IN_FLIGHT = 2  # chunks queued per actor: the next one is ready when the current one ends


class _Answerer:
    """The actor: a capability built once, answering chunks of ``(id, question)``."""

    def __init__(self, config_mapping: dict[str, Any], source: str):
        import ray

        self._capability = _capability(config_mapping, source)
        self._node = ray.get_runtime_context().get_node_id()

    def answer(self, chunk: list[tuple[str, str]]) -> tuple[str, list[tuple[str, bool, Any]]]:
        """``(this actor's node id, the chunk's results)``."""
        return self._node, _answer_chunk(self._capability, chunk)


def run_on_ray(address: str, mapping: dict[str, Any], source: str, chunks: list[list[tuple[str, str]]],
               deliver: Callable[[Iterable[tuple[str, bool, Any]]], None], summary: BatchSummary,
               workers: int | None = None) -> None:
    """Answer ``chunks`` on the Ray cluster at ``address`` (see the module docstring).

    Raises :class:`~rootweaver_capabilities.batch.run.BatchError` when Ray is not installed, no
    cluster answers at ``address``, or every actor died (the last actor error is named).
    """
    try:
        import ray
        from ray.exceptions import RayActorError
    except ImportError:
        raise BatchError("--ray needs Ray: pip install 'rootweaver[cluster]'") from None
    try:
        ray.init(address=address, log_to_driver=False, logging_level="WARNING", configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BatchError(f"no Ray cluster at {address!r}: {' '.join(str(exc).split())[:200]}") from None
    try:
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor_cls = ray.remote(num_cpus=1, max_restarts=0)(_Answerer)
        actors = [actor_cls.options(scheduling_strategy="SPREAD").remote(mapping, source) for _ in range(n)]
        alive = set(range(n))
        load = dict.fromkeys(range(n), 0)
        queue = deque(chunks)
        inflight: dict[Any, tuple[int, list[tuple[str, str]]]] = {}
        last_error = ""
        while queue or inflight:
            for i in sorted(alive):
                while queue and load[i] < IN_FLIGHT:
                    chunk = queue.popleft()
                    inflight[actors[i].answer.remote(chunk)] = (i, chunk)
                    load[i] += 1
            if not inflight:
                raise BatchError(f"every Ray actor is gone ({summary.lost_workers} lost); last error: {last_error}")
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                i, chunk = inflight.pop(ref)
                load[i] -= 1
                try:
                    node, results = ray.get(ref)
                except RayActorError as exc:
                    last_error = " ".join(str(exc).split())[:300]
                    if i in alive:
                        alive.discard(i)
                        summary.lost_workers += 1
                    queue.appendleft(chunk)
                    summary.resubmitted += 1
                    continue
                deliver(results)
                summary.per_node[node[:12]] = summary.per_node.get(node[:12], 0) + len(results)
    finally:
        ray.shutdown()
