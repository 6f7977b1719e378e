#!/usr/bin/env bash
# How much the accuracy regression's numbers move when nothing but the run
# changes: `impress regress --update` on copies of the expected file with 1 and
# 2 LibTorch threads, twice each, then scripts/check/regress_variation.py sets the
# spread against the file's tolerances.
#   scripts/check/regress_variation.sh BUILD OUT [EXPECTED]
set -euo pipefail
build=${1:?usage: regress_variation.sh BUILD OUT [EXPECTED]}; out=${2:?}
expected=${3:-tests/expected/accuracy_smollm2.json}
model=${MODEL:-models/smollm2-135m}
mkdir -p "$out"
for run in a b; do
  for threads in 1 2; do
    f="$out/threads${threads}_$run.json"
    cp "$expected" "$f"
    echo "== threads $threads, run $run" >&2
    "$build/impress" regress --model "$model" --expected "$f" --update --threads "$threads" >"$out/threads${threads}_$run.log"
  done
done
python3 scripts/check/regress_variation.py "$expected" "$out"/threads*_*.json | tee "$out/variation.md"
