# Sourced by the proxy benchmarks (bench/proxy.sh, bench/proxy-cpu.sh, bench/proxy-alloc.sh):
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

wait_for() { for _ in $(seq 1 200); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.05; done; echo "not answering: $1" >&2; exit 1; }

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
