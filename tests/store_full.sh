#!/usr/bin/env bash
# A store whose disk fills up: `impress run` ends with one line naming the
# file and the problem and exit code 1, every prefix stored before is still
# there and passes verify, and the store takes writes again once there is room.
# The full disk is a file-size limit (ulimit -f: writes fail with EFBIG), and,
# where this user may mount one, also a real full tmpfs (ENOSPC).
# Usage: store_full.sh IMPRESS_BINARY FIXTURES_DIR DATA_DIR
set -euo pipefail
bin=$1; fixtures=$2; data=$3
model=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models']['tiny-llama-gqa'])" "$fixtures/fixtures.json")
tmp=$(mktemp -d); mounted=""
trap '[ -n "$mounted" ] && umount "$mounted"; rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
run() {  # run STORE POOL: store POOL prefixes of the piqa pool
  "$bin" run --model "$model" --data "$data" --task piqa --system as --pool "$2" --prefix-tokens 96 --chunk 16 \
    --requests 1 --warmup 0 --gpu-cache 64K --cpu-cache 128K --store "$1" >/dev/null
}
layers() { "$bin" store stats --store "$1" --json | python3 -c "import json,sys;print(json.load(sys.stdin)['chunk_layers'])"; }
# expect_full STORE WANT: a run that needs more room fails as promised, losing nothing.
expect_full() {
  local st=$1 want=$2 before rc=0
  before=$(layers "$st")
  run "$st" 4 2>"$tmp/err" || rc=$?
  if [ "$rc" -ne 1 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$st/chunks.dat: write failed: $want" "$tmp/err"; then
    echo "FAIL: rc=$rc, stderr:"; cat "$tmp/err"; exit 1
  fi
  [ "$(layers "$st")" -eq "$before" ] || { echo "FAIL: stored chunks changed"; exit 1; }
  "$bin" store verify --store "$st" >/dev/null
}

st=$tmp/store
run "$st" 2
size=$(stat -c %s "$st/chunks.dat")
# Room for one more 4 KiB block, not for a (chunk, layer) record of three.
(ulimit -f $((size / 1024 + 4)); expect_full "$st" "File too large")
run "$st" 4
[ "$(layers "$st")" -gt 0 ] && "$bin" store verify --store "$st" >/dev/null
echo "store_full: file-size limit ok"

mkdir "$tmp/mnt"
if mount -t tmpfs -o size=$((size + 8192)) tmpfs "$tmp/mnt" 2>/dev/null; then
  mounted=$tmp/mnt
  run "$tmp/mnt/store" 2
  expect_full "$tmp/mnt/store" "No space left on device"
  echo "store_full: full tmpfs ok"
else
  echo "store_full: full tmpfs not checked (cannot mount here)"
fi
