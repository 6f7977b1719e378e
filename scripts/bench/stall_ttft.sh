#!/usr/bin/env bash
# Requests that hit local chunks do not wait on the network: `impress` on a
# PIQA store that holds every prefix locally, with the shared remote tier
# behind it and reorder passes publishing their copies to the cluster every
# 4 requests, run twice on copies of the same store: calm, and with the
# cluster's masters stalled in turn (`CLIENT PAUSE 3000 ALL`: the master
# answers no client for 3 s; one master at a time, back to back for the whole
# run; DEBUG SLEEP is refused by Debian's Redis 7 unless enable-debug-command
# is set, and redis-cli exits 0 on the refusal). Prints the measured requests' TTFT mean,
# p50 and p99 of both and writes OUT/calm.json and OUT/stalled.json.
# Usage: scripts/bench/stall_ttft.sh OUT MODEL BUILD [BASE_PORT]
set -euo pipefail
out=$1; model=$2; build=$3; base=${4:-7600}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'bash "$here/../setup/redis_cluster.sh" stop "$base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
mkdir -p "$out"
# Masters silent for 3 s stay masters (no failover): the stall is a stall.
url=$(TMPDIR=$tmp NODE_TIMEOUT_MS=15000 bash "$here/../setup/redis_cluster.sh" start "$base")
pool=(--model "$model" --task piqa --pool 4 --prefix-tokens 1024 --gpu-cache 8M --cpu-cache 16M --remote "$url")
"$build/impress" run "${pool[@]}" --requests 1 --warmup 0 --system as --store "$tmp/filled" >"$tmp/fill.log" 2>&1
measure() {  # NAME
  cp -r "$tmp/filled" "$tmp/$1"
  rm -f "$tmp/$1/LOCK"
  "$build/impress" run "${pool[@]}" --system impress --requests 48 --warmup 4 --reorder-every 4 \
    --store "$tmp/$1" --json "$out/$1.json" >"$out/$1.log" 2>&1
}
measure calm
measure stalled &
runner=$!
stalls=0
sleep 5  # the model loads; then the masters stall in turn until the run ends
while kill -0 "$runner" 2>/dev/null; do
  for p in $base $((base + 1)) $((base + 2)); do
    kill -0 "$runner" 2>/dev/null || break
    [ "$(redis-cli -p "$p" client pause 3000 all 2>&1)" = OK ] && stalls=$((stalls + 1))
    sleep 3
  done
done
wait "$runner"
python3 - "$out/calm.json" "$out/stalled.json" "$stalls" <<'PY'
import json, sys
for name, path in (("calm", sys.argv[1]), ("stalled", sys.argv[2])):
    r = json.load(open(path))["runs"][0]
    t = r["ttft_ms"]
    print("%-8s requests %d  TTFT mean %.1f ms  p50 %.1f  p99 %.1f  disk MB %.1f  remote MB %.1f  recomputed %d"
          % (name, r["requests"], t["mean"], t["p50"], t["p99"], r["bytes_read"]["disk"] / 1e6,
             r["bytes_read"]["remote"] / 1e6, r["recomputed_after_error"]))
print("3-second master stalls during the stalled run: %s" % sys.argv[3])
PY
