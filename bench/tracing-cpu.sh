#!/usr/bin/env bash
# CPU per proxied request with tracing off, on with every request sampled, and on with none
# sampled (the sampling decision, context and headers without span records), in interleaved
# rounds (the host's speed drifts, so only figures from the same run compare). One process each,
# no Redis, spans over http/protobuf to bench/otlp-sink.ts; µs of CPU (user + system, from
# /proc/<pid>/stat) per request, then the medians and what tracing adds to the request.
# CPU per request moves less with the host's load than requests per second (bench/proxy.sh).
# Usage: bench/tracing-cpu.sh [rounds=5] [duration=5s] [connections=32]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}
DURATION=${2:-5s}
CONNS=${3:-32}
source "$ROOT/bench/bench-svc.sh"
require_wrk
bench_workdir tracing-cpu

(cd "$ROOT" && node scripts/ensure-built.mjs)
BACKEND_PORT=$(free_port)
node "$ROOT/fixtures/backend.cjs" "$BACKEND_PORT" >/dev/null & PIDS+=($!)

write_bench_config "$WORK/config" "$BACKEND_PORT"
split_stores "$WORK/config"

SVC_PORT=$(free_port); SAMPLED_PORT=$(free_port); UNSAMPLED_PORT=$(free_port); SINK_PORT=$(free_port)
(cd "$ROOT" && exec node --import tsx bench/otlp-sink.ts "$SINK_PORT" >/dev/null 2>&1) & PIDS+=($!)
(cd "$ROOT" && SVC_LOG_LEVEL=warn exec node dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$SVC_PORT" --workers 1 >"$WORK/svc.log" 2>&1) & SVC_PID=$!; PIDS+=("$SVC_PID")
(cd "$ROOT" && SVC_LOG_LEVEL=warn OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=always_on exec node dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$SAMPLED_PORT" --workers 1 >"$WORK/sampled.log" 2>&1) & SAMPLED_PID=$!; PIDS+=("$SAMPLED_PID")
(cd "$ROOT" && SVC_LOG_LEVEL=warn OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=always_off exec node dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$UNSAMPLED_PORT" --workers 1 >"$WORK/unsampled.log" 2>&1) & UNSAMPLED_PID=$!; PIDS+=("$UNSAMPLED_PID")
# Three servers start at once here: a longer wait than one alone needs.
wait_for "http://127.0.0.1:$SVC_PORT/healthz" 60; wait_for "http://127.0.0.1:$SAMPLED_PORT/healthz" 60; wait_for "http://127.0.0.1:$UNSAMPLED_PORT/healthz" 60
TOKEN=$(bench_token "http://127.0.0.1:$SVC_PORT")
SVC_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench/"
check_proxies "$SVC_URL" "$TOKEN"

echo "# $(date -u +%FT%TZ) $(nproc) cores, node $(node -v), wrk -t1 -c$CONNS -d$DURATION, $ROUNDS rounds"
printf '%-9s %9s %8s %12s\n' target 'req/s' 'p99 ms' 'µs CPU/req'
RESULTS=$(for _ in $(seq 1 "$ROUNDS"); do
  measure off "$SVC_PID" "$SVC_URL" -H "Authorization: Bearer $TOKEN"
  measure sampled "$SAMPLED_PID" "http://127.0.0.1:$SAMPLED_PORT/api/v1/extensions/bench/" -H "Authorization: Bearer $TOKEN"
  measure unsampled "$UNSAMPLED_PID" "http://127.0.0.1:$UNSAMPLED_PORT/api/v1/extensions/bench/" -H "Authorization: Bearer $TOKEN"
done)
awk '{printf "%-9s %9s %8s %12s\n", $1, $2, $3, $4}' <<<"$RESULTS"
declare -A MEDIAN
while read -r label median; do MEDIAN[$label]=$median; done < <(cpu_medians <<<"$RESULTS")
awk -v s="${MEDIAN[off]}" -v n="${MEDIAN[sampled]}" -v o="${MEDIAN[unsampled]}" 'BEGIN {
  printf "median µs CPU per request: off %.1f, every request sampled %.1f (+%.1f, off/on %.2f), none sampled %.1f (+%.1f)\n", s, n, n - s, s / n, o, o - s }'
