#!/bin/bash
# The window study's accuracy: every task at results/accuracy/retention_2k's shots (about 2K
# prefix tokens), its first 500 documents, 25% retention: recomp, impress-itf exact (this
# checkout's build/impress) and impress-itf with IMPRESS_WINDOW=16 (a build with studies/window/window.patch),
# both ITF units. Writes eval_<task>_<name>.json and the samples paired_test.py reads to OUT.
# Usage, from the repository root: run_evals.sh BUILD_WITH_PATCH OUT
set -e
patched=$1; o=$2; mkdir -p "$o"
for ts in piqa:44 rte:20 copa:120 openbookqa:125; do
  t=${ts%%:*}; s=${ts##*:}
  common=(--model models/smollm2-135m --task $t --shots $s --limit 500 --chunk 64)
  build/impress eval "${common[@]}" --system recomp --json $o/eval_${t}_recomp.json --samples $o/${t}_recomp.jsonl
  for u in token chunk; do
    build/impress eval "${common[@]}" --system impress-itf --itf-unit $u --retention 0.25 \
      --json $o/eval_${t}_exact_$u.json --samples $o/${t}_exact_$u.jsonl
    IMPRESS_WINDOW=16 "$patched"/impress eval "${common[@]}" --system impress-itf --itf-unit $u --retention 0.25 \
      --json $o/eval_${t}_w16_$u.json --samples $o/${t}_w16_$u.jsonl
    python3 scripts/tables/paired_test.py $o/${t}_exact_$u.jsonl $o/${t}_w16_$u.jsonl --reference $o/${t}_recomp.jsonl
  done
done
