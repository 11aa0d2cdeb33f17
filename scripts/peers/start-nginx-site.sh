#!/usr/bin/env bash
# Start a PRIVATE nginx (own config, not the Debian service) around a site file: an http-context
# snippet as an operator would drop into /etc/nginx/conf.d/ (docs/operations.md's example), its
# own listen line included. This script adds only what a private instance needs (pid, logs,
# temp paths: nginx-private.sh). Waits until https://127.0.0.1:<port>/ answers.
# Usage: start-nginx-site.sh <dir> <port> <site.conf>
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/nginx-private.sh"
DIR=${1:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
PORT=${2:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
SITE=${3:?usage: start-nginx-site.sh <dir> <port> <site.conf>}
nginx_prepare "$DIR" "$PORT"
nginx_write_conf 1 1024 "$DIR/logs/access.log" <<CONF
  include $SITE;
CONF
# -k: the site's certificate is the operator's (a test CA here), not one curl trusts.
nginx_start_and_wait "https://127.0.0.1:$PORT/healthz" -k
echo "nginx ready on https://127.0.0.1:$PORT with $SITE in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
