#!/usr/bin/env bash
# Extension proxy throughput, in one run: a trivial backend, nginx with a plain proxy_pass
# (scripts/peers/start-nginx.sh) and svc (svc-server --workers N --redis, an extension with a
# bearer token of a non-admin account and a real rights rule). wrk -c64 for DURATION against
# each; prints req/s and p99 per target and the ratios svc/nginx and svc/direct. Two variants of
# svc are each measured in alternation with plain svc (PAIRS pairs, the median ratio printed):
# svc-assert, an extension with backend.identityAssertion (a signed Svc-Identity-Assertion on
# every request, reused per caller for part of its life), and svc-ratelimit, an extension whose
# backend.rateLimit is far above the load, and svc-traced, a second svc with tracing on and every
# request sampled (spans to bench/otlp-sink.ts); each ratio is that feature's cost.
# Targets: svc >= 0.6 x nginx; p99 added by svc over direct <= 2 ms.
# Then the same targets paced (bench/paced.lua: each connection waits a random PACED_DELAY_MS
# on average between requests, about 10k req/s in all): the p50 and p99 a proxy adds when it is
# not saturated, where a saturated run's p99 mostly measures its queue (see docs/benchmarks.md).
# Usage: bench/proxy.sh [duration=10s] [connections=64]
# Env: SVC_WORKERS (default: cores), WRK_THREADS (default 2), PAIRS (default 3), PACED_DELAY_MS
#      (default 6; 0 skips the paced runs), ASSERT_BENCH=0, RATELIMIT_BENCH=0, AUDIT_BENCH=0 and
#      TRACING_BENCH=0 skip svc-assert, svc-ratelimit, the audit variant and svc-traced, KOA_PROXIES=1 also measures a
#      Koa + koa-proxies 0.12.4 gateway (devDependency; used once for docs/benchmarks.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS="$ROOT/scripts/peers"
DURATION=${1:-10s}
CONNS=${2:-64}
WORKERS=${SVC_WORKERS:-$(nproc)}
THREADS=${WRK_THREADS:-2}
PACED_DELAY_MS=${PACED_DELAY_MS:-6}
source "$ROOT/bench/bench-svc.sh"
require_wrk
WORK=$(mktemp -d /tmp/svc-bench-proxy-XXXXXX)
PIDFILES=()
SVC_PID=""
EXTRA_PID=""
cleanup() {
  # setsid: svc leads its own process group (primary and workers).
  [ -n "$SVC_PID" ] && kill -- "-$SVC_PID" 2>/dev/null || true
  [ -n "$EXTRA_PID" ] && kill "$EXTRA_PID" 2>/dev/null || true
  [ -n "${FLOOR_PID:-}" ] && kill -- "-$FLOOR_PID" 2>/dev/null || true
  for p in "${PIDFILES[@]}"; do bash "$PEERS/stop-peer.sh" "$p" >/dev/null 2>&1 || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

BACKEND_PORT=$(free_port); NGINX_PORT=$(free_port); REDIS_PORT=$(free_port); SVC_PORT=$(free_port)

PIDFILES+=("$(bash "$PEERS/start-backend.sh" "$WORK/backend" "$BACKEND_PORT" | tail -1)")
PIDFILES+=("$(bash "$PEERS/start-nginx.sh" "$WORK/nginx" "$NGINX_PORT" "127.0.0.1:$BACKEND_PORT" | tail -1)")
PIDFILES+=("$(bash "$PEERS/start-redis.sh" "$WORK/redis" "$REDIS_PORT" | tail -1)")

write_bench_config "$WORK/config" "$BACKEND_PORT"

# Rate-limit variant: a second extension on the same backend whose backend.rateLimit is far above
# the load, so every request pays for its token (one Redis call) and none is refused.
# Audit variant: `bench-refused`, which no rule lets the bench account use: every request is a 403
# and one audit event (rights-refused).
awk -v port="$BACKEND_PORT" '
  /^---$/ && !ext { print "      - name: bench-limited\n        enabled: true\n        backend:\n          rateLimit: { requestsPerSecond: 1000000, burst: 1000000 }\n          services:\n            - url: http://127.0.0.1:" port; print "      - name: bench-refused\n        enabled: true\n        backend:\n          services:\n            - url: http://127.0.0.1:" port; ext = 1 }
  { print }
  /^    g, bench, role:bench$/ { print "    p, role:bench, extensions, *, */bench-limited, allow" }
' "$WORK/config/svc.yaml" >"$WORK/svc.yaml" && mv "$WORK/svc.yaml" "$WORK/config/svc.yaml"
split_stores "$WORK/config"

# The compiled server, as `npm start` runs it.
(cd "$ROOT" && node scripts/ensure-built.mjs)
(cd "$ROOT" && SVC_LOG_LEVEL=warn exec setsid node dist/src/commands/svc-server.js --config "$WORK/config" --listen "127.0.0.1:$SVC_PORT" \
  --redis "redis://127.0.0.1:$REDIS_PORT" --workers "$WORKERS" >"$WORK/svc.log" 2>&1) &
SVC_PID=$!
for _ in $(seq 1 200); do curl -fsS -o /dev/null "http://127.0.0.1:$SVC_PORT/healthz" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:$SVC_PORT/healthz" || { cat "$WORK/svc.log" >&2; exit 1; }
# Tracing variant (issue 55): a second svc of the same build (same workers, config and Redis) with
# every request sampled (OTEL_TRACES_SAMPLER=always_on) and its spans sent to a stand-in OTLP
# endpoint (bench/otlp-sink.ts); measured below in alternation with plain svc, whose tracing is
# off. Started beside plain svc, before the bench's token is issued: a replica that starts later
# may refuse tokens older than itself (the record of revocations, docs/state.md).
if [ "${TRACING_BENCH:-1}" = 1 ]; then
  SINK_PORT=$(free_port); TRACED_PORT=$(free_port)
  (cd "$ROOT" && exec setsid node --import tsx bench/otlp-sink.ts "$SINK_PORT" >"$WORK/otlp-sink.log" 2>&1) &
  SINK_PID=$!
  (cd "$ROOT" && SVC_LOG_LEVEL=warn OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=always_on exec setsid node dist/src/commands/svc-server.js \
    --config "$WORK/config" --listen "127.0.0.1:$TRACED_PORT" --redis "redis://127.0.0.1:$REDIS_PORT" --workers "$WORKERS" >"$WORK/svc-traced.log" 2>&1) &
  TRACED_PID=$!
  trap 'kill -- "-$SINK_PID" "-$TRACED_PID" 2>/dev/null || true; cleanup' EXIT
  for _ in $(seq 1 200); do curl -fsS -o /dev/null "http://127.0.0.1:$TRACED_PORT/healthz" 2>/dev/null && break; sleep 0.1; done
fi
TOKEN=$(bench_token "http://127.0.0.1:$SVC_PORT")
SVC_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench/"
check_proxies "$SVC_URL" "$TOKEN"
SIGNED_URL="http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench-signed/"
check_proxies "$SIGNED_URL" "$TOKEN"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$SVC_URL")" = 401 ] || { echo "svc proxies without a token" >&2; exit 1; }

