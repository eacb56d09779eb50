"""Capture what the product path prints, to prove a refactor changes no output.

For the first ``--per-set`` questions of each bundled dev set (HotpotQA, 2WikiMultihopQA,
MuSiQue) it indexes the set's open pool once with ``rootweaver index build`` and then runs
``rootweaver ask --json`` in process, exactly as a user would, under every compaction
setting (off; each strategy at 160 reader tokens and at 700 chars) with the extractive
reader, and once more (the default strategy and budget) with ``--reader openai`` against a
recording OpenAI-compatible stub on 127.0.0.1. The stub keeps the exact request body, so
the snapshot also holds the prompt the reader was shown. One JSON line per run goes to
``--out``; ``--compare BEFORE`` reports every run whose line differs, byte for byte, once the
keys added since BEFORE are left out (exit 1 if any).

    python scripts/snapshot_product_path.py --out /tmp/before.jsonl
    python scripts/snapshot_product_path.py --out /tmp/after.jsonl --compare /tmp/before.jsonl

The stub answers ``{"answer": "stub", "evidence": [1, 2]}`` whatever it is asked: what is
checked is the prompt and how the reply is mapped back onto context lines, not the answer.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from evals.datasets import DATASETS, build_open_pool, load_rows
from rootweaver_capabilities.cli import main as cli_main

SETTINGS = (
    ("off", ["--compaction", "off"]),
    *((f"{s}@160t", ["--compaction", s, "--max-tokens", "160"]) for s in ("evidence", "submodular", "line")),
    *((f"{s}@700c", ["--compaction", s, "--max-chars", "700"]) for s in ("evidence", "submodular", "line")),
)
STUB_REPLY = {"answer": "stub", "evidence": [1, 2]}


class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        _Recorder.bodies.append(body)
        reply = {"choices": [{"message": {"content": json.dumps(STUB_REPLY)}, "finish_reason": "stop"}],
                 "model": body["model"]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _ask(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli_main(argv)
    if rc != 0:
        raise SystemExit(f"ask failed ({rc}): {argv}")
    return json.loads(out.getvalue())


def snapshot(per_set: int, work: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        for name in DATASETS:
            pool = build_open_pool(load_rows(name, None))
            corpus = work / f"{name}.jsonl"
            with corpus.open("w", encoding="utf-8") as fh:
                for p in pool.passages:
                    fh.write(json.dumps({"id": p.id, "title": p.title, "sentences": list(p.sentences)}) + "\n")
            index = work / f"{name}-index"
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cli_main(["index", "build", str(corpus), "--out", str(index)])
            for qi, question in enumerate(pool.questions[:per_set]):
                common = ["ask", question, "--index", str(index), "--json"]
                for label, flags in SETTINGS:
                    yield {"set": name, "q": qi, "run": label, "record": _ask([*common, *flags, "--reader", "none"])}
                _Recorder.bodies.clear()
                record = _ask([*common, "--reader", "openai", "--base-url", base_url, "--model", "stub"])
                yield {"set": name, "q": qi, "run": "openai-stub", "record": record, "sent": list(_Recorder.bodies)}
    finally:
        server.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-set", type=int, default=340)
    ap.add_argument("--compare", type=Path, help="an earlier snapshot: report the runs that differ")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, args.out.open("w", encoding="utf-8") as out:
        for row in snapshot(args.per_set, Path(tmp)):
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    if args.compare is None:
        return 0
    before = args.compare.read_text(encoding="utf-8").splitlines()
    after = args.out.read_text(encoding="utf-8").splitlines()
    differ = []
    for i, (a, b) in enumerate(zip(before, after)):
        old = json.loads(a)
        shown = json.dumps(_known(json.loads(b), old), ensure_ascii=False, sort_keys=True)
        if shown != a:
            differ.append(f"{old['set']} q{old['q']} {old['run']}")
    print(f"{len(after)} runs, {len(before)} before; {len(differ)} differ (keys new since BEFORE ignored)"
          + (f"; first: {differ[0]}" if differ else ""))
    return 1 if differ or len(before) != len(after) else 0


def _known(new: object, old: object) -> object:
    """``new`` without the mapping keys ``old`` does not have (fields added since), recursively."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _known(v, old[k]) for k, v in new.items() if k in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_known(n, o) for n, o in zip(new, old)]
    return new

if __name__ == "__main__":
    sys.exit(main())
