#!/usr/bin/env bash
# One selection-options type (issue 62, item 1): what run, eval and reproduce
# choose, record and print must not move. Usage: before_after.sh BINARY OUTDIR
# Writes OUTDIR/{run,run2,eval_*,fig15,fig22}.json with timings removed, the
# printed eval tables and the three commands' --help; `diff -r before after` is the proof.
set -euo pipefail
bin=$1; out=$2; mkdir -p "$out"; tmp=/tmp/selection_options_work; rm -rf "$tmp"; mkdir -p "$tmp"  # fixed: paths are recorded
m=models/smollm2-135m
strip() {  # drop what a clock or the checkout decides
  python3 - "$1" "$2" <<'PY'
import json, re, sys
skip = re.compile(r"(_ms|_s|ms|seconds|wall|time|ttft|throughput|commit|command|machine|date|host|dirty|version|_at|io_share|headline)$")  # a headline quotes timings
def clean(x):
    if isinstance(x, dict): return {k: clean(v) for k, v in x.items() if not skip.search(k)}
    if isinstance(x, list): return [clean(v) for v in x]
    return x
j = json.load(open(sys.argv[1]))
if "rows" in j:  # a figure: its timing columns go too
    keep = [i for i, c in enumerate(j["columns"]) if " ms" not in c]
    j["rows"] = [[r[i] for i in keep] for r in j["rows"]]
json.dump(clean(j), open(sys.argv[2], "w"), indent=1)
PY
}
for c in run eval reproduce; do "$bin" $c --help | sed 1,2d > "$out/help_$c.txt"; done  # less the usage line
OMP_NUM_THREADS=1 "$bin" run --model $m --task piqa --system recomp,as,h2o-lru,impress,digest --itf-unit token,chunk \
  --retention 0.25 --alpha 0.6,2 --pool 2 --prefix-tokens 256 --requests 3 --warmup 1 --importance-window 16 \
  --importance-pool 3 --sink-tokens 32 --store "$tmp/s" --threads 1 --json "$tmp/run.json" > "$out/run.txt"
OMP_NUM_THREADS=1 "$bin" run --model $m --task piqa --system h2o-lfu,impress-itf --probe-layout spread --pool 2 \
  --prefix-tokens 256 --requests 2 --warmup 1 --store "$tmp/s2" --threads 1 --json "$tmp/run2.json" > "$out/run2.txt"
OMP_NUM_THREADS=1 "$bin" eval --model $m --task retrieval --limit 12 --prefix-tokens 512 --system impress \
  --itf-unit chunk,token --importance-window 16 --importance-pool 7 --probe-layout spread --retention 0.25 --threads 1 \
  --json "$tmp/eval_retrieval.json" > "$out/eval_retrieval.txt"
OMP_NUM_THREADS=1 "$bin" eval --model $m --task piqa --limit 12 --shots 3 --system digest --retention 0.25 \
  --sink-tokens 16 --digest-groups sum --chunk 16 --threads 1 --json "$tmp/eval_digest.json" > "$out/eval_digest.txt"
OMP_NUM_THREADS=1 "$bin" eval --model $m --task copa --limit 12 --shots 3 --system impress-itf --alpha 0,1 \
  --retention 0.5,0.25 --threads 1 --json "$tmp/eval_sweep.json" > "$out/eval_sweep.txt"
f=build/fixtures/fixtures.json
tiny=$(python3 -c "import json;print(json.load(open('$f'))['models']['tiny-llama-gqa'])")
OMP_NUM_THREADS=1 "$bin" reproduce fig15 fig22 --model "$tiny" --out "$tmp/figs" --store "$tmp/stores" --tasks piqa,retrieval \
  --task piqa --prefixes 2 --prefix-tokens 96 --requests 2 --warmup 2 --gpu-cache 128K --cpu-cache 256K --disk-bw 0 \
  --h2d-bw 0 --docs 3 --shots 1 --retention 1,0.25 --alpha 0,0.6 --retrieval-tokens 256 --retrieval-questions 4 \
  --itf-unit chunk --probe-layout spread > /dev/null
for j in run run2 eval_retrieval eval_digest eval_sweep; do strip "$tmp/$j.json" "$out/$j.json"; done
for j in fig15 fig22; do strip "$tmp/figs/$j.json" "$out/$j.json"; grep -o 'impress reproduce.*' "$tmp/figs/$j.md" | head -1 > "$out/$j.command"; done
rm -f "$out"/run*.txt  # their tables are mostly timings; the JSON holds the rest