FLOOR_PORT=$(free_port)
(cd "$ROOT" && exec setsid node --import tsx bench/node-floor-proxy.ts "$FLOOR_PORT" "http://127.0.0.1:$BACKEND_PORT" "$WORKERS" >"$WORK/floor.log" 2>&1) &
FLOOR_PID=$!
for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$FLOOR_PORT/" 2>/dev/null && break; sleep 0.1; done

if [ "${KOA_PROXIES:-0}" = 1 ]; then
  KOA_PORT=$(free_port)
  (cd "$ROOT" && exec node --import tsx bench/koa-proxies-gateway.ts "$KOA_PORT" "http://127.0.0.1:$BACKEND_PORT" >"$WORK/koa.log" 2>&1) &
  EXTRA_PID=$!
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$KOA_PORT/ext/" 2>/dev/null && break; sleep 0.1; done
fi

# percentile_ms <50%|99%>: that line of wrk --latency output, in ms
percentile_ms() {
  awk -v p="$1" '$1==p {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}'
}

# run <label> <url> [header]: saturated; prints "<label> <req/s> <p99 ms>"
run() {
  local label=$1 url=$2 out
  shift 2
  curl -fsS -o /dev/null "$@" "$url" # warm
  wrk -t1 -c8 -d2s "$@" "$url" >/dev/null
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$out" >&2; fi
  echo "$label $(awk '/Requests\/sec/ {print $2}' <<<"$out") $(percentile_ms 99% <<<"$out")"
}

