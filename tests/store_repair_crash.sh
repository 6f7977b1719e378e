#!/usr/bin/env bash
# Repair is crash-safe: a damaged store of 1920 chunk layers is repaired
# once to completion (the reference kept set); then, trial after trial, a
# fresh copy of the damaged store is repaired and the repair is killed with
# SIGKILL after a seeded random delay spread over its running time (from
# the end of the executable's start-up, measured, to 90% of the shortest
# repair seen so far: a repair that finishes before its kill shortens the
# window, so a machine whose load falls does not waste the trials);
# repairing that copy again keeps exactly the reference's chunk ids, and
# `store verify` passes. Trials go on until KILLS repairs were killed
# mid-way (at most 4 x KILLS trials).
# Usage: store_repair_crash.sh IMPRESS_BINARY MODEL_DIR DATA_DIR [KILLS]
set -euo pipefail
bin=$1; model=$2; data=$3; kills=${4:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
ids() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['kept_chunk_ids'])" "$1"; }

# 8 COPA prefixes of 512 stored tokens (8 chunks each): 1920 chunk layers.
"$bin" run --model "$model" --data "$data" --task copa --system as --pool 8 --prefix-tokens 600 --chunk 64 \
  --requests 8 --warmup 0 --spread 1 --gpu-cache 1M --cpu-cache 2M --store "$tmp/clean" >/dev/null
# Damage: a byte flipped in the third chunk of every other prefix, and one in the third log record.
python3 - "$tmp/clean" "$0" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[2]))
from store_files import chunk_offset, flip, records
st = sys.argv[1]
recs = records(st)
for _, rec in recs[::2]:
    ids = sorted({c["id"] for c in rec["chunks"]})
    flip(f"{st}/chunks.dat", chunk_offset(rec, ids[2], 5) + 64)
flip(f"{st}/log", recs[3][0] + 12 + 30)
PY
start=$(date +%s%N)
"$bin" --help >/dev/null
startup=$(( $(date +%s%N) - start ))
cp -r "$tmp/clean" "$tmp/ref"
start=$(date +%s%N)
"$bin" store repair --store "$tmp/ref" --json >"$tmp/ref.json"
ns=$(( $(date +%s%N) - start ))
want=$(ids "$tmp/ref.json")
echo "store_repair_crash: reference repair in $((ns / 1000000)) ms (start-up $((startup / 1000000)) ms) keeps $(python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(d['chunks_kept'], 'of', d['chunks_intact'], 'intact chunks,', d['chunk_layers_damaged'], 'damaged chunk layers')" "$tmp/ref.json")"

killed=0; finished=0; t=0; window=$((ns * 9 / 10))
while [ "$killed" -lt "$kills" ] && [ "$t" -lt $((4 * kills)) ]; do
  t=$((t + 1))
  rm -rf "$tmp/t"; cp -r "$tmp/clean" "$tmp/t"
  delay=$(python3 -c "import random,sys;random.seed(int(sys.argv[1]));a,b=int(sys.argv[2]),int(sys.argv[3]);print('%.4f' % ((a+random.random()*max(b-a,0))/1e9))" "$t" "$startup" "$window")
  start=$(date +%s%N)
  "$bin" store repair --store "$tmp/t" --json >/dev/null 2>&1 & pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  rc=0; { wait "$pid"; } 2>/dev/null || rc=$?
  if [ "$rc" -eq 137 ]; then
    killed=$((killed + 1))
  else
    finished=$((finished + 1))
    window=$(python3 -c "import sys;print(min(int(sys.argv[1]), int(0.9*int(sys.argv[2]))))" "$window" "$(( $(date +%s%N) - start ))")
  fi
  "$bin" store repair --store "$tmp/t" --json >"$tmp/again.json" || { echo "FAIL: trial $t: repair after the kill failed"; exit 1; }
  [ "$(ids "$tmp/again.json")" = "$want" ] || { echo "FAIL: trial $t (killed after ${delay}s): another kept set"; exit 1; }
  "$bin" store verify --store "$tmp/t" >/dev/null || { echo "FAIL: trial $t: verify after repair"; exit 1; }
done
echo "store_repair_crash: $killed repairs killed mid-way in $t trials ($finished finished first); every one repaired again to the same kept set"
[ "$killed" -ge "$kills" ] || { echo "FAIL: only $killed of $t repairs were killed mid-way"; exit 1; }
