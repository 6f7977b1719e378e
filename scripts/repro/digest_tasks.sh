#!/usr/bin/env bash
# The digest system on the four multiple-choice tasks behind ~2K-token
# few-shot prefixes, with results/accuracy/retention_2k's shots and documents
# (rte 20, copa 120, openbookqa 125, piqa 44 shots; piqa's first 500
# documents, the other splits whole), at one retention; then paired against
# that folder's recomp and h2o-lru runs of the same documents (their JSONs'
# per-document predictions, the gold labels from this run's samples) into
# OUT/paired.md (scripts/tables/paired_test.py's McNemar test and interval).
#   scripts/repro/digest_tasks.sh BUILD OUT [RETENTION]
set -euo pipefail
build=${1:?usage: digest_tasks.sh BUILD OUT [RETENTION]}; out=${2:?}; r=${3:-0.25}
model=${MODEL:-models/smollm2-135m}; ref=${REF:-results/accuracy/retention_2k}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
declare -A shots=([rte]=20 [copa]=120 [openbookqa]=125 [piqa]=44) limit=([rte]=0 [copa]=0 [openbookqa]=0 [piqa]=500)
for t in rte copa openbookqa piqa; do
  f="$out/${t}_digest"
  [ -s "$f.json" ] && continue
  echo "== $t digest" >&2
  "$build/impress" eval --model "$model" --task "$t" --shots "${shots[$t]}" --limit "${limit[$t]}" --system digest \
    --retention "$r" --json "$f.json" --samples "$f.samples.jsonl" | grep "^| $t" || true
  python3 "$here/strip_contexts.py" "$f.samples.jsonl"  # the prompts come again from the data and the shots
done
python3 - "$here/../tables" "$out" "$ref" "$r" "$build" <<'PY' > "$out/paired.md"
import json, sys
here, out, ref, r, build = sys.argv[1:]
sys.path.insert(0, here)
from paired_test import compare, interval
print(f"# digest on the four tasks at {r} retention, ~2K-token prefixes\n")
print(f"`scripts/repro/digest_tasks.sh {build} {out} {r}`: digest's samples here; recomp and h2o-lru are "
      f"{ref}'s JSONs (their `preds`), the gold labels from digest's samples.\n")
print("| task | n | A | A acc | digest acc | digest - A (points) | 95% interval | only A right | only digest right | McNemar p | same answer as A |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for t in ["rte", "copa", "openbookqa", "piqa"]:
    gold, dig = {}, {}
    for line in open(f"{out}/{t}_digest.samples.jsonl"):
        s = json.loads(line)
        gold[s["doc"]], dig[s["doc"]] = s["gold"], s["pred"]
    for name, file in [("recomp", f"{t}_r1.0_recomp_token.json"), ("h2o-lru", f"{t}_r{r}_h2o-lru_token.json")]:
        a = json.load(open(f"{ref}/{file}"))["results"][0]["preds"]
        if len(a) != len(gold):
            sys.exit(f"{ref}/{file}: {len(a)} predictions, digest scored {len(gold)} documents")
        ra = {i: a[i] == gold[i] for i in gold}
        rb = {i: dig[i] == gold[i] for i in gold}
        n, acc_a, acc_b, only_a, only_b, p = compare(ra, rb)
        lo, hi = interval(n, only_a, only_b)
        same = sum(a[i] == dig[i] for i in gold) / n
        print(f"| {t} | {n} | {name} | {acc_a:.3f} | {acc_b:.3f} | {100 * (acc_b - acc_a):+.2f} | "
              f"[{100 * lo:+.1f}, {100 * hi:+.1f}] | {only_a} | {only_b} | {p:.3f} | {same:.3f} |")
PY
