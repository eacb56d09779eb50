#!/usr/bin/env bash
# Run a command against a real two-node Ray cluster on this machine (1 CPU per node),
# inside a loopback-only network + PID namespace (Ray probes an outside address for its
# IP; here only 127.0.0.1 exists, and nothing can bind anything else).
#
#   scripts/ray_local_cluster.sh COMMAND [ARGS...]
#
# COMMAND runs with RAY_ADDRESS=127.0.0.1:$RAY_PORT and RAY_NODE2_PGID (the process group
# of the second node: `kill -9 -- -$RAY_NODE2_PGID` loses that node abruptly, raylet and
# workers). Both nodes are stopped by PID afterwards. Exit status: COMMAND's; 3 when Ray
# or unshare is missing (tests skip on 3 with this script's message).
# Needs root (unshare -n -p). Environment: PYTHON (default python), RAY_PORT (6380),
# RAY_TMP (a fresh temp dir), RAY_NODE_CPUS (1), RAY_NODES (2; 1 = the head alone, for the
# one-node baseline); PYTHONPATH is passed to the nodes.
set -euo pipefail
if [[ "${1:-}" != "--inside" ]]; then
  PY="${PYTHON:-python}"
  RAY_BIN="$(dirname "$(command -v "$PY")")/ray"
  if [[ ! -x "$RAY_BIN" ]] || ! command -v unshare >/dev/null; then
    echo "ray_local_cluster: needs Ray ('pip install rootweaver[cluster]', $RAY_BIN) and unshare" >&2; exit 3
  fi
  export RAY_BIN
  exec unshare -n -p -f --mount-proc bash "${BASH_SOURCE[0]}" --inside "$@"
fi
shift
ip link set lo up
PORT="${RAY_PORT:-6380}"
CPUS="${RAY_NODE_CPUS:-1}"
TMP="${RAY_TMP:-$(mktemp -d /tmp/rwray.XXXXXX)}"
export RAY_USAGE_STATS_ENABLED=0 RAY_ADDRESS="127.0.0.1:$PORT"
common=(--node-ip-address 127.0.0.1 --num-cpus "$CPUS" --object-store-memory 200000000 --disable-usage-stats
        --temp-dir "$TMP" --block)
setsid "$RAY_BIN" start --head --port "$PORT" --include-dashboard false "${common[@]}" >"$TMP/head.log" 2>&1 &
HEAD=$!
NODE2=""
stop() {
  [[ -n "$NODE2" ]] && kill -TERM -- "-$NODE2" 2>/dev/null || true
  kill -TERM -- "-$HEAD" 2>/dev/null || true
  sleep 2
  [[ -n "$NODE2" ]] && kill -9 -- "-$NODE2" 2>/dev/null || true
  kill -9 -- "-$HEAD" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 1 60); do "$RAY_BIN" status --address "$RAY_ADDRESS" >/dev/null 2>&1 && break; sleep 1; done
if [[ "${RAY_NODES:-2}" == 1 ]]; then "$@"; exit $?; fi
setsid "$RAY_BIN" start --address "$RAY_ADDRESS" --min-worker-port 20000 --max-worker-port 20999 \
  "${common[@]}" >"$TMP/node2.log" 2>&1 &
NODE2=$!
export RAY_NODE2_PGID="$NODE2"
for _ in $(seq 1 60); do
  n="$("$RAY_BIN" status --address "$RAY_ADDRESS" 2>/dev/null | grep -c 'node_' || true)"
  [[ "$n" -ge 2 ]] && break
  sleep 1
done
[[ "${n:-0}" -ge 2 ]] || { echo "ray_local_cluster: second node did not join; see $TMP" >&2; exit 1; }
set +e
"$@"
rc=$?
set -e
exit "$rc"
