#!/usr/bin/env bash
# Kill or restart one node of a topology started by start-redis-sentinel.sh or
# start-redis-cluster.sh (its supervisor restarts a node only while no hold file is there).
# Usage: redis-node.sh kill <dir> <port>    SIGKILL, and keep it down
#        redis-node.sh start <dir> <port>   let it start again (empty), and wait for PING
# Env: REDIS_PASSWORD for the PING after start.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/redis-nodes.sh"
ACTION=${1:?usage: redis-node.sh kill|start <dir> <port>}
DIR=${2:?dir}; PORT=${3:?port}
case "$ACTION" in
  kill)
    touch "$DIR/$PORT.hold"
    PID=$(tr -dc '0-9' <"$DIR/$PORT.pid")
    kill -KILL "$PID"
    while kill -0 "$PID" 2>/dev/null && ! ps -o stat= -p "$PID" | grep -q '^Z'; do sleep 0.02; done
    rm -f "$DIR/$PORT.pid"
    ;;
  start)
    rm -f "$DIR/$PORT.hold"
    wait_ping "$PORT" "${REDIS_PASSWORD:-}"
    ;;
  *) echo "redis-node.sh: unknown action '$ACTION' (kill or start)" >&2; exit 2 ;;
esac
