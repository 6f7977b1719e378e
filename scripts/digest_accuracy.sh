#!/usr/bin/env bash
# The digest system's accuracy on the retrieval task (400 questions over
# 2048-token haystacks, as results/retrieval/): its defaults at every
# retention, then each of its options varied at 25% and 10%. Each run's eval
# JSON and per-question samples (for scripts/paired_test.py) go to OUT/rR/.
#   scripts/digest_accuracy.sh BUILD OUT [STEPS]
# STEPS (default "retention options"): retention runs 5, 10, 25, 50%;
# options runs each variant at 25%, and four of them at 10%.
set -euo pipefail
build=${1:?usage: digest_accuracy.sh BUILD OUT [STEPS]}; out=${2:?}; steps=${3:-retention options}
model=${MODEL:-models/smollm2-135m}
common=(--model "$model" --task retrieval --prefix-tokens 2048 --limit 400 --system digest)
run() {  # RETENTION NAME ARGS...
  local r=$1 name=$2; shift 2
  local dir="$out/r$(python3 -c "print(round($r*100))")"
  mkdir -p "$dir"
  [ -f "$dir/$name.json" ] && return 0  # done by an earlier run: rerun by removing it
  echo "== $name at $r" >&2
  "$build/impress" eval "${common[@]}" --retention "$r" "$@" \
    --json "$dir/$name.json" --samples "$dir/$name.samples.jsonl" | grep '^| retrieval'
}
for step in $steps; do
  case $step in
    retention) for r in 0.25 0.10 0.05 0.50; do run "$r" digest; done ;;
    options)
      r=0.25
      run "$r" digest-sink0 --sink-tokens 0
      run "$r" digest-recent64 --recent-tokens 64
      run "$r" digest-dense2 --dense-layers 2
      run "$r" digest-window0 --digest-window 0
      run "$r" digest-groups-sum --digest-groups sum
      run "$r" digest-bound --digest-score bound
      run "$r" digest-chunk16 --chunk 16
      run "$r" digest-chunk32 --chunk 32
      r=0.10
      run "$r" digest-chunk16 --chunk 16
      run "$r" digest-chunk32 --chunk 32
      run "$r" digest-sink0 --sink-tokens 0
      run "$r" digest-groups-sum --digest-groups sum ;;
    *) echo "digest_accuracy.sh: unknown step '$step'" >&2; exit 1 ;;
  esac
done
