#!/usr/bin/env bash
# The digest system's scoring paths and a run's report: eval (int8 codes, int8 pooled, int4 fp32 path), run (store source).
set -euo pipefail
bin=$1; out=$2; mkdir -p $out
export OMP_NUM_THREADS=2
for v in "int8:" "int8p3:--digest-pool 3" "int4:--digest-codec int4" "int4p3:--digest-codec int4 --digest-pool 3" "keys:--digest-score keys --digest-window 4"; do
  n=${v%%:*}; a=${v#*:}
  $bin eval --model models/smollm2-135m --task retrieval --prefix-tokens 1024 --limit 40 --system digest --retention 0.1 $a \
    --json $out/eval_$n.json --samples $out/eval_$n.samples.jsonl > $out/eval_$n.md 2>&1
done
rm -rf /tmp/rv/store_$(basename $out)
$bin run --model models/smollm2-135m --task retrieval --pool 2 --prefix-tokens 1024 --requests 6 --warmup 2 \
  --system as,h2o-lfu,impress,digest --store /tmp/rv/store_$(basename $out) --json $out/run.json > $out/run.md 2>&1
$bin reproduce --help > $out/reproduce_help.txt; $bin run --help > $out/run_help.txt
