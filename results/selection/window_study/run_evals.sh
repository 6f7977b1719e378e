#!/bin/bash
# PIQA, 44 shots (about 2K prefix tokens), 500 documents, retention 0.25: exact main, the window study binary, recomp.
set -e
# from the repository root
common=(--model models/smollm2-135m --task piqa --shots 44 --limit 500 --chunk 64)
o=OUT
build/impress eval "${common[@]}" --system recomp --json $o/recomp.json --samples $o/recomp.jsonl > $o/recomp.log 2>&1
for u in token chunk; do
  build/impress eval "${common[@]}" --system impress-itf --itf-unit $u --retention 0.25 --json $o/exact_$u.json --samples $o/exact_$u.jsonl > $o/exact_$u.log 2>&1
  IMPRESS_WINDOW=16 BUILD_WITH_PATCH/impress eval "${common[@]}" --system impress-itf --itf-unit $u --retention 0.25 --json $o/w16_$u.json --samples $o/w16_$u.jsonl > $o/w16_$u.log 2>&1
done
echo all done
