#!/usr/bin/env bash
# Start a private Redis Sentinel topology on 127.0.0.1: one primary, one replica, three
# sentinels monitoring them under one master name. No persistence.
# Usage: start-redis-sentinel.sh <dir> <primary-port> <replica-port> <sentinel-port> <sentinel-port> <sentinel-port>
# Env (passwords without double quotes or backslashes): MASTER_NAME (default svc), REDIS_PASSWORD (nodes' requirepass and masterauth),
#      SENTINEL_PASSWORD (the sentinels' own requirepass), DOWN_AFTER_MS (default 1000),
#      FAILOVER_TIMEOUT_MS (default 3000).
# Nodes: <dir>/<port>.pid, .log; redis-node.sh kills and restarts one.
# Prints: the supervisor's pid file as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/redis-nodes.sh"
DIR=${1:?usage: start-redis-sentinel.sh <dir> <primary> <replica> <s1> <s2> <s3>}
PRIMARY=${2:?primary port}; REPLICA=${3:?replica port}
SENTINELS=("${4:?sentinel port}" "${5:?sentinel port}" "${6:?sentinel port}")
NAME=${MASTER_NAME:-svc}
PASS=${REDIS_PASSWORD:-}
SPASS=${SENTINEL_PASSWORD:-}
DOWN_AFTER=${DOWN_AFTER_MS:-1000}
# failover-timeout bounds a promotion and an election, and a sentinel that tried a failover tries
# the next only twice that long later; it also sets when a replica of a wrong primary is
# corrected. Redis's default, 180 s, and the 10 s used before left a failed election or an aborted
# promotion on a loaded machine waiting 20 s for the next try, past the tests' waits. 3 s leaves
# a promotion (SLAVEOF NO ONE, then the next INFO, every second during a failover) room under load.
FAILOVER_TIMEOUT=${FAILOVER_TIMEOUT_MS:-3000}
# A sentinel that has just started counts its first PING from the moment it opened the link: on
# a loaded machine all three marked the primary down 1 s after their start, for 70 ms, and once
# failed it over before the first test ran (its first logout then found a primary without a
# replica). So they start with a long down-after and get DOWN_AFTER once each has seen the
# primary answer.
START_DOWN_AFTER=60000
need redis-server redis-server
need redis-cli redis-tools
refuse_taken_port "$PRIMARY" "$REPLICA" "${SENTINELS[@]}"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
PIDFILE="$DIR/supervisor.pid"
T0=$(date +%s%N)

auth=()
[ -n "$PASS" ] && auth=(--requirepass "$PASS" --masterauth "$PASS")
# A sentinel rewrites its own config file, so each gets one. Each is told its own id, the
# replica and the other sentinels up front: found by discovery, that takes about 10 s.
myid() { printf '%040x' "$1"; }
for s in "${SENTINELS[@]}"; do
  {
    echo "sentinel myid $(myid "$s")"
    echo "port $s"
    echo "bind 127.0.0.1"
    echo "dir $DIR"
    echo "pidfile $DIR/$s.pid"
    echo "logfile $DIR/$s.log"
    echo "sentinel monitor $NAME 127.0.0.1 $PRIMARY 2"
    echo "sentinel down-after-milliseconds $NAME $START_DOWN_AFTER"
    echo "sentinel failover-timeout $NAME $FAILOVER_TIMEOUT"
    echo "sentinel parallel-syncs $NAME 1"
    echo "sentinel known-replica $NAME 127.0.0.1 $REPLICA"
    for o in "${SENTINELS[@]}"; do [ "$o" = "$s" ] || echo "sentinel known-sentinel $NAME 127.0.0.1 $o $(myid "$o")"; done
    [ -n "$PASS" ] && echo "sentinel auth-pass $NAME \"$PASS\""
    if [ -n "$SPASS" ]; then echo "requirepass \"$SPASS\""; echo "sentinel sentinel-pass \"$SPASS\""; fi
  } >"$DIR/sentinel-$s.conf"
done

# One supervisor script runs every node; setsid makes it lead its own process group, which
# stop-peer.sh stops whole.
AUTH_ARGS=$( (( ${#auth[@]} )) && printf ' %q' "${auth[@]}" || true)
{
  echo ". '$HERE/redis-nodes.sh'"
  echo "node_loop '$DIR' $PRIMARY \$(node_args '$DIR' $PRIMARY) $AUTH_ARGS &"
  echo "node_loop '$DIR' $REPLICA \$(node_args '$DIR' $REPLICA) --replicaof 127.0.0.1 $PRIMARY $AUTH_ARGS &"
  for s in "${SENTINELS[@]}"; do echo "node_loop '$DIR' $s '$DIR/sentinel-$s.conf' --sentinel &"; done
  echo "wait"
} >"$DIR/supervise.sh"
setsid bash "$DIR/supervise.sh" </dev/null >/dev/null 2>&1 &
echo $! >"$PIDFILE"
wait_ping "$PRIMARY" "$PASS"; wait_ping "$REPLICA" "$PASS"
wait_replica_synced "$REPLICA" "$PASS"
wait_replica_acks "$PRIMARY" "$PASS"
for s in "${SENTINELS[@]}"; do wait_ping "$s" "$SPASS"; done
# Ready when every sentinel knows the replica and the other two sentinels, and has the primary
# answering its PINGs (not down, last reply within a second).
for s in "${SENTINELS[@]}"; do
  ok=
  for _ in $(seq 1 200); do
    info=$(rcli "$SPASS" -p "$s" sentinel master "$NAME" 2>/dev/null | paste - - | tr '\t' ' ')
    if echo "$info" | grep -q '^num-slaves 1$' && echo "$info" | grep -q '^num-other-sentinels 2$' \
      && echo "$info" | grep -q '^flags master$' && echo "$info" | grep -Eq '^last-ok-ping-reply [0-9]{1,3}$'; then ok=1; break; fi
    sleep 0.05
  done
  [ -n "$ok" ] || { echo "sentinel on 127.0.0.1:$s did not see the primary answer, the replica and the other sentinels within 10 s; see $DIR/$s.log" >&2; exit 1; }
done
for s in "${SENTINELS[@]}"; do
  [ "$(rcli "$SPASS" -p "$s" sentinel set "$NAME" down-after-milliseconds "$DOWN_AFTER" 2>&1)" = OK ] \
    || { echo "sentinel on 127.0.0.1:$s refused down-after-milliseconds $DOWN_AFTER; see $DIR/$s.log" >&2; exit 1; }
done
echo "redis sentinel ready (primary $PRIMARY, replica $REPLICA, sentinels ${SENTINELS[*]}, master '$NAME') in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
