#!/usr/bin/env bash
# Stop the searchd nodes started by scripts/sphinx_up.sh, by the PIDs in their pid files.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${SPHINX_STATE_DIR:-$ROOT/.cache/sphinx}"
for pidf in "$STATE"/node*/searchd.pid; do
  [[ -f "$pidf" ]] || continue
  pid="$(cat "$pidf")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done
