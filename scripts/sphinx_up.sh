#!/usr/bin/env bash
# Start two Sphinx searchd nodes on 127.0.0.1 serving one distributed index sharded in two
# RT shards, every node a mirror of both (rootweaver_capabilities/cluster/sphinxql.py), for the
# integration tests and for trying `retriever.backend: sphinxql` by hand.
#
# Non-interactive; installs Debian's sphinxsearch (Sphinx 2.2.11) with apt-get when searchd
# is missing (needs root). Idempotent: nodes whose pid file names a live process are kept.
#
# State folder (gitignored): $SPHINX_STATE_DIR, default <repo>/.cache/sphinx
#   node0/ node1/   searchd.conf, data/, searchd.pid, logs (written by
#                   `rootweaver index export --to sphinxql --conf-dir`)
#   env             `source` it: SPHINXQL_HOSTS (for retriever.sphinxql.hosts), SPHINXQL_NODES
#                   (for `index export --nodes`), SPHINXQL_INDEX, SPHINX_STATE_DIR
# Ports: SQL 9306 / 9406, API 9312 / 9412 (SPHINX_PORT_BASE shifts all four). The index is
# empty: load a corpus with `rootweaver index export --to sphinxql CORPUS --nodes $SPHINXQL_NODES`.
# Stop: scripts/sphinx_down.sh (by PID).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${SPHINX_STATE_DIR:-$ROOT/.cache/sphinx}"
BASE="${SPHINX_PORT_BASE:-9306}"
INDEX="${SPHINXQL_INDEX:-rootweaver}"
PY="${PYTHON:-python}"
export DEBIAN_FRONTEND=noninteractive
log() { echo "[sphinx_up] $*" >&2; }

if ! command -v searchd >/dev/null 2>&1; then
  log "installing sphinxsearch from Debian"
  apt-get update -q </dev/null >/dev/null
  apt-get install -y -q sphinxsearch </dev/null >/dev/null
fi
NODES="127.0.0.1:$BASE:$((BASE + 6)),127.0.0.1:$((BASE + 100)):$((BASE + 106))"
HOSTS="127.0.0.1:$BASE,127.0.0.1:$((BASE + 100))"
mkdir -p "$STATE"
if [[ ! -f "$STATE/node0/searchd.conf" ]]; then
  "$PY" -m rootweaver_capabilities.cli.main index export --to sphinxql --nodes "$NODES" --index "$INDEX" \
    --conf-dir "$STATE" >/dev/null
fi
for i in 0 1; do
  pidf="$STATE/node$i/searchd.pid"
  if [[ -f "$pidf" ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
    log "node$i already running (pid $(cat "$pidf"))"
    continue
  fi
  searchd --config "$STATE/node$i/searchd.conf" >"$STATE/node$i/start.log" 2>&1 \
    || { log "node$i did not start:"; tail -n 20 "$STATE/node$i/start.log" >&2; exit 1; }
done
for port in "$BASE" "$((BASE + 100))"; do
  for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
done
cat > "$STATE/env" <<ENV
export SPHINXQL_HOSTS='$HOSTS' SPHINXQL_NODES='$NODES' SPHINXQL_INDEX='$INDEX' SPHINX_STATE_DIR='$STATE'
ENV
log "ready: nodes $NODES (pids $(cat "$STATE/node0/searchd.pid") $(cat "$STATE/node1/searchd.pid")); source $STATE/env"
