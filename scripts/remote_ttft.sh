#!/usr/bin/env bash
# The TTFT table with the shared remote tier as the slow tier: a cluster on
# loopback (scripts/redis_cluster.sh); machine A computes the pool and
# publishes it; machine B, with an empty local store, runs every system with
# remote reads capped at REMOTE_BW (default 64M bytes/s, a network slower
# than loopback). B's local disk is capped the same: the reordered copies
# RO systems write there cost what the network would.
# Writes OUT/ttft.md, OUT/ttft.json (scripts/ttft_table.sh) and OUT/cluster.json.
# Usage: scripts/remote_ttft.sh OUT MODEL BUILD [BASE_PORT]
set -euo pipefail
out=$1; model=$2; build=$3; base=${4:-7500}
bw=${REMOTE_BW:-64M}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'bash "$here/redis_cluster.sh" stop "$base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
mkdir -p "$out"
url=$(TMPDIR=$tmp bash "$here/redis_cluster.sh" start "$base")
pool=(--task piqa --pool 4 --prefix-tokens 1024 --gpu-cache 8M --cpu-cache 16M)
"$build/impress" run --model "$model" "${pool[@]}" --requests 1 --warmup 0 --system as \
  --store "$tmp/a" --remote "$url" >"$tmp/publish.log"
bash "$here/ttft_table.sh" "$out/ttft" "$model" "$build" "$tmp/b" "${pool[@]}" --requests 12 --warmup 4 \
  --remote "$url" --remote-bw "$bw" --disk-bw "$bw"
"$build/impress" store stats --store "$tmp/a" --remote "$url" --json >"$out/cluster.json"
