"""Integration: the sphinxql retriever on two real Sphinx searchd nodes (scripts/sphinx_up.sh).

The bundled demo corpus is exported into the distributed index (two RT shards, each node a
mirror of both); the loop over it is compared with the local index; then nodes are stopped by
PID: with one node down the other answers (its mirror of the lost shard, or the next host),
with both down a search fails with one SphinxQLError within the deadline. Nodes are restarted
afterwards. Needs SPHINXQL_NODES / SPHINXQL_HOSTS / SPHINX_STATE_DIR from the script's env file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rootweaver_capabilities.batch.run import answer_question
from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import MultiHopConfig, SphinxQLConfig
from rootweaver_capabilities.capability import MultiHopCapability
from rootweaver_capabilities.cluster.sphinxql import SphinxQLError, SphinxQLRetriever
from rootweaver_innovations.documents.demo import DEMO_CORPUS

pytestmark = [pytest.mark.integration]
INDEX = os.environ.get("SPHINXQL_INDEX", "rootweaver")


@pytest.fixture(scope="module")
def cluster():
    for var in ("SPHINXQL_NODES", "SPHINXQL_HOSTS", "SPHINX_STATE_DIR"):
        assert os.environ.get(var), f"{var} unset: run scripts/sphinx_up.sh and source its env file"
    state = Path(os.environ["SPHINX_STATE_DIR"])
    assert main(["index", "export", "--to", "sphinxql", str(DEMO_CORPUS), "--nodes", os.environ["SPHINXQL_NODES"],
                 "--index", INDEX]) == 0
    return state


def _stop(state: Path, i: int) -> None:
    pid = int((state / f"node{i}" / "searchd.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"searchd node{i} (pid {pid}) did not stop")


def _start(state: Path, i: int) -> None:
    subprocess.run(["searchd", "--config", str(state / f"node{i}" / "searchd.conf")], check=True,
                   capture_output=True)


def _config(**sphinxql) -> MultiHopConfig:
    return MultiHopConfig.from_mapping({"retriever": {"backend": "sphinxql", "sphinxql": {
        "hosts": os.environ["SPHINXQL_HOSTS"], "index": INDEX, **sphinxql}}})


def test_the_loop_over_the_cluster_matches_the_local_index(cluster, golden_questions):
    remote, local = MultiHopCapability(_config()), MultiHopCapability(MultiHopConfig())
    same = sum(answer_question(remote, q.question)["hops"] == answer_question(local, q.question)["hops"]
               for q in golden_questions)
    assert same >= 0.8 * len(golden_questions), f"{same} of {len(golden_questions)} trajectories equal"


def test_one_node_down_the_other_answers_both_down_one_error_within_the_deadline(cluster, golden_questions):
    cfg = SphinxQLConfig(hosts=os.environ["SPHINXQL_HOSTS"], index=INDEX, deadline_s=2.0)
    question = golden_questions[0].question
    expected = [h.passage.id for h in SphinxQLRetriever(cfg).search(question, 5)]
    try:
        _stop(cluster, 1)  # its shard is served by node0's mirror
        assert [h.passage.id for h in SphinxQLRetriever(cfg).search(question, 5)] == expected
        _start(cluster, 1)
        _stop(cluster, 0)  # the entry node: the client moves on to node1
        assert [h.passage.id for h in SphinxQLRetriever(cfg).search(question, 5)] == expected
        _stop(cluster, 1)
        start = time.monotonic()
        with pytest.raises(SphinxQLError, match="no node of .* answered index") as exc:
            SphinxQLRetriever(cfg).search(question, 5)
        assert time.monotonic() - start < cfg.deadline_s + 0.3
        assert "\n" not in str(exc.value)
    finally:
        for i in (0, 1):
            pid = cluster / f"node{i}" / "searchd.pid"
            if not pid.is_file() or not _alive(int(pid.read_text())):
                _start(cluster, i)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
