#!/usr/bin/env bash
# Accuracy on the retrieval task (data/retrieval.h) for every selection and
# its controls at the given retentions: results/retrieval/README.md's table.
#   scripts/repro/retrieval_accuracy.sh BUILD OUT [RETENTIONS] [QUESTIONS] [TOKENS]
# RETENTIONS: comma-separated (default 0.25); QUESTIONS (default 400) over
# 2048-token haystacks (TOKENS). Each system's eval JSON and per-question
# samples (for scripts/tables/paired_test.py) go to OUT.
set -euo pipefail
build=${1:?usage: retrieval_accuracy.sh BUILD OUT [RETENTIONS] [QUESTIONS] [TOKENS]}; out=${2:?}
ret=${3:-0.25}; n=${4:-400}; tokens=${5:-2048}
model=${MODEL:-models/smollm2-135m}
mkdir -p "$out"
common=(--model "$model" --task retrieval --prefix-tokens "$tokens" --limit "$n")
run() {  # NAME ARGS...
  local name=$1; shift
  echo "== $name" >&2
  "$build/impress" eval "${common[@]}" "$@" --json "$out/$name.json" --samples "$out/$name.samples.jsonl" | grep '^| retrieval'
}
run recomp --system recomp
run floor --system recomp --no-prefix
for s in random static h2o-lru; do run "$s" --system "$s" --retention "$ret"; done
for u in token chunk; do run "impress-itf-$u" --system impress-itf --itf-unit "$u" --retention "$ret"; done
run h2o-lru-p7 --system h2o-lru --retention "$ret" --importance-pool 7  # H2O's importance max-pooled over 7 positions
