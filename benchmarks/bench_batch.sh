#!/usr/bin/env bash
# Throughput of `rootweaver batch`: one process, a one-node Ray cluster, a two-node Ray cluster
# (1 CPU per node, scripts/ray_local_cluster.sh), interleaved for ROUNDS rounds; every output
# is compared with the one-process output by id (identical records, each id once).
#
#   benchmarks/bench_batch.sh DIR [ROUNDS]
#
# DIR from `python benchmarks/batch_data.py --out DIR` (questions.jsonl, config.yaml) with its
# index built (`rootweaver index build DIR/corpus.jsonl --out DIR/index`). Prints one line per
# run: mode, round, seconds (the batch's own wall time: start to last answer, Ray connection
# and actor start-up included), questions/s, the time to the first answer (start-up) and the
# rate after it (steady state), identical.
set -euo pipefail
DIR="$(cd "$1" && pwd)"
ROUNDS="${2:-3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python}"
N="$(grep -c . "$DIR/questions.jsonl")"
same() {
  "$PY" - "$DIR/one.jsonl" "$1" <<'PYEOF'
import json, sys
def load(p):
    lines = [json.loads(l) for l in open(p, encoding="utf-8")]
    return len(lines), {d["id"]: d for d in lines}
n0, a = load(sys.argv[1]); n1, b = load(sys.argv[2])
print("identical" if a == b and n1 == len(b) else f"DIFFERENT ({n1} lines, {len(b)} ids)")
PYEOF
}
run() {  # mode round extra-batch-args [launcher...]
  local mode="$1" round="$2" extra="$3" out="$DIR/$1-$2.jsonl"; shift 3
  rm -f "$out"
  local line
  line="$("$@" "$PY" -m rootweaver_capabilities.cli.main batch "$DIR/questions.jsonl" --out "$out" \
       --config "$DIR/config.yaml" --quiet $extra 2>&1 | grep '^rootweaver batch:' | tail -1)"
  "$PY" - "$mode" "$round" "$N" "$line" <<'PYEOF'
import re, sys
mode, rnd, n, line = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
total = float(re.search(r" in ([0-9.]+) s", line).group(1))
first = float(re.search(r"first answer after ([0-9.]+) s", line).group(1))
print(f"{mode} round {rnd}: {total:.1f} s, {n / total:.1f} q/s; first answer after {first:.1f} s, "
      f"then {(n - 1) / (total - first):.1f} q/s", end=", ")
PYEOF
  same "$out"
}
rm -f "$DIR/one.jsonl"
"$PY" -m rootweaver_capabilities.cli.main batch "$DIR/questions.jsonl" --out "$DIR/one.jsonl" --config "$DIR/config.yaml" --quiet
for r in $(seq 1 "$ROUNDS"); do
  run one-process "$r" ""
  RAY_NODES=1 run ray-1-node "$r" "--ray auto" bash "$HERE/scripts/ray_local_cluster.sh"
  RAY_NODES=2 run ray-2-nodes "$r" "--ray auto" bash "$HERE/scripts/ray_local_cluster.sh"
done
