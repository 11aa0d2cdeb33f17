#!/usr/bin/env bash
# Start a PRIVATE nginx (own config, not the Debian service) around a site file: an http-context
# snippet as an operator would drop into /etc/nginx/conf.d/ (docs/operations.md's example), its
# own listen line included. This script adds only what a private instance needs (pid, logs,
# temp paths). Waits until https://127.0.0.1:<port>/ answers.
# Usage: start-nginx-site.sh <dir> <port> <site.conf>
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
PORT=${2:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
SITE=${3:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
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
worker_processes 1;
pid $PIDFILE;
error_log $DIR/logs/error.log warn;
$( [ "$(id -u)" = 0 ] && echo "user www-data;" )
events { worker_connections 1024; }
http {
  access_log $DIR/logs/access.log;
  client_body_temp_path $DIR/tmp/body;
  proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fastcgi;
  uwsgi_temp_path $DIR/tmp/uwsgi;
  scgi_temp_path $DIR/tmp/scgi;
  include $SITE;
}
CONF
"$NGINX" -t -q -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
for _ in $(seq 1 100); do [ -s "$PIDFILE" ] && curl -sk -o /dev/null "https://127.0.0.1:$PORT/healthz" && break; sleep 0.05; done
[ -s "$PIDFILE" ] || { echo "nginx did not start, see $DIR/logs/error.log" >&2; exit 1; }
echo "nginx ready on https://127.0.0.1:$PORT with $SITE in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
