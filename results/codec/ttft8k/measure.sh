#!/bin/bash
# The 8K codec TTFT runs (quiet machine): disk capped at 128 MB/s, then the cluster at 16 MB/s.
# BIN (default build/impress) is the binary measured, OUT (default /tmp/c8k/out) where its reports go.
set -e
cd "$(dirname "$0")/../../.."  # the repository root
url=$(cat /tmp/c8k/url)
common=(--model models/smollm2-135m --task piqa --pool 4 --prefix-tokens 8192 --requests 8 --warmup 8
        --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M)
bin=${BIN:-build/impress}
out=${OUT:-/tmp/c8k/out}; mkdir -p $out
rm -rf /tmp/c8k/d_fp16 /tmp/c8k/d_int4 /tmp/c8k/r_fp16 /tmp/c8k/r_int4
# recorded: d_fp16 was a copy of an fp16 store of the same pool (run --system as --requests 1 --warmup 0)
cp -r /tmp/c8k/w_fp16 /tmp/c8k/d_fp16
cp -r /tmp/c8k/w_int4 /tmp/c8k/d_int4
$bin run "${common[@]}" --system h2o-lfu,impress --itf-unit token --store /tmp/c8k/d_fp16 --json $out/disk_fp16.json > $out/disk_fp16.md 2>/dev/null
$bin run "${common[@]}" --system impress --itf-unit chunk --kv-codec int4 --store /tmp/c8k/d_int4 --json $out/disk_int4.json > $out/disk_int4.md 2>/dev/null
$bin run "${common[@]}" --remote "$url" --remote-bw 16M --system h2o-lfu,impress --itf-unit token --store /tmp/c8k/r_fp16 --json $out/cluster_fp16.json > $out/cluster_fp16.md 2>/dev/null
$bin run "${common[@]}" --remote "$url" --remote-bw 16M --system impress --itf-unit chunk --kv-codec int4 --store /tmp/c8k/r_int4 --json $out/cluster_int4.json > $out/cluster_int4.md 2>/dev/null
echo measured
