"""Load on `rootweaver serve --http` from a second process: 1 vs N uvicorn workers.

Usage: python benchmarks/bench_http.py [--reader none|local] [--workers 1,2] [--clients 8] [--requests 25]
       [--rounds 2] [--questions N] [--overload]

For each worker count (interleaved over ``--rounds``, the machine's load drifts) the
script starts ``rootweaver serve --http 127.0.0.1:PORT --workers W`` as a subprocess with
``llm.provider: --reader``, waits for ``/healthz``, then:

1. asks every bundled golden question once, sequentially (the reference records);
2. runs ``--clients`` threads in this process, each with its own keep-alive httpx client,
   each sending ``--requests`` requests (the golden questions, cycled from its own offset);
   every response must be 200 and equal to the sequential record of its question.

Reported per run: answered/total, p50 and p99 latency, requests/s (requests / wall time
from the first request to the last answer), and the server's CPU seconds / wall seconds
("server cores"; /proc, the uvicorn parent and its workers, also per process) and this process's ("client
cores"; the load generator competes for the same CPUs); at the end the median
requests/s per worker count and the ratio to 1 worker, measured in this same run.

``--overload`` (meant with ``--reader local``): a server with ``service.concurrency: 1``
and ``service.queue_depth: 1`` gets two slow requests, then one more, timed: it must be
refused with 503 and Retry-After well within 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from rootweaver_innovations.documents.demo import load_questions

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(folder: Path, reader: str, **service: int) -> Path:
    path = folder / f"bench-{reader}-{len(service)}.yaml"
    lines = ["llm:", f"  provider: {reader}"]
    if service:
        lines += ["service:", *(f"  {k}: {v}" for k, v in service.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


class Server:
    """`rootweaver serve --http` in a subprocess, ready (``/healthz`` 200) on entry, stopped on exit."""

    def __init__(self, config: Path, workers: int, ready_timeout: float = 300.0):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rootweaver_capabilities.cli.main", "serve", "--http", f"127.0.0.1:{self.port}",
             "--workers", str(workers), "--config", str(config)], env=env, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise SystemExit(f"server not ready within {ready_timeout:.0f} s")
            time.sleep(0.2)

    def cpu_seconds(self) -> dict[int, float]:
        """user + system CPU seconds of the server process and each of its descendants, by pid."""
        tick = os.sysconf("SC_CLK_TCK")
        out: dict[int, float] = {}
        todo = [self.proc.pid]
        while todo:
            pid = todo.pop()
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                out[pid] = (int(fields[11]) + int(fields[12])) / tick
                for task in Path(f"/proc/{pid}/task").iterdir():
                    todo += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
        return out

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ask(client: httpx.Client, url: str, question: str) -> tuple[int, dict, float]:
    start = time.perf_counter()
    r = client.post(f"{url}/v1/ask", json={"question": question})
    return r.status_code, r.json(), time.perf_counter() - start


def _load(server: Server, questions: list[str], clients: int, requests: int) -> dict:
    """The reference pass, then the concurrent load; one result row."""
    with httpx.Client(timeout=120) as c:
        reference = {q: _ask(c, server.url, q)[1] for q in questions}
    latencies: list[float] = []
    mismatched: list[str] = []
    failed: list[int] = []
    lock = threading.Lock()
    go = threading.Event()

    def client(i: int) -> None:
        with httpx.Client(timeout=120) as c:
            go.wait()
            for n in range(requests):
                q = questions[(i + n) % len(questions)]
                status, record, seconds = _ask(c, server.url, q)
                with lock:
                    latencies.append(seconds)
                    if status != 200:
                        failed.append(status)
                    elif record != reference[q]:
                        mismatched.append(q)

    with ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(client, i) for i in range(clients)]
        time.sleep(0.2)  # every client connected and waiting
        cpu0, own0, start = server.cpu_seconds(), time.process_time(), time.perf_counter()
        go.set()
        for f in futures:
            f.result()
        wall = time.perf_counter() - start
        cpu1, own = server.cpu_seconds(), time.process_time() - own0
        per_process = sorted((cpu1[pid] - cpu0.get(pid, 0.0) for pid in cpu1), reverse=True)
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"answered": len(latencies) - len(failed), "total": clients * requests, "failed": failed,
            "mismatched": len(mismatched), "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000,
            "rps": len(latencies) / wall, "wall_s": wall, "server_cores": sum(per_process) / wall,
            "server_cores_by_process": [round(c / wall, 2) for c in per_process], "client_cores": own / wall}


def _overload(folder: Path, reader: str, question: str) -> dict:
    """Two slow requests fill a 1-thread, 1-slot server; the third must be a fast 503."""
    config = _config(folder, reader, concurrency=1, queue_depth=1, retry_after_s=2)
    with Server(config, 1) as server, httpx.Client(timeout=300) as probe:
        clients = [httpx.Client(timeout=300) for _ in range(2)]
        with ThreadPoolExecutor(2) as pool:
            slow = [pool.submit(_ask, c, server.url, question) for c in clients]
            deadline = time.monotonic() + 30
            while probe.get(f"{server.url}/healthz").json()["in_flight"] < 2:
                if time.monotonic() > deadline:
                    raise SystemExit("overload: the two slow requests were never in flight together (reader too fast?)")
                time.sleep(0.01)
            start = time.perf_counter()
            r = probe.post(f"{server.url}/v1/ask", json={"question": question})
            refused_ms = (time.perf_counter() - start) * 1000
            answers = [f.result() for f in slow]
        for c in clients:
            c.close()
    return {"status": r.status_code, "retry_after": r.headers.get("retry-after"), "error": r.json().get("error"),
            "refused_in_ms": refused_ms, "slow_answers": [(s, rec["answer"]["text"], round(sec, 2))
                                                         for s, rec, sec in answers]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reader", choices=("none", "local"), default="none")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=25, help="requests per client")
    p.add_argument("--rounds", type=int, default=2, help="0: no load runs (e.g. only --overload)")
    p.add_argument("--questions", type=int, help="use only the first N golden questions (a slow reader)")
    p.add_argument("--overload", action="store_true", help="also the full-queue probe (503 timing)")
    args = p.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    questions = [q.question for q in load_questions()][: args.questions]
    rows: dict[int, list[dict]] = {w: [] for w in workers}
    print(f"reader {args.reader}; {args.clients} clients x {args.requests} requests; {len(questions)} questions; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = _config(folder, args.reader)
        for round_ in range(1, args.rounds + 1):
            for w in workers:
                with Server(config, w) as server:
                    row = _load(server, questions, args.clients, args.requests)
                rows[w].append(row)
                print(f"round {round_} workers {w}: answered {row['answered']}/{row['total']} "
                      f"(mismatched {row['mismatched']}, failed {row['failed'] or 0}); p50 {row['p50_ms']:.1f} ms "
                      f"p99 {row['p99_ms']:.1f} ms; {row['rps']:.1f} req/s; server cores {row['server_cores']:.2f} "
                      f"{row['server_cores_by_process']}, "
                      f"client cores {row['client_cores']:.2f}",
                      flush=True)
        summary = {w: statistics.median(r["rps"] for r in rows[w]) for w in workers if rows[w]}
        for w, rps in summary.items():
            print(f"workers {w}: median {rps:.1f} req/s, x{rps / summary[workers[0]]:.2f} of {workers[0]} worker(s)")
        out = {"reader": args.reader, "rows": rows, "median_rps": summary}
        if args.overload:
            bridge = next(q.question for q in load_questions() if q.type == "bridge")  # the reader answers it
            out["overload"] = _overload(folder, args.reader, bridge)
            print(f"overload: {json.dumps(out['overload'])}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
