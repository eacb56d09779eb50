#!/usr/bin/env bash
# The project's test command (README and .ci/run call exactly this).
#   1. unit and property tests, no servers;
#   2. start the real servers the integration tests need (Unleash + PostgreSQL on
#      127.0.0.1:4242, llama.cpp's OpenAI-compatible server with SmolLM2-135M on
#      127.0.0.1:8765, compiling llama-cpp-python when missing), two Sphinx searchd nodes (scripts/sphinx_up.sh, 127.0.0.1:9306/9406),
#      install Debian's chromium for the page's browser test (Playwright drives it; the
#      package comes with the extra `page-test`), run `pytest -m integration` (the Ray tests
#      start their own two-node cluster in a loopback-only namespace, scripts/ray_local_cluster.sh;
#      the page test its own `serve --http`), stop them all by PID.
# Non-interactive; needs root (apt-get for PostgreSQL and chromium) on a fresh machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"  # torch threads oversubscribe 2 cores shared with servers

"$PY" -m pytest -m "not integration" -q -p no:cacheprovider

cleanup() {
  "$PY" scripts/local_reader.py stop >/dev/null 2>&1 || true
  bash scripts/unleash_down.sh >/dev/null 2>&1 || true
  bash scripts/sphinx_down.sh >/dev/null 2>&1 || true
}
trap cleanup EXIT

bash scripts/unleash_up.sh
# shellcheck disable=SC1091
source "${UNLEASH_STATE_DIR:-$ROOT/.cache/unleash}/env"
export UNLEASH_URL UNLEASH_ADMIN_URL UNLEASH_ADMIN_TOKEN UNLEASH_API_TOKEN UNLEASH_STATE_DIR

"$PY" scripts/local_reader.py setup --model smollm2   # builds llama-cpp-python (extra reader-compiled) when missing
"$PY" scripts/local_reader.py setup --model qwen-0.5b  # what the embedded reader's xllamacpp tests run
"$PY" scripts/local_reader.py start --model smollm2
export LLM_BASE_URL="http://127.0.0.1:8765/v1"

bash scripts/sphinx_up.sh
# shellcheck disable=SC1091
source "${SPHINX_STATE_DIR:-$ROOT/.cache/sphinx}/env"
export SPHINXQL_HOSTS SPHINXQL_NODES SPHINXQL_INDEX SPHINX_STATE_DIR

if [ ! -x /usr/bin/chromium ]; then  # Playwright cannot download a browser here: Debian's is used
  DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium </dev/null >/dev/null
fi

"$PY" -m pytest -m integration -q -p no:cacheprovider
