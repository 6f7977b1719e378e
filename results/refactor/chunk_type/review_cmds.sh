#!/bin/bash
# usage: review_cmds.sh BIN OUT (from the repository root)
set -e
bin=$1; out=$2; mkdir -p $out; st=$(mktemp -d)
common="--model models/smollm2-135m --task piqa --retention 0.25 --pool 3 --prefix-tokens 512 --requests 8 --warmup 3 --gpu-cache 2M --cpu-cache 4M"
OMP_NUM_THREADS=2 $bin run $common --system recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress --itf-unit token,chunk --store $st/fp16 --json $out/run_fp16.json > $out/run_fp16.log 2>&1
OMP_NUM_THREADS=2 $bin run $common --system as,h2o-lfu,impress-itf-ro,impress --itf-unit token,chunk --kv-codec int4 --store $st/int4 --json $out/run_int4.json > $out/run_int4.log 2>&1
OMP_NUM_THREADS=2 $bin eval --model models/smollm2-135m --task retrieval --prefix-tokens 512 --limit 24 --system impress-itf --retention 0.25 --recall --json $out/eval_retrieval.json > $out/eval_retrieval.log 2>&1
OMP_NUM_THREADS=2 $bin reproduce fig23 fig24 --model models/smollm2-135m --out $out/fig --store $st/fig --tasks piqa --task piqa --prefixes 2 --prefix-tokens 256 --requests 3 --warmup 2 --gpu-cache 1M --cpu-cache 2M --chunk 32,64 --pool 2,4 > $out/fig.log 2>&1
rm -rf $st
