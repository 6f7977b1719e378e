#!/bin/bash
# The 8K codec TTFT: writers fill 4 x 8K-token PIQA prefixes and publish them to a local cluster.
set -e
cd "$(dirname "$0")/../../.."  # the repository root
url=$(bash scripts/setup/redis_cluster.sh start 7900)
echo "$url" > /tmp/c8k/url
common=(--model models/smollm2-135m --task piqa --pool 4 --prefix-tokens 8192 --gpu-cache 32M --cpu-cache 64M)
build/impress run "${common[@]}" --system as --requests 1 --warmup 0 --remote "$url" --store /tmp/c8k/w_fp16 --json /tmp/c8k/w_fp16.json
build/impress run "${common[@]}" --system as --requests 1 --warmup 0 --kv-codec int4 --remote "$url" --store /tmp/c8k/w_int4 --json /tmp/c8k/w_int4.json
echo filled
