# Sourced by the proxy benchmarks (bench/proxy.sh, bench/proxy-cpu.sh, bench/proxy-alloc.sh,
# bench/tracing-cpu.sh):
# what they share. Needs ROOT (the repository) set by the caller.

# The runtime every `node` below runs on: BENCH_NODE=/path/to/node when set (to compare runtimes),
# else the Node that package.json pins (node_modules/.bin, as `npm run bench:*` has it), else the
# PATH's.
if [ -n "${BENCH_NODE:-}" ]; then
  [ -x "$BENCH_NODE" ] || { echo "BENCH_NODE=$BENCH_NODE is not an executable" >&2; exit 1; }
  BENCH_NODE_DIR=$(mktemp -d /tmp/svc-bench-node-XXXXXX)
  ln -s "$BENCH_NODE" "$BENCH_NODE_DIR/node"
  PATH="$BENCH_NODE_DIR:$PATH"
elif [ -x "$ROOT/node_modules/.bin/node" ]; then
  PATH="$ROOT/node_modules/.bin:$PATH"
fi
export PATH

require_wrk() { command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 127; }; }

# bench_workdir NAME: WORK, a temp dir removed on exit with every process whose pid is in PIDS.
bench_workdir() {
  WORK=$(mktemp -d "/tmp/svc-bench-$1-XXXXXX")
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
}

# wait_for URL [seconds=10]: until URL answers 2xx; exits the bench when it does not in time.
wait_for() { for _ in $(seq 1 $((${2:-10} * 20))); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.05; done; echo "not answering: $1" >&2; exit 1; }

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks (/proc/PID/stat).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure LABEL PID URL [wrk args]: a second's warm-up, then wrk -t1 -c$CONNS -d$DURATION; prints
# "<label> <req/s> <p99 ms> <µs of PID's CPU per request>" (the CPU benches).
measure() {
  local label=$1 pid=$2 url=$3 out before after requests tick_us
  shift 3
  tick_us=$((1000000 / $(getconf CLK_TCK)))
  wrk -t1 -c8 -d1s "$@" "$url" >/dev/null # warm
  before=$(cpu_ticks "$pid")
  out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  after=$(cpu_ticks "$pid")
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$out" >&2; fi
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  awk -v l="$label" -v t="$(( (after - before) * tick_us ))" -v n="$requests" '
    /Requests\/sec/ {rps=$2}
    $1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; p99=v}
    END {printf "%s %.0f %.2f %.1f\n", l, rps, p99, t/n}' <<<"$out"
}

# cpu_medians: measure's lines on stdin; prints "<label> <median µs CPU per request>" per label.
cpu_medians() {
  awk '{cpu[$1] = cpu[$1] " " $4}
    function median(list,   a, n, i, j, t) { n = split(list, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { for (l in cpu) print l, median(cpu[l]) }'
}

# check_proxies URL TOKEN: the bench extension answers "ok" through svc with the token.
check_proxies() { [ "$(curl -fsS -H "Authorization: Bearer $2" "$1")" = ok ] || { echo "svc does not proxy" >&2; exit 1; }; }

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# split_stores DIR: DIR/svc.yaml's three documents into the files each store is read from
# (svc-cm.yaml, svc-rbac-cm.yaml, svc-secret.yaml: a store defined in another file is refused,
# docs/config-store.md). Call it once the combined file is final, before svc starts.
split_stores() {
  local dir=$1
  awk -v dir="$dir" 'BEGIN { n = 1; split("svc-cm svc-rbac-cm svc-secret", names, " ") }
    /^---$/ { n++; next }
    { print > (dir "/" names[n] ".yaml") }' "$dir/svc.yaml"
  rm "$dir/svc.yaml"
}

# write_bench_config DIR BACKEND_PORT: a config dir with the extension `bench` on the backend, the
# same with a signed identity assertion as `bench-signed`, and a local account `bench` (password
# bench-password) whose right to both comes from a policy rule.
write_bench_config() {
  local dir=$1 backend_port=$2 hash
  mkdir -p "$dir"
  hash=$(cd "$ROOT" && node -e 'console.log(require("bcryptjs").hashSync("bench-password", 4))')
  cat > "$dir/svc.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: { name: svc-cm }
data:
  accounts.bench: login
  extension.config: |
    extensions:
      - name: bench
        enabled: true
        backend:
          services:
            - url: http://127.0.0.1:$backend_port
      - name: bench-signed
        enabled: true
        backend:
          identityAssertion: true
          services:
            - url: http://127.0.0.1:$backend_port
---
apiVersion: v1
kind: ConfigMap
metadata: { name: svc-rbac-cm }
data:
  policy.csv: |
    p, role:bench, extensions, *, */bench, allow
    p, role:bench, extensions, *, */bench-signed, allow
    g, bench, role:bench
---
apiVersion: v1
kind: Secret
metadata: { name: svc-secret, labels: { app.kubernetes.io/part-of: svc } }
stringData:
  server.secretkey: bench-secret-key-0123456789abcdef0123456789
  admin.password: '$hash'
  accounts.bench.password: '$hash'
YAML
}

# bench_token SVC_URL: a session token of the account `bench`.
bench_token() {
  curl -fsS -H 'content-type: application/json' -d '{"username":"bench","password":"bench-password"}' "$1/api/v1/session" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))'
}
