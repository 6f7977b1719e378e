#!/usr/bin/env bash
# Paired accuracy of impress-itf (token and chunk units) against h2o-lru on
# the same documents: per task and retention, both systems' acc, the
# documents only one got right, and the exact McNemar p-value
# (scripts/tables/paired_test.py); then the same for fidelity: how often each system
# predicts what the full prefix KV (recomp) predicts. Writes OUT_DIR/paired.md and each eval's JSON;
# per-document samples stay in OUT_DIR/samples (not meant for committing).
# Usage: scripts/repro/paired_accuracy.sh MODEL BUILD OUT_DIR TASKS SHOTS LIMIT CHUNK RETENTION...
#   TASKS: comma-separated; CHUNK: the chunk unit's chunk size; LIMIT 0: full splits.
#   SHOTS and LIMIT are one number for every task or per task, as in
#   piqa=44,rte=20,copa=120,openbookqa=120 (a task left out gets 0).
# JOBS=N runs N evals at once, each with THREADS LibTorch threads; UNITS
# (default "token chunk") names the impress-itf units to run. A run whose
# JSON exists is skipped, so an interrupted sweep resumes.
set -euo pipefail
model=$1; build=$2; out=$3; tasks=$4; shots=$5; limit=$6; chunk=$7; shift 7
retentions=("$@")
jobs=${JOBS:-1}; threads=${THREADS:-0}; units=${UNITS:-token chunk}
# per_task MAP TASK: MAP's value for TASK ("N" alone applies to every task).
per_task() {
  [[ $1 =~ ^[0-9]+$ ]] && { echo "$1"; return; }
  local kv; for kv in ${1//,/ }; do [ "${kv%%=*}" = "$2" ] && { echo "${kv#*=}"; return; }; done
  echo 0
}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/samples"
export model build out chunk threads
for t in ${tasks//,/ }; do
  s=$(per_task "$shots" "$t"); n=$(per_task "$limit" "$t")
  echo "$t $s $n 1.0 recomp token"
  for r in "${retentions[@]}"; do
    echo "$t $s $n $r h2o-lru token"
    for u in $units; do echo "$t $s $n $r impress-itf $u"; done
  done
done | xargs -P "$jobs" -L1 bash -c '
  t=$0 shots=$1 limit=$2 r=$3 system=$4 unit=$5
  name="${t}_r${r}_${system}_${unit}"
  f="$out/$name.json"
  [ -s "$f" ] || "$build/impress" eval --model "$model" --task "$t" --shots "$shots" --limit "$limit" \
      --system "$system" --retention "$r" --itf-unit "$unit" --chunk "$chunk" --threads "$threads" \
      --samples "$out/samples/$name.jsonl" --json "$f.tmp" >/dev/null
  [ -s "$f" ] || mv "$f.tmp" "$f"'
python3 - "$here/../tables" "$out" "$model" "$tasks" "$shots" "$limit" "$chunk" "$units" "${retentions[@]}" <<'PY'
import os, sys
here, out, model, tasks, shots, limit, chunk, units, *retentions = sys.argv[1:]
sys.path.insert(0, here)
from paired_test import agreement, compare, load_preds, right
shots_text = f"{shots}-shot" if shots.isdigit() else f"shots {shots}"
limit_text = ("full splits" if limit == "0" else
              f"first {limit} documents per task" if limit.isdigit() else f"documents {limit} (0: full split)")
env = "" if units == "token chunk" else f"UNITS='{units}' "
lines = [f"# Paired accuracy: impress-itf against h2o-lru, {model}, {shots_text}, {limit_text}", "",
         f"`{env}scripts/repro/paired_accuracy.sh {model} build {out} {tasks} {shots} {limit} {chunk} {' '.join(retentions)}`", "",
         (f"The chunk unit over {chunk}-token chunks. " if "chunk" in units.split() else "") +
         "Discordant documents: only one of the two systems answers",
         "correctly; p: exact two-sided McNemar test of equal accuracy (scripts/tables/paired_test.py).", "",
         "| task | n | prefix tokens | retention | impress-itf unit | h2o-lru acc | impress-itf acc | kept share | difference (points) | only h2o-lru right | only impress-itf right | McNemar p |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
import json
fidelity = ["", "Fidelity: the share of documents on which a system predicts what the full prefix KV (recomp)",
            "predicts, right or wrong, and the same McNemar test on it.", "",
            "| task | n | retention | impress-itf unit | h2o-lru agrees | impress-itf agrees | difference (points) | only h2o-lru agrees | only impress-itf agrees | McNemar p |",
            "|---|---|---|---|---|---|---|---|---|---|"]
sample = lambda name: os.path.join(out, "samples", name + ".jsonl")
cells = {unit: [] for unit in units.split()}  # (accuracy difference in points, McNemar p)
def row(a, b, unit=None):
    n, share_a, share_b, only_a, only_b, p = compare(a, b)
    if unit:
        cells[unit].append((100 * (share_b - share_a), p))
    return f"{share_a:.3f} | {share_b:.3f}", f"{100 * (share_b - share_a):+.2f} | {only_a} | {only_b} | {p:.3f} |"
for t in tasks.split(","):
    ref = load_preds(sample(f"{t}_r1.0_recomp_token"), "acc")
    for r in retentions:
        h2o = load_preds(sample(f"{t}_r{r}_h2o-lru_token"), "acc")
        for unit in units.split():
            name = f"{t}_r{r}_impress-itf_{unit}"
            itf = load_preds(sample(name), "acc")
            assert h2o.keys() == itf.keys() == ref.keys(), name
            result = json.load(open(os.path.join(out, name + ".json")))["results"][0]
            shares, test = row(right(h2o), right(itf), unit)
            lines.append(f"| {t} | {len(h2o)} | {result['prefix_tokens']} | {r} | {unit} | {shares} | "
                         f"{result['kept_share']:.2f} | {test}")
            shares, test = row(agreement(h2o, ref), agreement(itf, ref))
            fidelity.append(f"| {t} | {len(h2o)} | {r} | {unit} | {shares} | {test}")
lines.append("")
for unit, c in cells.items():
    gaps = [g for g, _ in c]
    lines.append(f"{unit} unit minus h2o-lru over {len(c)} (task, retention) cells: mean {sum(gaps) / len(c):+.2f} "
                 f"points, largest gap {max(gaps, key=abs):+.2f}, {sum(abs(g) <= 1 + 1e-9 for g in gaps)} within 1 point, "
                 f"{sum(p < 0.05 for _, p in c)} significant at 5%.")
lines += fidelity
text = "\n".join(lines) + "\n"
open(os.path.join(out, "paired.md"), "w").write(text)
print(text)
PY
