# Sourced by the proxy benchmarks (bench/proxy.sh, bench/proxy-cpu.sh): what they share.
# Needs ROOT (the repository) set by the caller.

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# write_bench_config DIR BACKEND_PORT: a config dir with one extension `bench` on the backend and
# a local account `bench` (password bench-password) whose right comes from a policy rule.
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
---
apiVersion: v1
kind: ConfigMap
metadata: { name: svc-rbac-cm }
data:
  policy.csv: |
    p, role:bench, extensions, *, */bench, allow
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
