#!/usr/bin/env bash
# The digest system's accuracy on the retrieval task (400 questions over
# 2048-token haystacks, as results/retrieval/): its defaults at every
# retention, then each of its options varied at 25% and 10%. Each run's eval
# JSON and per-question samples (for scripts/tables/paired_test.py) go to OUT/rR/.
#   scripts/repro/digest_accuracy.sh BUILD OUT [STEPS]
# STEPS (default "retention options options2"): retention runs 5, 10, 25,
# 50%; options each option at 25% and the chunk size at 10%; options2 the rest;
# window fewer scoring rows (4, 8, 1); rowmax the options measured beside the
# defaults of 8bbefd8; int8 int8 digests (--digest-codec int8) at every retention;
# int8q the same once int8 digests are scored from their codes (the query rows
# quantized too: DigestChunkScoresInt8), at every retention; int8q_w16 the same
# scored from the last 16 question rows only.
set -euo pipefail
build=${1:?usage: digest_accuracy.sh BUILD OUT [STEPS]}; out=${2:?}; steps=${3:-retention options options2}
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
  python3 "$(dirname "$0")/strip_contexts.py" "$dir/$name.samples.jsonl"  # the haystacks come again from the seed
}
for step in $steps; do
  case $step in
    retention) for r in 0.25 0.10 0.05 0.50; do run "$r" digest; done ;;
    options)  # what each option does at 25%, and the chunk size at 10%
      run 0.25 digest-sink0 --sink-tokens 0
      run 0.25 digest-recent64 --recent-tokens 64
      run 0.25 digest-dense2 --dense-layers 2
      run 0.25 digest-window0 --digest-window 0
      run 0.10 digest-chunk32 --chunk 32
      run 0.10 digest-chunk16 --chunk 16
      run 0.25 digest-bound --digest-score bound ;;
    options2)  # the rest of the grid
      run 0.25 digest-groups-sum --digest-groups sum
      run 0.25 digest-chunk32 --chunk 32
      run 0.25 digest-chunk16 --chunk 16
      run 0.10 digest-sink0 --sink-tokens 0
      run 0.10 digest-groups-sum --digest-groups sum ;;
    window)  # fewer question rows score the chunks (less selection time)
      run 0.25 digest-window4 --digest-window 4
      run 0.10 digest-window4 --digest-window 4
      run 0.25 digest-window8 --digest-window 8
      run 0.25 digest-window1 --digest-window 1 ;;
    rowmax)  # beside the defaults of 8bbefd8 (every row, a chunk's best row): the 10% levers, the defaults before
      run 0.10 digest-sink0 --sink-tokens 0
      run 0.10 digest-window16 --digest-window 16
      run 0.10 digest-groups-sum --digest-groups sum
      run 0.10 digest-chunk16-sink16 --chunk 16 --sink-tokens 16
      run 0.10 digest-pool7 --digest-pool 7
      run 0.25 digest-keys4 --digest-score keys --digest-window 4
      run 0.10 digest-keys4 --digest-score keys --digest-window 4 ;;
    int8)  # digests at 8 bits: twice the digest bytes, the keys' own ranking
      for r in 0.10 0.25 0.05 0.50; do run "$r" digest-int8 --digest-codec int8; done ;;
    int8q)  # int8 digests scored in int8 (query rows quantized as the keys are)
      for r in 0.25 0.10 0.05 0.50; do run "$r" digest-int8q --digest-codec int8; done ;;
    int8q_w16)  # the same scored from the last 16 question rows (a quarter of the scoring work at 8K)
      for r in 0.25 0.10 0.05 0.50; do run "$r" digest-int8q-w16 --digest-codec int8 --digest-window 16; done ;;
    *) echo "digest_accuracy.sh: unknown step '$step'" >&2; exit 1 ;;
  esac
done
