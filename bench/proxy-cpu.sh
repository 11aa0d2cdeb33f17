#!/usr/bin/env bash
# CPU per proxied request, svc against two bare Node proxies, in interleaved rounds (the host's
# speed drifts, so only figures from the same run compare). One process each, no Redis:
#   svc         svc-server --workers 1 (compiled), bearer token of a non-admin account + rights rule
#   floor       bench/node-floor-proxy.ts (node:http + undici stream(), nothing else)
#   dispatch    bench/node-floor-dispatch.ts (node:http + undici dispatch(), last chunk with end())
# For each round and target: req/s, p99 and µs of CPU (user + system, from /proc/<pid>/stat) per
# request; then the median per target, the ratio svc/dispatch, and svc's young-generation
# promotion per scavenge (V8 --trace-gc-nvp; a bare Node proxy promotes ~0.1 MB).
# Usage: bench/proxy-cpu.sh [rounds=3] [duration=5s] [connections=32]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-3}
DURATION=${2:-5s}
CONNS=${3:-32}
source "$ROOT/bench/bench-svc.sh"
require_wrk
bench_workdir cpu

(cd "$ROOT" && node scripts/ensure-built.mjs)
BACKEND_PORT=$(free_port)
node "$ROOT/fixtures/backend.cjs" "$BACKEND_PORT" >/dev/null & PIDS+=($!)

write_bench_config "$WORK/config" "$BACKEND_PORT"
split_stores "$WORK/config"

SVC_PORT=$(free_port); FLOOR_PORT=$(free_port); DISPATCH_PORT=$(free_port)
(cd "$ROOT" && SVC_LOG_LEVEL=warn exec node --trace-gc-nvp dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$SVC_PORT" --workers 1 >"$WORK/svc.log" 2>&1) & SVC_PID=$!; PIDS+=("$SVC_PID")
(cd "$ROOT" && exec node --import tsx bench/node-floor-proxy.ts "$FLOOR_PORT" "http://127.0.0.1:$BACKEND_PORT" 1 >/dev/null 2>&1) & FLOOR_PID=$!; PIDS+=("$FLOOR_PID")
(cd "$ROOT" && exec node --import tsx bench/node-floor-dispatch.ts "$DISPATCH_PORT" "http://127.0.0.1:$BACKEND_PORT" >/dev/null 2>&1) & DISPATCH_PID=$!; PIDS+=("$DISPATCH_PID")
wait_for "http://127.0.0.1:$SVC_PORT/healthz"; wait_for "http://127.0.0.1:$FLOOR_PORT/"; wait_for "http://127.0.0.1:$DISPATCH_PORT/"
TOKEN=$(bench_token "http://127.0.0.1:$SVC_PORT")
SVC_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench/"
check_proxies "$SVC_URL" "$TOKEN"

echo "# $(date -u +%FT%TZ) $(nproc) cores, node $(node -v), wrk -t1 -c$CONNS -d$DURATION, $ROUNDS rounds"
printf '%-9s %9s %8s %12s\n' target 'req/s' 'p99 ms' 'µs CPU/req'
RESULTS=$(for _ in $(seq 1 "$ROUNDS"); do
  measure svc "$SVC_PID" "$SVC_URL" -H "Authorization: Bearer $TOKEN"
  measure floor "$FLOOR_PID" "http://127.0.0.1:$FLOOR_PORT/"
  measure dispatch "$DISPATCH_PID" "http://127.0.0.1:$DISPATCH_PORT/"
done)
awk '{printf "%-9s %9s %8s %12s\n", $1, $2, $3, $4}' <<<"$RESULTS"
declare -A MEDIAN
while read -r label median; do MEDIAN[$label]=$median; done < <(cpu_medians <<<"$RESULTS")
awk -v s="${MEDIAN[svc]}" -v f="${MEDIAN[floor]}" -v d="${MEDIAN[dispatch]}" 'BEGIN {
  printf "median µs CPU per request: svc %.1f, floor %.1f, dispatch %.1f; svc/dispatch %.2f, svc/floor %.2f\n", s, f, d, s / d, s / f }'
grep 'gc=s ' "$WORK/svc.log" | tail -n 20 | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^promoted=/) {split($i, kv, "="); sum += kv[2]; n++}}
  END { if (n) printf "svc promoted per scavenge (last %d): %.2f MB (a bare Node proxy: ~0.1 MB)\n", n, sum / n / 1e6 }'
