#!/usr/bin/env bash
# The TTFT table with the shared remote tier as the slow tier: a cluster on
# loopback (scripts/setup/redis_cluster.sh); machine A computes the pool and
# publishes it; machine B, with an empty local store, runs every system with
# remote reads capped at REMOTE_BW (default 16M bytes/s, a network slower
# than loopback). B computes nothing and keeps nothing on its disk: the
# reordered copies of RO systems go to the cluster beside their originals.
# Writes OUT/ttft.md, OUT/ttft.json (scripts/repro/ttft_table.sh), OUT/cluster.json
# (what the cluster holds) and OUT/local_store.json (B's store: no data).
# Usage: scripts/bench/remote_ttft.sh OUT MODEL BUILD [BASE_PORT]
set -euo pipefail
out=$1; model=$2; build=$3; base=${4:-7500}
bw=${REMOTE_BW:-16M}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'bash "$here/../setup/redis_cluster.sh" stop "$base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
mkdir -p "$out"
url=$(TMPDIR=$tmp bash "$here/../setup/redis_cluster.sh" start "$base")
pool=(--task piqa --pool 4 --prefix-tokens 1024 --gpu-cache 8M --cpu-cache 16M)
"$build/impress" run --model "$model" "${pool[@]}" --requests 1 --warmup 0 --system as \
  --store "$tmp/a" --remote "$url" >"$tmp/publish.log"
bash "$here/../repro/ttft_table.sh" "$out/ttft" "$model" "$build" "$tmp/b" "${pool[@]}" --requests 12 --warmup 4 \
  --remote "$url" --remote-bw "$bw"
"$build/impress" store stats --store "$tmp/a" --remote "$url" --json >"$out/cluster.json"
"$build/impress" store stats --store "$tmp/b" --json >"$out/local_store.json"
