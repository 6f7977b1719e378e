#!/usr/bin/env bash
# A Redis Cluster of three masters and three replicas on loopback, for the
# remote tier (docs/remote.md): Debian's redis-server, created with
# `redis-cli --cluster create`.
#
#   scripts/setup/redis_cluster.sh start [BASE_PORT]   ports BASE..BASE+5 (default 7100)
#   scripts/setup/redis_cluster.sh stop  [BASE_PORT]
#   scripts/setup/redis_cluster.sh pid PORT            the server process on PORT
#
# Environment: MAXMEMORY (per server, e.g. 4mb; default none) and
# MAXMEMORY_POLICY (default allkeys-lru) bound each server's memory;
# NODE_TIMEOUT_MS (default 1000) is how long a master may be silent before its
# replica takes over. Data lives in ${TMPDIR:-/tmp}/impress-redis-BASE and is
# not persisted. Prints the cluster's address for --remote on start.
set -euo pipefail

action=${1:-}
base=${2:-7100}
dir="${TMPDIR:-/tmp}/impress-redis-$base"
ports=($(seq "$base" $((base + 5))))

need() { command -v "$1" >/dev/null || { echo "redis_cluster: $1 not found (make setup installs Redis)" >&2; exit 1; }; }

case "$action" in
  start)
    need redis-server; need redis-cli
    mkdir -p "$dir"
    for p in "${ports[@]}"; do
      if redis-cli -p "$p" ping >/dev/null 2>&1; then
        echo "redis_cluster: port $p is already serving (stop it first: $0 stop $base)" >&2; exit 1
      fi
      mkdir -p "$dir/$p"; rm -f "$dir/$p/nodes.conf"
      args=(--port "$p" --bind 127.0.0.1 --protected-mode yes --daemonize yes --dir "$dir/$p"
            --logfile "$dir/$p/log" --pidfile "$dir/$p/pid" --save "" --appendonly no
            --cluster-enabled yes --cluster-config-file nodes.conf
            --cluster-node-timeout "${NODE_TIMEOUT_MS:-1000}" --cluster-require-full-coverage no)
      [ -n "${MAXMEMORY:-}" ] && args+=(--maxmemory "$MAXMEMORY" --maxmemory-policy "${MAXMEMORY_POLICY:-allkeys-lru}")
      redis-server "${args[@]}"
    done
    for p in "${ports[@]}"; do
      for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.05; done
    done
    redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") --cluster-replicas 1 --cluster-yes >"$dir/create.log"
    for p in "${ports[@]}"; do  # every node agrees the cluster is up
      for i in $(seq 200); do
        redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' && break
        [ "$i" -eq 200 ] && { echo "redis_cluster: node $p never reported cluster_state:ok" >&2; exit 1; }
        sleep 0.05
      done
    done
    echo "redis://$(printf '127.0.0.1:%s,' "${ports[@]:0:3}" | sed 's/,$//')"
    ;;
  stop)
    for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    rm -rf "$dir"
    ;;
  pid)
    redis-cli -p "$base" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p'
    ;;
  *)
    echo "usage: $0 start|stop [BASE_PORT] | pid PORT" >&2; exit 2
    ;;
esac
