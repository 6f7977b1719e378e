#!/usr/bin/env bash
# Remote-tier read throughput against redis-benchmark, same cluster, same
# value size, same run: a cluster of three masters and three replicas on
# loopback (scripts/setup/redis_cluster.sh), started here and stopped on exit.
# Ours: one layer's 32-chunk set (64 GETs of 24 KiB + 4 bytes of checksum)
# per round, one client thread pipelining to every master. redis-benchmark:
# GETs of the same size, 64 in flight as well (3 clients, one per master,
# pipeline 21).
# With OUT=FILE.json, also writes both GET rates, their ratio and the provenance there.
# Usage: scripts/bench/bench_remote.sh BUILD_DIR [BASE_PORT]
set -euo pipefail
build=$1; base=${2:-7600}
here=$(cd "$(dirname "$0")" && pwd)
command -v redis-benchmark >/dev/null || { echo "bench_remote: redis-benchmark is not installed (make setup)"; exit 1; }
tmp=$(mktemp -d)
trap 'bash "$here/../setup/redis_cluster.sh" stop "$base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
url=$(TMPDIR=$tmp bash "$here/../setup/redis_cluster.sh" start "$base")
size=$((64 * 3 * 64 * 2 + 4))
"$build/impress_remote_bench" --remote "$url" --set 32 --chunks 512 --benchmark_format=json \
  >"$tmp/bench.json" 2>/dev/null
ours=$(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['benchmarks'][0]; print(b['bytes_per_second'], b['gets_per_second'])" \
       "$tmp/bench.json")
theirs=$(redis-benchmark -h 127.0.0.1 -p "$base" --cluster -t set,get -d "$size" -n 30000 -c 3 -P 21 -r 512 --csv 2>/dev/null |
         python3 -c "
import csv, sys
rows = {r[0].strip('\"'): r[1].strip('\"') for r in csv.reader(sys.stdin) if len(r) > 1}
print(rows['GET'])")
python3 - "$ours" "$theirs" "$size" <<'PY'
import sys
ours_bps, ours_gets = map(float, sys.argv[1].split())
theirs_gets, size = float(sys.argv[2]), int(sys.argv[3])
print(f"impress remote   {ours_bps / 1e6:8.1f} MB/s  {ours_gets:9.0f} GET/s  (32-chunk layer set per round, 1 thread)")
print(f"redis-benchmark  {theirs_gets * (size - 4) / 1e6:8.1f} MB/s  {theirs_gets:9.0f} GET/s  (GET -d {size}, -c 3 -P 21, --cluster)")
print(f"ratio            {ours_gets / theirs_gets:8.2f}")
PY
if [ -n "${OUT:-}" ]; then
  python3 "$here/bench_provenance.py" "$tmp/bench.json" gets_per_second "$theirs" redis_benchmark_gets_per_second \
    "$OUT" "redis-benchmark --cluster -t set,get -d $size -n 30000 -c 3 -P 21 -r 512" >/dev/null
fi
