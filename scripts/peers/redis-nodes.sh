# Shared by start-redis-sentinel.sh and start-redis-cluster.sh (sourced, not run).
# Every node of a topology runs under one supervisor (the peer's process group, which
# stop-peer.sh stops as a whole); a node stopped by redis-node.sh kill stays down until
# redis-node.sh start, so a test decides when a killed primary comes back (a primary without
# persistence that came back before the failover would come back empty, as a primary).

# node_loop <dir> <name> <redis-server args...>: (re)start one node while no hold file is there.
node_loop() {
  local dir=$1 name=$2; shift 2
  while :; do
    if [ -e "$dir/$name.hold" ]; then sleep 0.05; continue; fi
    redis-server "$@" >>"$dir/$name.out" 2>&1 || true
    sleep 0.05
  done
}

# rcli <password> <redis-cli args...>: redis-cli with AUTH only when a password is given.
rcli() {
  local pass=$1; shift
  if [ -n "$pass" ]; then REDISCLI_AUTH="$pass" redis-cli "$@"; else redis-cli "$@"; fi
}

# wait_ping <port> [password]: until the node answers PING (5 s).
wait_ping() {
  local port=$1 pass=${2:-}
  for _ in $(seq 1 100); do
    rcli "$pass" -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  echo "redis node 127.0.0.1:$port did not answer PING; see its log in the peer dir" >&2
  return 1
}

# wait_replica_synced <port> [password]: until the replica's link to its primary is up (10 s).
wait_replica_synced() {
  local port=$1 pass=${2:-}
  for _ in $(seq 1 200); do
    rcli "$pass" -p "$port" info replication 2>/dev/null | grep -q 'master_link_status:up' && return 0
    sleep 0.05
  done
  echo "redis replica 127.0.0.1:$port did not sync with its primary within 10 s; see its log in the peer dir" >&2
  return 1
}

# wait_replica_acks <primary-port> [password]: until the primary lists a replica online and a
# write on it is acknowledged by one (WAIT 1), 10 s. A replica's link being up
# (master_link_status:up, wait_replica_synced) is not enough: after a diskless full sync the
# primary streams nothing to the replica until it has the replica's first REPLCONF ACK, and a
# write meanwhile is not acknowledged, so the first write that waits for a replica (a logout's
# revocation) failed under load. The probe key is deleted in the same write stream. On a
# Cluster primary the probe takes the first of a few keys whose slot the node serves (another
# answers MOVED and writes nothing, and a WAIT after no write counts every online replica).
wait_replica_acks() {
  local port=$1 pass=${2:-} i replies
  for _ in $(seq 1 200); do
    if rcli "$pass" -h 127.0.0.1 -p "$port" info replication 2>/dev/null | grep -q '^slave[0-9]*:.*state=online'; then
      for i in $(seq 0 31); do
        replies=$(printf 'SET peer:replication-probe:%s 1\nDEL peer:replication-probe:%s\nWAIT 1 100\n' "$i" "$i" | rcli "$pass" -h 127.0.0.1 -p "$port" 2>/dev/null | tr -d '\r')
        [ "$(echo "$replies" | head -n 1)" = OK ] || continue
        [ "$(echo "$replies" | tail -n 1)" = 1 ] && return 0
        break
      done
    fi
    sleep 0.05
  done
  echo "no replica of 127.0.0.1:$port acknowledged a write within 10 s; see the logs in the peer dir" >&2
  return 1
}

# Common server arguments: loopback, no persistence of data, a full sync that starts at once
# (the default waits 5 s for more replicas; a primary killed meanwhile could not fail over).
node_args() {
  local dir=$1 port=$2
  echo --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" \
    --pidfile "$dir/$port.pid" --logfile "$dir/$port.log" --protected-mode yes --daemonize no \
    --repl-diskless-sync yes --repl-diskless-sync-delay 0
}
