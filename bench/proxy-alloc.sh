#!/usr/bin/env bash
# Bytes allocated per proxied request, svc against the dispatch floor (bench/node-floor-dispatch.ts),
# one process each, saturated by wrk: bench/alloc-sampler.ts samples every allocation for 4 s in
# the middle of a 6 s run, and bench/alloc-summary.ts divides by the requests served meanwhile
# (req/s of the run x 4 s) and splits the bytes by origin (svc's own code, undici, Node).
# Every allocation costs CPU twice, when made and when the young collection sweeps it.
# Usage: bench/proxy-alloc.sh [connections=32]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONNS=${1:-32}
SAMPLE_S=4
source "$ROOT/bench/bench-svc.sh"
require_wrk
bench_workdir alloc

(cd "$ROOT" && node scripts/ensure-built.mjs)
BACKEND_PORT=$(free_port); SVC_PORT=$(free_port); FLOOR_PORT=$(free_port)
node "$ROOT/fixtures/backend.cjs" "$BACKEND_PORT" >/dev/null & PIDS+=($!)
write_bench_config "$WORK/config" "$BACKEND_PORT"
split_stores "$WORK/config"
export ALLOC_PROFILE_DIR=$WORK ALLOC_SAMPLE_MS=$((SAMPLE_S * 1000))
(cd "$ROOT" && SVC_LOG_LEVEL=warn exec node --import tsx --import ./bench/alloc-sampler.ts dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$SVC_PORT" --workers 1 >"$WORK/svc.log" 2>&1) & SVC_PID=$!; PIDS+=("$SVC_PID")
(cd "$ROOT" && exec node --import tsx --import ./bench/alloc-sampler.ts bench/node-floor-dispatch.ts "$FLOOR_PORT" "http://127.0.0.1:$BACKEND_PORT" >"$WORK/floor.log" 2>&1) & FLOOR_PID=$!; PIDS+=("$FLOOR_PID")
wait_for "http://127.0.0.1:$SVC_PORT/healthz"; wait_for "http://127.0.0.1:$FLOOR_PORT/"
TOKEN=$(bench_token "http://127.0.0.1:$SVC_PORT")
SVC_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench/"
check_proxies "$SVC_URL" "$TOKEN"

# sample <label> <pid> <url> [wrk args]
sample() {
  local label=$1 pid=$2 url=$3 out rps
  shift 3
  wrk -t1 -c"$CONNS" -d3s "$@" "$url" >/dev/null # warm: JIT and caches
  (sleep 1 && kill -USR2 "$pid") &
  out=$(wrk -t1 -c"$CONNS" -d$((SAMPLE_S + 2))s "$@" "$url")
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$out" >&2; fi
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  for _ in $(seq 1 100); do [ -s "$WORK/alloc-$pid.json" ] && break; sleep 0.1; done
  [ -s "$WORK/alloc-$pid.json" ] || { echo "no allocation profile from $label" >&2; cat "$WORK"/*.log >&2; exit 1; }
  (cd "$ROOT" && node --import tsx bench/alloc-summary.ts "$WORK/alloc-$pid.json" "$(awk -v r="$rps" -v s="$SAMPLE_S" 'BEGIN {printf "%d", r * s}')" "$label ($rps req/s while sampled)")
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, node $(node -v), wrk -t1 -c$CONNS, ${SAMPLE_S} s sampled"
sample svc "$SVC_PID" "$SVC_URL" -H "Authorization: Bearer $TOKEN"
sample dispatch-floor "$FLOOR_PID" "http://127.0.0.1:$FLOOR_PORT/"
