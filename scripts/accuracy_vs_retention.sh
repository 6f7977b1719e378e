#!/usr/bin/env bash
# Accuracy against retention (the paper's Fig. 15) for recomp, h2o-lru and
# impress-itf on all four tasks, from impress eval's JSON.
# Usage: scripts/accuracy_vs_retention.sh MODEL BUILD OUT_DIR [SHOTS] [LIMIT]
# JOBS=N runs N evals at once, each with THREADS LibTorch threads (on small
# models N single-threaded processes finish sooner than one N-threaded one).
# A run whose JSON exists is skipped, so an interrupted sweep resumes.
set -euo pipefail
model=$1; build=$2; out=$3; shots=${4:-5}; limit=${5:-0}
jobs=${JOBS:-1}; threads=${THREADS:-0}
mkdir -p "$out"
export model build out shots limit threads
{ echo "recomp 1.0"; for r in 0.5 0.25 0.1 0.05; do echo "h2o-lru $r"; echo "impress-itf $r"; done; } |
  xargs -P "$jobs" -L1 bash -c '
    f="$out/$0_r$1.json"
    [ -s "$f" ] || "$build/impress" eval --model "$model" --task all --shots "$shots" --limit "$limit" \
        --system "$0" --retention "$1" --threads "$threads" --json "$f.tmp" >/dev/null
    [ -s "$f" ] || mv "$f.tmp" "$f"'
python3 - "$out" "$shots" "$limit" "$model" <<'PY'
import json, sys, os
out, shots, limit, model = sys.argv[1:]
def load(s, r):
    return {x["task"]: x for x in json.load(open(os.path.join(out, f"{s}_r{r}.json")))["results"]}
rec = load("recomp", "1.0")
tasks = list(rec)
lines = [f"# Accuracy vs retention, {model}, {shots}-shot, "
         f"{'first ' + limit + ' documents per task' if limit != '0' else 'full splits'}", "",
         f"`scripts/accuracy_vs_retention.sh {model} build {out} {shots} {limit}`", "",
         "| retention | system | " + " | ".join(tasks) + " | mean | fallback share (itf) |",
         "|---|---|" + "---|" * (len(tasks) + 2)]
lines.append("| 1.0 | recomp | " + " | ".join(f"{rec[t]['acc']:.3f}" for t in tasks) +
             f" | {sum(rec[t]['acc'] for t in tasks) / len(tasks):.3f} | |")
gaps = []
for r in ["0.5", "0.25", "0.1", "0.05"]:
    h, i = load("h2o-lru", r), load("impress-itf", r)
    for name, res in (("h2o-lru", h), ("impress-itf", i)):
        fb = sum(res[t]["fallback_share"] for t in tasks) / len(tasks) if name == "impress-itf" else None
        lines.append(f"| {r} | {name} | " + " | ".join(f"{res[t]['acc']:.3f}" for t in tasks) +
                     f" | {sum(res[t]['acc'] for t in tasks) / len(tasks):.3f} | {'' if fb is None else f'{fb:.2f}'} |")
    gaps += [100 * (i[t]["acc"] - h[t]["acc"]) for t in tasks]
lines += ["", f"impress-itf minus h2o-lru over {len(gaps)} (task, retention) cells: mean {sum(gaps)/len(gaps):+.2f} "
          f"points, largest gap {max(gaps, key=abs):+.2f} points."]
text = "\n".join(lines) + "\n"
open(os.path.join(out, "accuracy_vs_retention.md"), "w").write(text)
print(text)
PY
