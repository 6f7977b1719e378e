#!/usr/bin/env bash
# One path for long-context tasks (issue 61, item 2): the retrieval task's
# haystacks become task-file contexts that eval and run read as they read a
# task file. What retrieval and task files choose, score and record must not
# move. Usage: before_after.sh BINARY OUTDIR (from the checkout's root);
# `diff -r before after` is the proof.
set -euo pipefail
bin=$1; out=$2; mkdir -p "$out"; tmp=/tmp/task_path_work; rm -rf "$tmp"; mkdir -p "$tmp"  # fixed: paths are recorded
m=models/smollm2-135m
strip() {  # drop what a clock or the checkout decides
  python3 - "$1" "$2" <<'PY'
import json, re, sys
skip = re.compile(r"(_ms|_s|ms|seconds|wall|time|ttft|throughput|commit|command|machine|date|host|dirty|version|_at|io_share)$")
def clean(x):
    if isinstance(x, dict): return {k: clean(v) for k, v in x.items() if not skip.search(k)}
    if isinstance(x, list): return [clean(v) for v in x]
    return x
json.dump(clean(json.load(open(sys.argv[1]))), open(sys.argv[2], "w"), indent=1)
PY
}
export OMP_NUM_THREADS=1
for s in h2o-lru digest impress; do
  "$bin" eval --model $m --task retrieval --limit 24 --prefix-tokens 512 --system $s --retention 0.25 --threads 1 \
    --json "$tmp/eval_retrieval_$s.json" --samples "$out/eval_retrieval_$s.samples.jsonl" > "$out/eval_retrieval_$s.txt"
done
"$bin" run --model $m --task retrieval --system as,h2o-lfu,impress,digest --itf-unit chunk --retention 0.25 --pool 2 \
  --prefix-tokens 512 --requests 8 --warmup 2 --store "$tmp/s" --threads 1 --json "$tmp/run_retrieval.json" > /dev/null
python3 scripts/repro/needle_task.py --model $m --haystacks 2 --keys 2 --tokens 400 --seed 3 > "$tmp/needles.jsonl"
"$bin" eval --model $m --task-file "$tmp/needles.jsonl" --system h2o-lru --retention 0.5 --threads 1 \
  --json "$tmp/eval_file.json" --samples "$out/eval_file.samples.jsonl" > "$out/eval_file.txt"
for j in eval_retrieval_h2o-lru eval_retrieval_digest eval_retrieval_impress run_retrieval eval_file; do
  strip "$tmp/$j.json" "$out/$j.json"
done
