# The int8 part layout in one place (codec/kv_codec.h Int8Layout): int8- and k8v4-codec stores (keys, values,
# probe copies at 8 bits; int8 digests) made by `run` of as and digest, each store file's sha256 and each run's
# accuracy, bytes, chunks and per-request log-likelihoods. Usage, from the checkout's root:
#   bash results/refactor/int8_layout/cmd.sh BIN OUT; diff -r results/refactor/int8_layout/before OUT   # empty
set -euo pipefail
bin=$1; out=$2; mkdir -p "$out"; tmp=/tmp/int8_layout_work; rm -rf "$tmp"; mkdir -p "$tmp"
m=models/smollm2-135m
for codec in int8 k8v4; do
  OMP_NUM_THREADS=1 "$bin" run --model $m --task piqa --system as,digest --kv-codec $codec --pool 2 --prefix-tokens 256 \
    --requests 3 --warmup 1 --retention 0.25 --gpu-cache 256K --cpu-cache 512K --store "$tmp/$codec" --threads 1 \
    --json "$tmp/$codec.json" > /dev/null
  (cd "$tmp/$codec" && find . -type f | sort | xargs sha256sum) > "$out/store_$codec.sha256"
  python3 -c "
import json,sys
d=json.load(open('$tmp/$codec.json'))
for r in d['runs']:
  print(r['system'], r['acc'], r['bytes_read'], r['chunks_read'], [round(x,6) for q in r['per_request'] for x in q['loglik']])
" > "$out/run_$codec.txt"
done
