#!/usr/bin/env bash
# Start a private Redis Cluster on 127.0.0.1: three primaries and three replicas (one each),
# all 16384 slots assigned. No persistence of data; each node keeps its cluster config
# (nodes-<port>.conf) in <dir>, so a killed node that starts again rejoins as a replica.
# Usage: start-redis-cluster.sh <dir> <port>x6 <bus-port>x6
#        (the first three ports become the primaries; bus ports are the cluster bus's)
# Env: REDIS_PASSWORD (requirepass and masterauth of every node), NODE_TIMEOUT_MS (default 1000).
# Nodes: <dir>/<port>.pid, .log; redis-node.sh kills and restarts one.
# Prints: the supervisor's pid file as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/redis-nodes.sh"
DIR=${1:?usage: start-redis-cluster.sh <dir> <port>x6 <bus-port>x6}
shift
[ $# -eq 12 ] || { echo "start-redis-cluster.sh: six ports and six bus ports, got $# ports" >&2; exit 2; }
PORTS=("${@:1:6}")
BUS=("${@:7:6}")
PASS=${REDIS_PASSWORD:-}
NODE_TIMEOUT=${NODE_TIMEOUT_MS:-1000}
need redis-server redis-server
need redis-cli redis-tools
refuse_taken_port "${PORTS[@]}" "${BUS[@]}"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
PIDFILE="$DIR/supervisor.pid"
T0=$(date +%s%N)

auth=""
[ -n "$PASS" ] && auth=$(printf ' %q' --requirepass "$PASS" --masterauth "$PASS")
# One supervisor script runs every node; setsid makes it lead its own process group, which
# stop-peer.sh stops whole.
{
  echo ". '$HERE/redis-nodes.sh'"
  for i in 0 1 2 3 4 5; do
    p=${PORTS[$i]}
    echo "node_loop '$DIR' $p \$(node_args '$DIR' $p) --cluster-enabled yes --cluster-port ${BUS[$i]} --cluster-config-file nodes-$p.conf --cluster-node-timeout $NODE_TIMEOUT $auth &"
  done
  echo "wait"
} >"$DIR/supervise.sh"
setsid bash "$DIR/supervise.sh" </dev/null >/dev/null 2>&1 &
echo $! >"$PIDFILE"
for p in "${PORTS[@]}"; do wait_ping "$p" "$PASS"; done
nodes=()
for p in "${PORTS[@]}"; do nodes+=("127.0.0.1:$p"); done
# --cluster create makes the first three primaries and gives each one replica.
if ! rcli "$PASS" --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.out" 2>&1; then
  echo "redis-cli --cluster create failed; see $DIR/create.out" >&2; exit 1
fi
# Ready when every node says the cluster is ok and sees six nodes.
for p in "${PORTS[@]}"; do
  ok=
  for _ in $(seq 1 200); do
    info=$(rcli "$PASS" -p "$p" cluster info 2>/dev/null | tr -d '\r')
    if echo "$info" | grep -q '^cluster_state:ok$' && echo "$info" | grep -q '^cluster_known_nodes:6$'; then ok=1; break; fi
    sleep 0.05
  done
  [ -n "$ok" ] || { echo "redis cluster node 127.0.0.1:$p did not reach cluster_state:ok with 6 nodes within 10 s; see $DIR/$p.log" >&2; exit 1; }
done
for p in "${PORTS[@]:3:3}"; do wait_replica_synced "$p" "$PASS"; done
# Each primary also acknowledged a write through its replica (WAIT 1): a replicated write, the
# first logout's revocation, would otherwise fail until the replica's first ACK.
for p in "${PORTS[@]:0:3}"; do wait_replica_acks "$p" "$PASS"; done
echo "redis cluster ready (primaries ${PORTS[*]:0:3}, replicas ${PORTS[*]:3:3}) in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
