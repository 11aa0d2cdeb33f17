#!/usr/bin/env bash
# Start a PRIVATE nginx (own config, not the Debian service) on 127.0.0.1 that proxies everything
# (incl. /ext/) to a backend, with upstream keep-alive. The private instance's settings (pid,
# logs, temp paths) are nginx-private.sh's; NGINX_WORKERS and NGINX_ACCESS_LOG tune it for benches.
# Usage: start-nginx.sh <dir> [port=8092] [backend=127.0.0.1:9000]
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/nginx-private.sh"
DIR=${1:?usage: start-nginx.sh <dir> [port] [backend host:port]}
PORT=${2:-8092}
BACKEND=${3:-127.0.0.1:9000}
nginx_prepare "$DIR" "$PORT"
nginx_write_conf "${NGINX_WORKERS:-auto}" 4096 "${NGINX_ACCESS_LOG:-off}" <<CONF
  keepalive_requests 100000;
  upstream backend {
    server $BACKEND;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$PORT;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    }
  }
CONF
nginx_start_and_wait "http://127.0.0.1:$PORT/"
echo "nginx ready on http://127.0.0.1:$PORT -> $BACKEND in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
