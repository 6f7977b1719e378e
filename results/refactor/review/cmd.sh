#!/bin/bash
# usage: cmd.sh BIN OUTJSON
st=$(mktemp -d)  # run from the repository root
OMP_NUM_THREADS=2 $1 run --model models/smollm2-135m --task piqa --system recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress --itf-unit token,chunk --retention 0.25 --pool 3 --prefix-tokens 512 --requests 8 --warmup 3 --gpu-cache 2M --cpu-cache 4M --store $st --json $2 > $2.log 2>&1
rm -rf $st
