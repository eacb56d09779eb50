"""Capture what the product path prints, to prove a refactor changes no output.

The demo's golden questions are asked of the embedded demo corpus (``rootweaver ask Q --json
--reader none``). For the first ``--per-set`` questions of each bundled dev set (HotpotQA,
2WikiMultihopQA, MuSiQue) the set's open pool is written in every layout the folder eval uses
(``jsonl`` rows, ``opaque`` rows titled ``doc-<id>``, ``md`` and ``txt`` folders, ``win40``
chunks), indexed with ``rootweaver index build`` and asked with ``rootweaver ask --json`` in
process, exactly as a user would. Over ``jsonl`` every compaction setting runs (off; each
strategy at 160 reader tokens and at 700 chars) with the extractive reader, and once more (the
default strategy and budget) with ``--reader openai`` against a recording OpenAI-compatible
stub on 127.0.0.1; the other layouts run off and the default. The stub keeps the exact request body, so
the snapshot also holds the prompt the reader was shown. One JSON line per run goes to
``--out``; ``--compare BEFORE`` reports every run whose line differs, byte for byte, once the
keys added since BEFORE are left out (exit 1 if any).

    python scripts/snapshot_product_path.py --out /tmp/after.jsonl --compare evals/golden/product_path.jsonl.gz

``evals/golden/product_path.jsonl.gz`` is the committed snapshot (the default ``--per-set`` of 40,
``--reader none`` and the stub; its provenance is in ``evals/golden/README.md``).

The stub answers ``{"answer": "stub", "evidence": [1, 2]}`` whatever it is asked: what is
checked is the prompt and how the reply is mapped back onto context lines, not the answer.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from evals.datasets import DATASETS, build_open_pool, load_rows
from evals.documents_folder import write_layout
from evals.layouts import opaque
from rootweaver_capabilities.cli.main import main as cli_main

SETTINGS = (
    ("off", ["--compaction", "off"]),
    *((f"{s}@160t", ["--compaction", s, "--max-tokens", "160"]) for s in ("evidence", "submodular", "line")),
    *((f"{s}@700c", ["--compaction", s, "--max-chars", "700"]) for s in ("evidence", "submodular", "line")),
)
STUB_REPLY = {"answer": "stub", "evidence": [1, 2]}
LAYOUTS = ("jsonl", "opaque", "md", "txt", "win40")
DEMO_QUESTIONS = Path(__file__).resolve().parents[1] / "rootweaver_innovations/data/demo/golden_questions.jsonl"


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
    for qi, line in enumerate(DEMO_QUESTIONS.read_text(encoding="utf-8").splitlines()):
        question = json.loads(line)["question"]
        yield {"set": "demo", "q": qi, "run": "default", "record": _ask(["ask", question, "--json", "--reader", "none"])}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        for name in DATASETS:
            pool = build_open_pool(load_rows(name, None))
            for layout in LAYOUTS:
                passages = opaque(pool.passages) if layout == "opaque" else pool.passages
                root = work / f"{name}-{layout}"
                root.mkdir()
                corpus, _ = write_layout("jsonl" if layout == "opaque" else layout, passages, root)
                index = root / "index"
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    cli_main(["index", "build", str(corpus), "--out", str(index)])
                settings = SETTINGS if layout == "jsonl" else (("off", SETTINGS[0][1]), ("default", []))
                for qi, question in enumerate(pool.questions[:per_set]):
                    common = ["ask", question, "--index", str(index), "--json"]
                    for label, flags in settings:
                        yield {"set": name, "layout": layout, "q": qi, "run": label,
                               "record": _ask([*common, *flags, "--reader", "none"])}
                    if layout != "jsonl":
                        continue
                    _Recorder.bodies.clear()
                    record = _ask([*common, "--reader", "openai", "--base-url", base_url, "--model", "stub"])
                    yield {"set": name, "layout": layout, "q": qi, "run": "openai-stub", "record": record,
                           "sent": list(_Recorder.bodies)}
    finally:
        server.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-set", type=int, default=40)
    ap.add_argument("--compare", type=Path, help="an earlier snapshot: report the runs that differ")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, args.out.open("w", encoding="utf-8") as out:
        for row in snapshot(args.per_set, Path(tmp)):
            # the temporary folder's name changes from run to run: paths are kept relative to it
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True).replace(tmp, "<tmp>") + "\n")
    if args.compare is None:
        return 0
    opener = gzip.open if args.compare.suffix == ".gz" else open
    with opener(args.compare, "rt", encoding="utf-8") as fh:
        before = fh.read().splitlines()
    after = args.out.read_text(encoding="utf-8").splitlines()
    differ = []
    for i, (a, b) in enumerate(zip(before, after)):
        old = json.loads(a)
        shown = json.dumps(_known(json.loads(b), old), ensure_ascii=False, sort_keys=True)
        if shown != a:
            differ.append(f"{old['set']} {old.get('layout', '')} q{old['q']} {old['run']}")
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
