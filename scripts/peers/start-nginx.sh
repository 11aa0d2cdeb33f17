#!/usr/bin/env bash
# Start a PRIVATE nginx (own config, not the Debian service) on 127.0.0.1 that proxies everything
# (incl. /ext/) to a backend, with upstream keep-alive.
# Usage: start-nginx.sh <dir> [port=8092] [backend=127.0.0.1:9000]
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-nginx.sh <dir> [port] [backend host:port]}
PORT=${2:-8092}
BACKEND=${3:-127.0.0.1:9000}
need nginx nginx
need curl curl
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
# Workers run as an unprivileged user when started as root: they must be able to traverse $DIR.
chmod 0755 "$DIR"
mkdir -p "$DIR"/{logs,tmp,run}
PIDFILE="$DIR/run/nginx.pid"
T0=$(date +%s%N)
cat > "$DIR/nginx.conf" <<CONF
worker_processes ${NGINX_WORKERS:-auto};
pid $PIDFILE;
error_log $DIR/logs/error.log warn;
$( [ "$(id -u)" = 0 ] && echo "user www-data;" )
events { worker_connections 4096; }
http {
  access_log ${NGINX_ACCESS_LOG:-off};
  client_body_temp_path $DIR/tmp/body;
  proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fastcgi;
  uwsgi_temp_path $DIR/tmp/uwsgi;
  scgi_temp_path $DIR/tmp/scgi;
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
}
CONF
"$NGINX" -t -q -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
for _ in $(seq 1 100); do [ -s "$PIDFILE" ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.05; done
[ -s "$PIDFILE" ] || { echo "nginx did not start, see $DIR/logs/error.log" >&2; exit 1; }
echo "nginx ready on http://127.0.0.1:$PORT -> $BACKEND in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
