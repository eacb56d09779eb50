#!/usr/bin/env bash
# Stop what scripts/unleash_up.sh started, by PID: the unleash-server node process and,
# only if unleash_up.sh started it, the PostgreSQL cluster (its postmaster PID).
# Safe to run when nothing is running.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${UNLEASH_STATE_DIR:-$ROOT/.cache/unleash}"

log() { echo "[unleash_down] $*" >&2; }

stop_pid() {  # stop_pid PID SIGNAL NAME: signal, wait up to 15 s, then SIGKILL
  local pid="$1" sig="$2" name="$3"
  kill -0 "$pid" 2>/dev/null || { log "$name (pid $pid) not running"; return 0; }
  kill "-$sig" "$pid" 2>/dev/null
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null
  log "killed $name (pid $pid) after timeout"
}

if [[ -f "$STATE/unleash.pid" ]]; then
  stop_pid "$(cat "$STATE/unleash.pid")" TERM unleash-server
  rm -f "$STATE/unleash.pid"
fi

if [[ -f "$STATE/postgres.started" ]]; then
  PG_VERSION="$(cat "$STATE/postgres.started")"
  DATA_DIR="$(pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main" {print $6}')"
  if [[ -n "$DATA_DIR" && -f "$DATA_DIR/postmaster.pid" ]]; then
    # SIGINT = PostgreSQL's "fast" shutdown.
    stop_pid "$(head -n 1 "$DATA_DIR/postmaster.pid")" INT postgres
  fi
  rm -f "$STATE/postgres.started"
fi
exit 0
