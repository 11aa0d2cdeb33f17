#!/usr/bin/env bash
# Start the trivial node backend (fixtures/backend.cjs at the top level: "ok", and /…/echo-headers) on 127.0.0.1.
# Usage: start-backend.sh <dir> [port=9000]
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-backend.sh <dir> [port]}
PORT=${2:-9000}
need node nodejs
need curl curl
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
PIDFILE="$DIR/backend.pid"
T0=$(date +%s%N)
# setsid: the pid leads its own process group, which stop-peer.sh signals.
setsid node "$FIXTURES/backend.cjs" "$PORT" 127.0.0.1 >"$DIR/backend.log" 2>&1 < /dev/null &
echo $! > "$PIDFILE"
for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break; sleep 0.05; done
curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null || { echo "backend did not start, see $DIR/backend.log" >&2; exit 1; }
echo "backend ready on http://127.0.0.1:$PORT in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
