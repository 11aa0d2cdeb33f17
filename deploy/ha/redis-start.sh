#!/bin/sh
# Starts one pod's Redis or Sentinel for deploy/ha. It is the containers' command, so it runs at
# every container start (an OOM kill, a failed liveness probe), not once per pod: a config
# written once at pod start made a killed primary come back as a primary within the Sentinels'
# down-after time, and its replicas then copied its old or empty data (issue 52).
#
# Usage: redis-start.sh redis|sentinel [more redis-server arguments...]
#
# redis: asks every Sentinel which node is the primary, then
#   - another node is named: start as its replica (this node's own data is replaced by its);
#   - this node is named and a Sentinel knows a replica of it: this node was the primary and
#     died before the Sentinels noticed. Its replicas hold what it acknowledged (svc waits for a
#     replica on the writes that matter; the AOF here may lack the last second), so it asks a
#     Sentinel for a failover and starts as a replica of the node promoted;
#   - this node is named and no Sentinel knows a replica of it: the first start of the set;
#     start as the primary;
#   - no Sentinel answers: start as the primary only on the first start of the set (this is
#     the first node and its data dir has never held data); otherwise wait and ask again.
#   Fail closed: a node that has held data never makes itself the primary. If no replica can
#   be promoted it waits; an operator who accepts this node's data as the newest creates
#   $DATA_DIR/start-as-primary (docs/operations.md).
# sentinel: keeps the config the Sentinel rewrote (its id, the current primary and epoch, the
#   replicas and Sentinels it knows) across restarts, refreshing only the lines set here; a
#   first start monitors the primary the other Sentinels name, or the first node.
#
# Env: REDIS_PASSWORD (required; the nodes' and the Sentinels' password).
# Defaults fit the StatefulSet svc-redis-ha-server behind the headless Service svc-redis-ha;
# the tests set them to loopback ports: REDIS_NODES, REDIS_SENTINELS (host:port lists, the
# first node is the primary of a first start), SELF_NODE, SELF_SENTINEL, DATA_DIR (/data),
# MASTER_NAME (svc), DOWN_AFTER_MS (5000), FAILOVER_TIMEOUT_MS (60000), MAXMEMORY (150mb).
set -eu

MODE=${1:?usage: redis-start.sh redis|sentinel [redis-server arguments...]}
shift
: "${REDIS_PASSWORD:?REDIS_PASSWORD is not set}"
SERVICE=svc-redis-ha
SET=svc-redis-ha-server
NODES=${REDIS_NODES:-"$SET-0.$SERVICE:6379 $SET-1.$SERVICE:6379 $SET-2.$SERVICE:6379"}
SENTINELS=${REDIS_SENTINELS:-"$SET-0.$SERVICE:26379 $SET-1.$SERVICE:26379 $SET-2.$SERVICE:26379"}
SELF=${SELF_NODE:-"${HOSTNAME:?}.$SERVICE:6379"}
SELF_SENTINEL=${SELF_SENTINEL:-"${HOSTNAME:?}.$SERVICE:26379"}
DATA=${DATA_DIR:-/data}
MASTER=${MASTER_NAME:-svc}
DOWN_AFTER=${DOWN_AFTER_MS:-5000}
FAILOVER_TIMEOUT=${FAILOVER_TIMEOUT_MS:-60000}
# Below the container's 256Mi limit with room for the AOF rewrite's fork: a full Redis refuses
# writes (noeviction) instead of being OOM-killed and reloading the same data again.
MAXMEMORY=${MAXMEMORY:-150mb}
BOOTSTRAP=${NODES%% *}

host_of() { echo "${1%:*}"; }
port_of() { echo "${1##*:}"; }

LAST_SAID=""
say() {
  [ "$1" = "$LAST_SAID" ] && return 0
  LAST_SAID=$1
  echo "redis-start: $1" >&2
}

# ask <host:port> <command...>: one Sentinel's answer, empty when it does not answer in 2 s.
ask() {
  addr=$1
  shift
  REDISCLI_AUTH="$REDIS_PASSWORD" timeout 2 redis-cli -h "$(host_of "$addr")" -p "$(port_of "$addr")" "$@" 2>/dev/null || true
}

# named_by <sentinel>: host:port of the primary it names, or nothing.
named_by() {
  # shellcheck disable=SC2046 # two words: host and port
  set -- $(ask "$1" sentinel get-master-addr-by-name "$MASTER")
  [ $# -eq 2 ] && echo "$1:$2"
  return 0
}

# known_replicas <sentinel>: how many replicas of the primary it has ever seen (0 if unknown).
known_replicas() {
  n=$(ask "$1" sentinel master "$MASTER" | awk 'prev == "num-slaves" { print; exit } { prev = $0 }')
  case $n in '' | *[!0-9]*) echo 0 ;; *) echo "$n" ;; esac
}

