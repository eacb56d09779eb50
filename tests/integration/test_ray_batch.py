"""Integration: `rootweaver batch --ray` on a real two-node Ray cluster on 127.0.0.1.

``scripts/ray_local_cluster.sh`` starts a head and a second node (1 CPU each) in a
loopback-only network namespace and stops them by PID. One cluster session runs the batch on
both nodes, then a second batch during which the second node's process group is killed
(raylet and workers: the node is lost). Both outputs must equal the one-process run's, with
every id exactly once. Needs root (unshare) and the extra ``cluster``; the script's exit code
3 (Ray or unshare missing) is a skip with its message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.datasets import build_open_pool, load_rows
from rootweaver_capabilities.batch.run import run_batch
from rootweaver_capabilities.config import MultiHopConfig

pytestmark = [pytest.mark.integration]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ray_local_cluster.sh"
N_QUESTIONS = 480  # enough that node 2 still holds chunks when it is killed
KILL_AFTER = 6  # answers written before the second node is killed


def _answers(path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_id = {d["id"]: d for d in lines}
    assert len(by_id) == len(lines), f"{path}: an id was written twice"
    return by_id


@pytest.fixture(scope="module")
def batch_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("raybatch")
    rows = load_rows("hotpotqa", 2 * N_QUESTIONS)
    pool = build_open_pool(rows)
    with (d / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for p in pool.passages:
            fh.write(json.dumps({"id": p.id, "title": p.title, "sentences": list(p.sentences)}) + "\n")
    (d / "q.jsonl").write_text("".join(json.dumps({"id": r.id, "question": r.question}) + "\n"
                                       for r in rows[1::2][:N_QUESTIONS]), encoding="utf-8")
    (d / "config.yaml").write_text(f"retriever:\n  corpus: {d / 'corpus.jsonl'}\nllm:\n  provider: none\n")
    run_batch(d / "q.jsonl", d / "one.jsonl", MultiHopConfig.from_yaml(d / "config.yaml"), show_progress=False)
    return d


def test_two_nodes_and_a_lost_node_give_the_one_process_answers(batch_inputs):
    d = batch_inputs
    cmd = (f"{sys.executable} -m rootweaver_capabilities.cli.main batch q.jsonl --out two.jsonl --config config.yaml "
           f"--ray auto --quiet && "
           f"({sys.executable} -m rootweaver_capabilities.cli.main batch q.jsonl --out lost.jsonl --config config.yaml "
           f"--ray auto --quiet & B=$!; touch lost.jsonl; "
           f"while [ \"$(wc -l < lost.jsonl)\" -lt {KILL_AFTER} ] && kill -0 $B 2>/dev/null; do sleep 0.05; done; "
           f"echo \"killed node 2 after $(wc -l < lost.jsonl) answers\" >&2; kill -9 -- -$RAY_NODE2_PGID; wait $B)")
    env = {**os.environ, "PYTHON": sys.executable, "RAY_PORT": "6391",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(SCRIPT.parents[1]), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["bash", str(SCRIPT), "bash", "-c", cmd], cwd=d, env=env, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = _answers(d / "one.jsonl")
    assert len(one) == N_QUESTIONS
    assert _answers(d / "two.jsonl") == one
    summaries = [line for line in proc.stderr.splitlines() if line.startswith("rootweaver batch:")]
    assert len(json.loads(summaries[0].split("per Ray node: ")[1])) == 2, summaries[0]  # both nodes answered
    assert _answers(d / "lost.jsonl") == one
    assert "1 worker(s) lost" in summaries[1], proc.stderr[-3000:]
