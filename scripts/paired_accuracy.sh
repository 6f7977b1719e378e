#!/usr/bin/env bash
# Paired accuracy of impress-itf (token and chunk units) against h2o-lru on
# the same documents: per task and retention, both systems' acc, the
# documents only one got right, and the exact McNemar p-value
# (scripts/paired_test.py); then the same for fidelity: how often each system
# predicts what the full prefix KV (recomp) predicts. Writes OUT_DIR/paired.md and each eval's JSON;
# per-document samples stay in OUT_DIR/samples (not meant for committing).
# Usage: scripts/paired_accuracy.sh MODEL BUILD OUT_DIR TASKS SHOTS LIMIT CHUNK RETENTION...
#   TASKS: comma-separated; CHUNK: the chunk unit's chunk size; LIMIT 0: full splits.
# JOBS=N runs N evals at once, each with THREADS LibTorch threads. A run
# whose JSON exists is skipped, so an interrupted sweep resumes.
set -euo pipefail
model=$1; build=$2; out=$3; tasks=$4; shots=$5; limit=$6; chunk=$7; shift 7
retentions=("$@")
jobs=${JOBS:-1}; threads=${THREADS:-0}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/samples"
export model build out shots limit chunk threads
for t in ${tasks//,/ }; do
  echo "$t 1.0 recomp token"
  for r in "${retentions[@]}"; do
    echo "$t $r h2o-lru token"; echo "$t $r impress-itf token"; echo "$t $r impress-itf chunk"
  done
done | xargs -P "$jobs" -L1 bash -c '
  name="$0_r$1_$2_$3"
  f="$out/$name.json"
  [ -s "$f" ] || "$build/impress" eval --model "$model" --task "$0" --shots "$shots" --limit "$limit" \
      --system "$2" --retention "$1" --itf-unit "$3" --chunk "$chunk" --threads "$threads" \
      --samples "$out/samples/$name.jsonl" --json "$f.tmp" >/dev/null
  [ -s "$f" ] || mv "$f.tmp" "$f"'
python3 - "$here" "$out" "$model" "$tasks" "$shots" "$limit" "$chunk" "${retentions[@]}" <<'PY'
import os, sys
here, out, model, tasks, shots, limit, chunk, *retentions = sys.argv[1:]
sys.path.insert(0, here)
from paired_test import agreement, compare, load_preds, right
lines = [f"# Paired accuracy: impress-itf against h2o-lru, {model}, {shots}-shot, "
         f"{'first ' + limit + ' documents per task' if limit != '0' else 'full splits'}", "",
         f"`scripts/paired_accuracy.sh {model} build {out} {tasks} {shots} {limit} {chunk} {' '.join(retentions)}`", "",
         f"The chunk unit over {chunk}-token chunks. Discordant documents: only one of the two systems answers",
         "correctly; p: exact two-sided McNemar test of equal accuracy (scripts/paired_test.py).", "",
         "| task | n | retention | impress-itf unit | h2o-lru acc | impress-itf acc | kept share | difference (points) | only h2o-lru right | only impress-itf right | McNemar p |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
import json
fidelity = ["", "Fidelity: the share of documents on which a system predicts what the full prefix KV (recomp)",
            "predicts, right or wrong, and the same McNemar test on it.", "",
            "| task | n | retention | impress-itf unit | h2o-lru agrees | impress-itf agrees | difference (points) | only h2o-lru agrees | only impress-itf agrees | McNemar p |",
            "|---|---|---|---|---|---|---|---|---|---|"]
sample = lambda name: os.path.join(out, "samples", name + ".jsonl")
def row(a, b):
    n, share_a, share_b, only_a, only_b, p = compare(a, b)
    return f"{share_a:.3f} | {share_b:.3f}", f"{100 * (share_b - share_a):+.2f} | {only_a} | {only_b} | {p:.3f} |"
for t in tasks.split(","):
    ref = load_preds(sample(f"{t}_r1.0_recomp_token"), "acc")
    for r in retentions:
        h2o = load_preds(sample(f"{t}_r{r}_h2o-lru_token"), "acc")
        for unit in ("token", "chunk"):
            name = f"{t}_r{r}_impress-itf_{unit}"
            itf = load_preds(sample(name), "acc")
            assert h2o.keys() == itf.keys() == ref.keys(), name
            kept = json.load(open(os.path.join(out, name + ".json")))["results"][0]["kept_share"]
            shares, test = row(right(h2o), right(itf))
            lines.append(f"| {t} | {len(h2o)} | {r} | {unit} | {shares} | {kept:.2f} | {test}")
            shares, test = row(agreement(h2o, ref), agreement(itf, ref))
            fidelity.append(f"| {t} | {len(h2o)} | {r} | {unit} | {shares} | {test}")
lines += fidelity
text = "\n".join(lines) + "\n"
open(os.path.join(out, "paired.md"), "w").write(text)
print(text)
PY