write_redis_conf() {
  umask 077
  mkdir -p "$DATA/conf"
  {
    echo "port $(port_of "$SELF")"
    echo "dir $DATA"
    # svc's lockouts, revocations and the revocations-epoch marker survive a restart: AOF,
    # written to disk every second, on the pod's own volume.
    echo "appendonly yes"
    echo "appendfsync everysec"
    echo "save \"\""
    # svc's markers must never be evicted to make room.
    echo "maxmemory $MAXMEMORY"
    echo "maxmemory-policy noeviction"
    echo "requirepass \"$REDIS_PASSWORD\""
    echo "masterauth \"$REDIS_PASSWORD\""
    echo "replica-announce-ip $(host_of "$SELF")"
    [ -z "$1" ] || echo "replicaof $(host_of "$1") $(port_of "$1")"
  } >"$DATA/conf/redis.conf.new"
  mv "$DATA/conf/redis.conf.new" "$DATA/conf/redis.conf"
}

# start_redis <primary or empty> <why> [more arguments]
start_redis() {
  primary=$1
  say "$2"
  shift 2
  write_redis_conf "$primary"
  exec redis-server "$DATA/conf/redis.conf" "$@"
}

run_redis() {
  while :; do
    other=""
    answered=0
    replicas=0
    for s in $SENTINELS; do
      named=$(named_by "$s")
      [ -n "$named" ] || continue
      answered=$((answered + 1))
      if [ "$named" != "$SELF" ]; then
        other=$named
      elif [ "$(known_replicas "$s")" -gt 0 ]; then
        replicas=1
      fi
    done
    if [ -n "$other" ]; then
      start_redis "$other" "starting as a replica of $other, the primary the Sentinels name" "$@"
    fi
    if [ -e "$DATA/start-as-primary" ]; then
      rm -f "$DATA/start-as-primary"
      start_redis "" "starting as the primary with this node's own data: $DATA/start-as-primary was there" "$@"
    fi
    if [ "$answered" -eq 0 ]; then
      if [ "$SELF" = "$BOOTSTRAP" ] && [ ! -e "$DATA/appendonlydir" ]; then
        start_redis "" "no Sentinel answers and this node's data dir is empty: the first start of the set, starting as its primary" "$@"
      fi
      say "no Sentinel answers; waiting (a node that has held data never makes itself the primary)"
    elif [ "$replicas" -eq 0 ]; then
      start_redis "" "the Sentinels name this node and know no replica of it: the first start of the set, starting as its primary" "$@"
    else
      for s in $SENTINELS; do
        answer=$(ask "$s" sentinel failover "$MASTER")
        [ -n "$answer" ] && break
      done
      say "the Sentinels still name this node, which was down, as the primary: asked for a failover to a replica (answer: ${answer:-none}); waiting for it"
    fi
    sleep 1
  done
}

# The lines run_sentinel sets at every start; the rest of a rewritten config is the Sentinel's.
OWN_LINES='^(port|dir|bind|requirepass|user|sentinel (resolve-hostnames|announce-hostnames|announce-ip|auth-pass|sentinel-pass|down-after-milliseconds|failover-timeout|parallel-syncs)) '

run_sentinel() {
  umask 077
  mkdir -p "$DATA/conf"
  conf=$DATA/conf/sentinel.conf
  {
    # Read before the monitor line: a host name there needs resolve-hostnames.
    echo "sentinel resolve-hostnames yes"
    echo "sentinel announce-hostnames yes"
    echo "sentinel announce-ip $(host_of "$SELF_SENTINEL")"
    echo "port $(port_of "$SELF_SENTINEL")"
    echo "dir $DATA"
    echo "requirepass \"$REDIS_PASSWORD\""
    echo "sentinel sentinel-pass \"$REDIS_PASSWORD\""
    if [ -s "$conf" ]; then
      grep -v -E "$OWN_LINES" "$conf" || true
    else
      primary=""
      for s in $SENTINELS; do
        [ "$s" = "$SELF_SENTINEL" ] && continue
        primary=$(named_by "$s")
        [ -n "$primary" ] && break
      done
      primary=${primary:-$BOOTSTRAP}
      echo "sentinel monitor $MASTER $(host_of "$primary") $(port_of "$primary") 2"
    fi
    echo "sentinel auth-pass $MASTER \"$REDIS_PASSWORD\""
    echo "sentinel down-after-milliseconds $MASTER $DOWN_AFTER"
    echo "sentinel failover-timeout $MASTER $FAILOVER_TIMEOUT"
    echo "sentinel parallel-syncs $MASTER 1"
  } >"$conf.new"
  mv "$conf.new" "$conf"
  exec redis-server "$conf" --sentinel "$@"
}

case $MODE in
  redis) run_redis "$@" ;;
  sentinel) run_sentinel "$@" ;;
  *) echo "redis-start.sh: unknown mode '$MODE' (redis or sentinel)" >&2; exit 2 ;;
esac
