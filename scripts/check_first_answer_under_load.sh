#!/usr/bin/env bash
# The README's first command, `rootweaver ask` (embedded reader, default 60 s deadline),
# run with two busy-loop processes beside it that this script starts and stops itself.
# Passes (exit 0) when the answer is the reader's (not the extractive fallback) and says
# "Japan and Hong Kong"; prints the wall time, the load note if any, and the answer line.
#
# Usage: bash scripts/check_first_answer_under_load.sh [BUSY_LOOPS (default 2)]
# Needs the extra `reader` and the model in ~/.cache/rootweaver/models (the first
# `rootweaver ask` assembles it).
set -u
loops=${1:-2}
pids=()
stop_load() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; }
trap stop_load EXIT
for _ in $(seq "$loops"); do
  ( while :; do :; done ) &
  pids+=($!)
done
out=$(mktemp)
start=$(date +%s.%N)
rootweaver ask >"$out" 2>"$out.err"
code=$?
end=$(date +%s.%N)
stop_load
answer=$(grep '^Answer \[' "$out")
printf 'busy loops: %s  exit: %s  wall: %.1f s\n' "$loops" "$code" "$(echo "$end - $start" | bc)"
echo "$answer"
grep -v '^$' "$out.err" || true
rm -f "$out" "$out.err"
case "$answer" in
  *extractive*) echo "FAIL: the reader did not answer"; exit 1 ;;
  *"Japan and Hong Kong"*) echo "OK"; exit 0 ;;
  *) echo "FAIL: wrong answer"; exit 1 ;;
esac
