#!/usr/bin/env bash
# Start a private, non-persistent Redis on 127.0.0.1 (never the Debian system service).
# Usage: start-redis.sh <dir> [port=6390]
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-redis.sh <dir> [port]}
PORT=${2:-6390}
need redis-server redis-server
need redis-cli redis-tools
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
PIDFILE="$DIR/redis.pid"
T0=$(date +%s%N)
# --save "" and --appendonly no: no persistence, not even on shutdown; daemonize writes the pid file.
redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no \
  --dir "$DIR" --daemonize yes --pidfile "$PIDFILE" --logfile "$DIR/redis.log" \
  --protected-mode yes --supervised no
for _ in $(seq 1 100); do
  redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG || { echo "redis did not start; see $DIR/redis.log" >&2; exit 1; }
for _ in $(seq 1 40); do [ -s "$PIDFILE" ] && break; sleep 0.05; done
echo "redis ready on 127.0.0.1:$PORT in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
