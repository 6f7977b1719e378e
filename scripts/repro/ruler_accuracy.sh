#!/usr/bin/env bash
# RULER's needle task (scripts/repro/needle_task.py: lm-evaluation-harness's own
# generator, repeat haystack, K keys a haystack, one question per key) through
# `impress eval --task-file`: full KV, no prefix, then each selection at 10, 25
# and 50%. Writes OUT/needles.jsonl, OUT/rR/NAME.json and NAME.samples.jsonl
# (contexts left out: the file has them) and prints
# scripts/tables/retrieval_retention_table.py's tables against recomp and pooled H2O.
#   scripts/repro/ruler_accuracy.sh BUILD OUT TOKENS [HAYSTACKS] [KEYS] [SEED]
# Defaults: 10 haystacks of 20 keys (200 questions), seed 1; RETENTIONS (env,
# default "0.25 0.10 0.50") the selections' retentions; VARIANTS (env,
# "NAME ARGS...;NAME ARGS...") evals run at each retention instead of the
# systems compared (no tables then). A run already in OUT is kept: remove its
# JSON to redo it.
set -euo pipefail
build=${1:?usage: ruler_accuracy.sh BUILD OUT TOKENS [HAYSTACKS] [KEYS] [SEED]}; out=${2:?}; tokens=${3:?}
haystacks=${4:-10}; keys=${5:-20}; seed=${6:-1}
model=${MODEL:-models/smollm2-135m}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
file=$out/needles.jsonl
[ -s "$file" ] || python3 "$here/needle_task.py" --model "$model" --haystacks "$haystacks" --keys "$keys" \
  --tokens "$tokens" --seed "$seed" >"$file"
run() {  # RETENTION NAME ARGS...
  local r=$1 name=$2; shift 2
  local dir="$out/r$(python3 -c "print(round($r*100))")"
  mkdir -p "$dir"
  [ -f "$dir/$name.json" ] && return 0
  echo "== $name at $r" >&2
  "$build/impress" eval --model "$model" --task-file "$file" --retention "$r" "$@" \
    --json "$dir/$name.json" --samples "$dir/$name.samples.jsonl" >/dev/null
  python3 "$here/strip_contexts.py" "$dir/$name.samples.jsonl"  # the task file holds them
}
run 0.25 recomp --system recomp
if [ -n "${VARIANTS:-}" ]; then  # "NAME ARGS...;NAME ARGS..." at each retention instead of the systems below
  IFS=';' read -ra variants <<<"$VARIANTS"
  for r in ${RETENTIONS:-0.25 0.10 0.50}; do
    for v in "${variants[@]}"; do read -ra words <<<"$v"; run "$r" "${words[@]}"; done
  done
  exit 0
fi
for r in ${RETENTIONS:-0.25 0.10 0.50}; do  # the project's own and the paper's first: each eval takes minutes
  run "$r" digest --system digest
  run "$r" impress-itf-chunk --system impress-itf --itf-unit chunk
  run "$r" h2o-lru-p7 --system h2o-lru --importance-pool 7
  run "$r" h2o-lru --system h2o-lru
  run "$r" impress-itf-token --system impress-itf --itf-unit token
  run "$r" random --system random
done
run 0.25 floor --system recomp --no-prefix
table="$here/../tables/retrieval_retention_table.py"
python3 "$table" "$out" floor random h2o-lru h2o-lru-p7 impress-itf-token impress-itf-chunk digest
echo
python3 "$table" "$out" --reference h2o-lru-p7 h2o-lru impress-itf-token impress-itf-chunk digest
