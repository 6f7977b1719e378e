#!/usr/bin/env bash
# Chunk-store read bandwidth against fio, same file system, same run.
# Usage: scripts/bench/bench_store.sh BUILD_DIR [STORE_DIR]
# With OUT=FILE.json, also writes both numbers, their ratio and the provenance there.
# Both read 48 KiB (one chunk's keys + values, SmolLM2 geometry) at 4 KiB-aligned
# random offsets with O_DIRECT from 8 threads; fio reads the store's own data file.
set -euo pipefail
build=$1; dir=${2:-$build/bench_store}
command -v fio >/dev/null || { echo "bench_store: fio is not installed (make setup)"; exit 1; }
bench_json=$(mktemp); trap 'rm -f "$bench_json"' EXIT
"$build/impress_store_bench" --dir "$dir" --set 32 --chunks 4096 --threads 8 --benchmark_format=json \
  --benchmark_out="$bench_json" --benchmark_out_format=json >/dev/null 2>&1
ours=$(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['benchmarks'][0]; print(b['bytes_per_second'])" "$bench_json")
theirs=$(fio --name=chunks --filename="$dir/chunks.dat" --readonly --direct=1 --rw=randread --bs=48k \
         --blockalign=4k --ioengine=psync --numjobs=8 --group_reporting --time_based --runtime=5 \
         --output-format=json 2>/dev/null |
         python3 -c "import json,sys; j=json.load(sys.stdin); print(j['jobs'][0]['read']['bw_bytes'])")
python3 - "$ours" "$theirs" <<'PY'
import sys
ours, theirs = float(sys.argv[1]), float(sys.argv[2])
print(f"impress store  {ours / 1e6:8.1f} MB/s  (one layer's 32-chunk set per iteration, 8 I/O threads)")
print(f"fio            {theirs / 1e6:8.1f} MB/s  (randread, bs=48k, psync, numjobs=8, O_DIRECT)")
print(f"ratio          {ours / theirs:8.2f}")
PY
if [ -n "${OUT:-}" ]; then
  python3 "$(dirname "$0")/bench_provenance.py" "$bench_json" bytes_per_second "$theirs" fio_bytes_per_second "$OUT" \
    "fio --filename=$dir/chunks.dat --readonly --direct=1 --rw=randread --bs=48k --blockalign=4k --ioengine=psync --numjobs=8 --runtime=5" >/dev/null
fi