# paced <label> <url> [header]: below saturation; prints "<label> <req/s> <p50 ms> <p99 ms>"
paced() {
  local label=$1 url=$2 out
  shift 2
  out=$(WRK_DELAY_MS=$PACED_DELAY_MS wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "$ROOT/bench/paced.lua" "$@" "$url")
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$out" >&2; fi
  echo "$label $(awk '/Requests\/sec/ {print $2}' <<<"$out") $(percentile_ms 50% <<<"$out") $(percentile_ms 99% <<<"$out")"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, node $(node -v), nginx $(nginx -v 2>&1 | sed 's/.*\///'), svc workers=$WORKERS, wrk -t$THREADS -c$CONNS -d$DURATION"
RESULTS=()
RESULTS+=("$(run direct "http://127.0.0.1:$BACKEND_PORT/")")
RESULTS+=("$(run nginx "http://127.0.0.1:$NGINX_PORT/")")
RESULTS+=("$(run svc "$SVC_URL" -H "Authorization: Bearer $TOKEN")")
RESULTS+=("$(run node-floor "http://127.0.0.1:$FLOOR_PORT/")")
[ -n "$EXTRA_PID" ] && RESULTS+=("$(run koa-proxies "http://127.0.0.1:$KOA_PORT/ext/")")
[ "${SVC_HEALTHZ:-0}" = 1 ] && RESULTS+=("$(run svc-healthz "http://127.0.0.1:$SVC_PORT/healthz")")
printf '%-12s %12s %10s\n' target 'req/s' 'p99 ms'
for r in "${RESULTS[@]}"; do read -r l q p <<<"$r"; printf '%-12s %12.0f %10.2f\n' "$l" "$q" "$p"; done
read -r _ DQ DP <<<"${RESULTS[0]}"; read -r _ NQ NP <<<"${RESULTS[1]}"; read -r _ SQ SP <<<"${RESULTS[2]}"; read -r _ FQ FP <<<"${RESULTS[3]}"
awk -v d="$DQ" -v n="$NQ" -v s="$SQ" -v f="$FQ" -v dp="$DP" -v sp="$SP" -v fp="$FP" 'BEGIN {
  printf "svc/nginx  %.2f  (target >= 0.60)\nsvc/direct %.2f\nadded p99  %.2f ms (target <= 2 ms)\n", s/n, s/d, sp-dp
  printf "node floor/nginx %.2f, svc/node floor %.2f, node floor added p99 %.2f ms\n", f/n, s/f, fp-dp }'
# paired <label> <url>: the variant against plain svc in alternation (svc, variant, svc, variant,
# ... PAIRS pairs, default 3), each pair measured back to back; prints each pair's ratio and their
# median. A variant measured minutes after plain svc moves with the host's load more than with
# its own cost; a pair shares its minute.
paired() {
  local label=$1 url=$2 ratios=() base variant bq bp vq vp
  for _ in $(seq 1 "${PAIRS:-3}"); do
    base=$(run svc "$SVC_URL" -H "Authorization: Bearer $TOKEN")
    variant=$(run "$label" "$url" -H "Authorization: Bearer $TOKEN")
    read -r _ bq bp <<<"$base"; read -r _ vq vp <<<"$variant"
    ratios+=("$(awk -v v="$vq" -v b="$bq" 'BEGIN { printf "%.2f", v/b }')")
    printf '  pair: svc %.0f req/s, p99 %.2f ms; %s %.0f req/s, p99 %.2f ms\n' "$bq" "$bp" "$label" "$vq" "$vp" >&2
  done
  echo "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }') ${ratios[*]}"
}

# Identity assertion (see the top): signing on every request, reused per caller.
if [ "${ASSERT_BENCH:-1}" = 1 ]; then
  read -r MEDIAN PAIRS_SEEN <<<"$(paired svc-assert "$SIGNED_URL")"
  echo "identity assertion on/off $MEDIAN (target >= 0.90; median of pairs: ${PAIRS_SEEN// /, })"
fi

# Rate-limit variant (see above): the cost of backend.rateLimit beside plain svc.
if [ "${RATELIMIT_BENCH:-1}" = 1 ]; then
  read -r MEDIAN PAIRS_SEEN <<<"$(paired svc-ratelimit "http://127.0.0.1:$SVC_PORT/api/v1/extensions/bench-limited/")"
  echo "svc with a rate limit far above the load: $MEDIAN x svc (target >= 0.90; median of pairs: ${PAIRS_SEEN// /, })"
fi

# Tracing variant (started with plain svc, above): svc-traced against plain svc in alternation.
if [ "${TRACING_BENCH:-1}" = 1 ]; then
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$TRACED_PORT/api/v1/extensions/bench/")" = 200 ] \
    || { echo "traced svc does not proxy" >&2; cat "$WORK/svc-traced.log" >&2; exit 1; }
  read -r MEDIAN PAIRS_SEEN <<<"$(paired svc-traced "http://127.0.0.1:$TRACED_PORT/api/v1/extensions/bench/")"
  echo "tracing on/off $MEDIAN (target >= 0.85; median of pairs: ${PAIRS_SEEN// /, })"
  kill -- "-$TRACED_PID" 2>/dev/null || true
  kill -TERM "$SINK_PID" 2>/dev/null || true
  sleep 0.5
  tail -1 "$WORK/otlp-sink.log"
  trap cleanup EXIT
fi

# Audit variant (see above): the same flood of refused requests against two single-process svc of
# the same build, one without an audit sink and one writing its events to a file; the ratio is
# what the audit trail costs a 403.
if [ "${AUDIT_BENCH:-1}" = 1 ]; then
  AUDIT_OFF_PORT=$(free_port); AUDIT_FILE_PORT=$(free_port)
  (cd "$ROOT" && SVC_LOG_LEVEL=warn exec setsid node --import tsx bench/audit-variant.ts "$WORK/config" "$AUDIT_OFF_PORT" "redis://127.0.0.1:$REDIS_PORT" none >"$WORK/audit-off.log" 2>&1) &
  AUDIT_OFF_PID=$!
  (cd "$ROOT" && SVC_LOG_LEVEL=warn exec setsid node --import tsx bench/audit-variant.ts "$WORK/config" "$AUDIT_FILE_PORT" "redis://127.0.0.1:$REDIS_PORT" "$WORK/audit.log" >"$WORK/audit-file.log" 2>&1) &
  AUDIT_FILE_PID=$!
  trap 'kill -- "-$AUDIT_OFF_PID" "-$AUDIT_FILE_PID" 2>/dev/null || true; cleanup' EXIT
  for port in "$AUDIT_OFF_PORT" "$AUDIT_FILE_PORT"; do
    for _ in $(seq 1 200); do curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break; sleep 0.1; done
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/api/v1/extensions/bench-refused/")" = 403 ] \
      || { echo "svc on $port does not refuse bench-refused" >&2; cat "$WORK"/audit-*.log >&2; exit 1; }
  done
  # run_refused <label> <url>: like run, where every answer is a 403; prints "<label> <req/s> <p99 ms>"
  run_refused() {
    local label=$1 url=$2 out
    wrk -t1 -c8 -d2s -H "Authorization: Bearer $TOKEN" "$url" >/dev/null
    out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$url")
    if grep -q 'Socket errors' <<<"$out"; then echo "$out" >&2; fi
    echo "$label $(awk '/Requests\/sec/ {print $2}' <<<"$out") $(percentile_ms 99% <<<"$out")"
  }
  # Twice each, interleaved, the second pair kept: the first run of a fresh process warms it up.
  for _ in 1 2; do
    OFF=$(run_refused refused-no-audit "http://127.0.0.1:$AUDIT_OFF_PORT/api/v1/extensions/bench-refused/")
    ON=$(run_refused refused-audit "http://127.0.0.1:$AUDIT_FILE_PORT/api/v1/extensions/bench-refused/")
  done
  read -r _ OQ OP <<<"$OFF"; read -r _ AQ2 AP2 <<<"$ON"
  EVENTS=$(wc -l <"$WORK/audit.log")
  awk -v o="$OQ" -v op="$OP" -v a="$AQ2" -v ap="$AP2" -v n="$EVENTS" 'BEGIN {
    printf "refused requests (403), one process each: no audit sink %.0f req/s, p99 %.2f ms; audit to a file %.0f req/s, p99 %.2f ms; %.2f x (%d events written)\n", o, op, a, ap, a/o, n }'
  kill -- "-$AUDIT_OFF_PID" "-$AUDIT_FILE_PID" 2>/dev/null || true
fi

[ "$PACED_DELAY_MS" = 0 ] && exit 0
PACED=()
PACED+=("$(paced direct "http://127.0.0.1:$BACKEND_PORT/")")
PACED+=("$(paced nginx "http://127.0.0.1:$NGINX_PORT/")")
PACED+=("$(paced svc "$SVC_URL" -H "Authorization: Bearer $TOKEN")")
PACED+=("$(paced node-floor "http://127.0.0.1:$FLOOR_PORT/")")
echo "# paced: each connection waits ${PACED_DELAY_MS} ms on average between requests"
printf '%-12s %12s %10s %10s\n' target 'req/s' 'p50 ms' 'p99 ms'
for r in "${PACED[@]}"; do read -r l q m p <<<"$r"; printf '%-12s %12.0f %10.2f %10.2f\n' "$l" "$q" "$m" "$p"; done
read -r _ _ DM DP <<<"${PACED[0]}"; read -r _ _ NM NP <<<"${PACED[1]}"; read -r _ _ SM SP <<<"${PACED[2]}"; read -r _ _ FM FP <<<"${PACED[3]}"
awk -v dm="$DM" -v dp="$DP" -v nm="$NM" -v np="$NP" -v sm="$SM" -v sp="$SP" -v fm="$FM" -v fp="$FP" 'BEGIN {
  printf "paced, added over direct: svc p50 %.2f ms, p99 %.2f ms (target <= 2 ms); nginx p50 %.2f, p99 %.2f; node floor p50 %.2f, p99 %.2f\n", sm-dm, sp-dp, nm-dm, np-dp, fm-dm, fp-dp }'
