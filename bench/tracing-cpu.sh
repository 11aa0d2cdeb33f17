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
# Three servers start at once here: a longer wait than bench-svc.sh's.
wait_for() { for _ in $(seq 1 600); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "not answering: $1" >&2; cat "$WORK"/*.log >&2; exit 1; }
bench_workdir tracing-cpu
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

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
wait_for "http://127.0.0.1:$SVC_PORT/healthz"; wait_for "http://127.0.0.1:$SAMPLED_PORT/healthz"; wait_for "http://127.0.0.1:$UNSAMPLED_PORT/healthz"
TOKEN=$(bench_token "http://127.0.0.1:$SVC_PORT")
SVC_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench/"
check_proxies "$SVC_URL" "$TOKEN"

TICK_US=$((1000000 / $(getconf CLK_TCK)))
# measure <label> <pid> <url> [wrk args]: prints "<label> <req/s> <p99 ms> <µs CPU per request>"
measure() {
  local label=$1 pid=$2 url=$3 out before after requests
  shift 3
  wrk -t1 -c8 -d1s "$@" "$url" >/dev/null # warm
  before=$(cpu_ticks "$pid")
  out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  after=$(cpu_ticks "$pid")
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$out" >&2; fi
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  awk -v l="$label" -v t="$(( (after - before) * TICK_US ))" -v n="$requests" '
    /Requests\/sec/ {rps=$2}
    $1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; p99=v}
    END {printf "%s %.0f %.2f %.1f\n", l, rps, p99, t/n}' <<<"$out"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, node $(node -v), wrk -t1 -c$CONNS -d$DURATION, $ROUNDS rounds"
printf '%-9s %9s %8s %12s\n' target 'req/s' 'p99 ms' 'µs CPU/req'
RESULTS=$(for _ in $(seq 1 "$ROUNDS"); do
  measure off "$SVC_PID" "$SVC_URL" -H "Authorization: Bearer $TOKEN"
  measure sampled "$SAMPLED_PID" "http://127.0.0.1:$SAMPLED_PORT/api/v1/extensions/bench/" -H "Authorization: Bearer $TOKEN"
  measure unsampled "$UNSAMPLED_PID" "http://127.0.0.1:$UNSAMPLED_PORT/api/v1/extensions/bench/" -H "Authorization: Bearer $TOKEN"
done)
awk '{printf "%-9s %9s %8s %12s\n", $1, $2, $3, $4}' <<<"$RESULTS"
awk '{cpu[$1] = cpu[$1] " " $4}
  function median(list,   a, n, i, j, t) { n = split(list, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { s = median(cpu["off"]); n = median(cpu["sampled"]); o = median(cpu["unsampled"]);
        printf "median µs CPU per request: off %.1f, every request sampled %.1f (+%.1f, off/on %.2f), none sampled %.1f (+%.1f)\n", s, n, n - s, s / n, o, o - s }' <<<"$RESULTS"
