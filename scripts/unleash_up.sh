#!/usr/bin/env bash
# Start a local Unleash server (unleash-server 7.5.1 on Node 20) backed by PostgreSQL
# from Debian, on 127.0.0.1:4242, for the integration tests and for trying flags by hand.
#
# Non-interactive (works as root with CI=true and no stdin). Idempotent: if the server
# recorded in the state folder still answers /health, it does nothing.
#
# State folder (gitignored): $UNLEASH_STATE_DIR, default <repo>/.cache/unleash
#   node/            npm prefix holding unleash-server@7.5.1
#   server.js        the start script
#   unleash.pid      PID of the node process     (scripts/unleash_down.sh kills it)
#   postgres.started present when this script started the PostgreSQL cluster
#   unleash.log      server log
#   env              `source` it: UNLEASH_URL, UNLEASH_ADMIN_URL, UNLEASH_ADMIN_TOKEN,
#                    UNLEASH_API_TOKEN, UNLEASH_STATE_DIR (fresh random tokens each start;
#                    the database is recreated each start so the tokens always match)
#   server.env       the RW_* database settings server.js reads (lets a test start a
#                    second instance on the same database, e.g. to kill it mid-run)
#
# The flags eip.capabilities.retrieval.multi_hop.enabled and
# eip.capabilities.retrieval.multi_hop.compaction are created through the admin API
# (disabled); tests and operators switch them on.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${UNLEASH_STATE_DIR:-$ROOT/.cache/unleash}"
PORT="${UNLEASH_PORT:-4242}"
HOST=127.0.0.1
VERSION=7.5.1
DB_NAME=unleash
DB_USER=unleash
export DEBIAN_FRONTEND=noninteractive

log() { echo "[unleash_up] $*" >&2; }

mkdir -p "$STATE"
chmod 700 "$STATE"

if [[ -f "$STATE/unleash.pid" ]] && kill -0 "$(cat "$STATE/unleash.pid")" 2>/dev/null \
   && curl -fsS "http://$HOST:$PORT/health" >/dev/null 2>&1; then
  log "already running (pid $(cat "$STATE/unleash.pid")); env in $STATE/env"
  exit 0
fi

if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
  log "port $PORT is already taken by a process this script did not start; stop it or set UNLEASH_PORT"
  exit 1
fi

# --- tools ----------------------------------------------------------------------------
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  log "installing ${missing[*]} from Debian"
  apt-get update -q </dev/null
  apt-get install -y -q "${missing[@]}" </dev/null
fi
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
if ((NODE_MAJOR < 20)); then
  log "unleash-server $VERSION needs Node >= 20, found $(node --version)"
  exit 1
fi

# --- PostgreSQL -----------------------------------------------------------------------
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  log "installing PostgreSQL from Debian"
  apt-get update -q </dev/null
  apt-get install -y -q postgresql </dev/null
fi
PG_VERSION="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main"' | grep -q .; then
  log "creating cluster $PG_VERSION/main"
  pg_createcluster "$PG_VERSION" main </dev/null
fi
PG_STATUS="$(pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main" {print $4}')"
PG_PORT="$(pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main" {print $3}')"
if [[ "$PG_STATUS" != online* ]]; then
  log "starting PostgreSQL $PG_VERSION/main on port $PG_PORT"
  pg_ctlcluster "$PG_VERSION" main start </dev/null
  echo "$PG_VERSION" > "$STATE/postgres.started"
fi
for _ in $(seq 1 30); do
  runuser -u postgres -- pg_isready -q -p "$PG_PORT" && break
  sleep 1
done

rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
DB_PASSWORD="$(rand)"
psql_admin() { runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qtA "$@" </dev/null; }
if [[ -z "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname='$DB_USER'")" ]]; then
  psql_admin -c "CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASSWORD'"
else
  psql_admin -c "ALTER ROLE $DB_USER LOGIN PASSWORD '$DB_PASSWORD'"
fi
psql_admin -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)"
psql_admin -c "CREATE DATABASE $DB_NAME OWNER $DB_USER"

# --- unleash-server -------------------------------------------------------------------
if [[ "$(node -p "require('$STATE/node/node_modules/unleash-server/package.json').version" 2>/dev/null)" != "$VERSION" ]]; then
  log "npm install unleash-server@$VERSION into $STATE/node"
  mkdir -p "$STATE/node"
  npm install --prefix "$STATE/node" --no-audit --no-fund --loglevel=error \
    "unleash-server@$VERSION" </dev/null
fi

cat > "$STATE/server.js" <<'EOF'
// Started by scripts/unleash_up.sh; configuration comes from the environment.
const unleash = require('unleash-server');
unleash.start({
  db: {
    host: '127.0.0.1',
    port: Number(process.env.RW_PG_PORT),
    user: process.env.RW_DB_USER,
    password: process.env.RW_DB_PASSWORD,
    database: process.env.RW_DB_NAME,
    ssl: false,
  },
  server: { port: Number(process.env.RW_PORT), host: '127.0.0.1' },
  versionCheck: { enable: false },
  authentication: { type: 'open-source' },
}).catch((err) => { console.error(err); process.exit(1); });
EOF

ADMIN_TOKEN="*:*.$(rand)"
API_TOKEN="default:development.$(rand)"
(
  umask 077
  cat > "$STATE/server.env" <<EOF
export NODE_PATH='$STATE/node/node_modules'
export RW_PG_PORT='$PG_PORT' RW_DB_USER='$DB_USER' RW_DB_PASSWORD='$DB_PASSWORD' RW_DB_NAME='$DB_NAME'
export LOG_LEVEL=warn
EOF
)
(
  cd "$STATE"
  # shellcheck disable=SC1091
  source "$STATE/server.env"
  export RW_PORT="$PORT"
  export INIT_ADMIN_API_TOKENS="$ADMIN_TOKEN" INIT_BACKEND_API_TOKENS="$API_TOKEN"
  nohup node "$STATE/server.js" >"$STATE/unleash.log" 2>&1 </dev/null &
  echo $! > "$STATE/unleash.pid"
)
PID="$(cat "$STATE/unleash.pid")"
log "started unleash-server $VERSION (pid $PID), waiting for /health"
for i in $(seq 1 120); do
  if curl -fsS "http://$HOST:$PORT/health" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$PID" 2>/dev/null; then
    log "unleash-server exited; last log lines:"; tail -n 30 "$STATE/unleash.log" >&2; exit 1
  fi
  if [[ "$i" == 120 ]]; then
    log "no /health after 120 s; last log lines:"; tail -n 30 "$STATE/unleash.log" >&2; exit 1
  fi
  sleep 1
done

umask 077
cat > "$STATE/env" <<EOF
export UNLEASH_URL='http://$HOST:$PORT/api'
export UNLEASH_ADMIN_URL='http://$HOST:$PORT/api/admin'
export UNLEASH_ADMIN_TOKEN='$ADMIN_TOKEN'
export UNLEASH_API_TOKEN='$API_TOKEN'
export UNLEASH_STATE_DIR='$STATE'
EOF

for flag in eip.capabilities.retrieval.multi_hop.enabled eip.capabilities.retrieval.multi_hop.compaction; do
  code="$(curl -sS -o /dev/null -w '%{http_code}' -X POST \
    -H "Authorization: $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    -d "{\"name\": \"$flag\", \"type\": \"release\"}" \
    "http://$HOST:$PORT/api/admin/projects/default/features")"
  case "$code" in
    201|200|409) ;;
    *) log "creating flag $flag failed with HTTP $code"; exit 1 ;;
  esac
done
log "ready at http://$HOST:$PORT (source $STATE/env)"
