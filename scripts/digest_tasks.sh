#!/usr/bin/env bash
# The four multiple-choice tasks behind ~2K-token few-shot prefixes (the
# shots of results/accuracy/retention_2k: rte 20, copa 120, openbookqa 125,
# piqa 44 over its first 500 documents) at one retention: recomp, h2o-lru and
# digest, each eval's JSON and per-document samples in OUT, then digest paired
# against recomp and against h2o-lru (scripts/paired_test.py) into OUT/paired.md.
#   scripts/digest_tasks.sh BUILD OUT [RETENTION]
set -euo pipefail
build=${1:?usage: digest_tasks.sh BUILD OUT [RETENTION]}; out=${2:?}; r=${3:-0.25}
model=${MODEL:-models/smollm2-135m}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
declare -A shots=([rte]=20 [copa]=120 [openbookqa]=125 [piqa]=44) limit=([rte]=0 [copa]=0 [openbookqa]=0 [piqa]=500)
for t in rte copa openbookqa piqa; do
  for s in recomp h2o-lru digest; do
    f="$out/${t}_$s"
    [ -s "$f.json" ] && continue
    echo "== $t $s" >&2
    "$build/impress" eval --model "$model" --task "$t" --shots "${shots[$t]}" --limit "${limit[$t]}" --system "$s" \
      --retention "$r" --json "$f.json" --samples "$f.samples.jsonl" | grep "^| $t" || true
  done
done
{
  echo "# digest on the four tasks at ${r} retention, ~2K-token prefixes"
  echo
  echo "\`scripts/digest_tasks.sh $build $out $r\`"
  for t in rte copa openbookqa piqa; do
    for ref in recomp h2o-lru; do
      echo; echo "## $t: $ref (A) against digest (B)"; echo
      python3 "$here/paired_test.py" "$out/${t}_$ref.samples.jsonl" "$out/${t}_digest.samples.jsonl" \
        --label-a "$ref" --label-b digest
    done
  done
} > "$out/paired.md"
