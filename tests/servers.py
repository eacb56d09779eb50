"""Helpers of the service tests: start a `rootweaver` server process on a free 127.0.0.1 port
(PYTHONPATH = this checkout), wait until it answers, stop it by its process handle."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
DEMO = "In what 2 countries did both X-Large and A Bathing Ape have stores?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], config: Path, port: int, timeout: float = 20.0,
          env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``rootweaver *args`` (PYTHONPATH = this checkout; ``env`` added to the environment)
    and wait for /healthz."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rootweaver_capabilities.cli.main", *args, "--config", str(config)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    stop(proc)
    raise AssertionError(f"server not ready within {timeout} s")


def stop(proc: subprocess.Popen) -> str:
    """Stop the server; what it wrote on stderr."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    return err


def write_config(tmp: Path, **service) -> Path:
    path = tmp / "service.yaml"
    lines = ["llm:", "  provider: none", "service:"] + [f"  {k}: {v}" for k, v in service.items()]
    path.write_text("\n".join(lines if service else lines[:2]) + "\n")
    return path


def sse_events(text: str) -> list[tuple[str, dict]]:
    """``(event, data)`` of each Server-Sent Event in ``text`` (one ``data`` line each)."""
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out
