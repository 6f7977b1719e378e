#!/usr/bin/env bash
# Accuracy against retention (the paper's Fig. 15) for recomp, h2o-lru and
# impress-itf on all four tasks, from impress eval's JSON.
# Usage: scripts/repro/accuracy_vs_retention.sh MODEL BUILD OUT_DIR [SHOTS] [LIMIT]
# JOBS=N runs N evals at once, each with THREADS LibTorch threads (on small
# models N single-threaded processes finish sooner than one N-threaded one).
# ITF_UNIT=chunk CHUNK=C evaluates impress-itf with the chunk-granular agreed
# set over C-token chunks (files impress-itf-chunkC_r*.json); the table shows
# every impress-itf variant found in OUT_DIR.
# A run whose JSON exists is skipped, so an interrupted sweep resumes.
set -euo pipefail
model=$1; build=$2; out=$3; shots=${4:-5}; limit=${5:-0}
jobs=${JOBS:-1}; threads=${THREADS:-0}; unit=${ITF_UNIT:-token}; chunk=${CHUNK:-64}
itf=impress-itf; [ "$unit" = chunk ] && itf=impress-itf-chunk$chunk
mkdir -p "$out"
export model build out shots limit threads unit chunk
{ echo "recomp 1.0 recomp"; for r in 0.5 0.25 0.1 0.05; do echo "h2o-lru $r h2o-lru"; echo "impress-itf $r $itf"; done; } |
  xargs -P "$jobs" -L1 bash -c '
    f="$out/$2_r$1.json"
    [ -s "$f" ] || "$build/impress" eval --model "$model" --task all --shots "$shots" --limit "$limit" \
        --system "$0" --retention "$1" --itf-unit "$unit" --chunk "$chunk" --threads "$threads" --json "$f.tmp" >/dev/null
    [ -s "$f" ] || mv "$f.tmp" "$f"'
python3 - "$out" "$shots" "$limit" "$model" <<'PY'
import glob, json, sys, os
out, shots, limit, model = sys.argv[1:]
def load(name, r):
    return {x["task"]: x for x in json.load(open(os.path.join(out, f"{name}_r{r}.json")))["results"]}
rec = load("recomp", "1.0")
tasks = list(rec)
retentions = ["0.5", "0.25", "0.1", "0.05"]
variants = ["impress-itf"] + sorted({os.path.basename(p).split("_r")[0]
                                     for p in glob.glob(os.path.join(out, "impress-itf-chunk*_r*.json"))},
                                    key=lambda v: int(v.rsplit("chunk", 1)[1]))
variants = [v for v in variants if all(os.path.exists(os.path.join(out, f"{v}_r{r}.json")) for r in retentions)]
lines = [f"# Accuracy vs retention, {model}, {shots}-shot, "
         f"{'first ' + limit + ' documents per task' if limit != '0' else 'full splits'}", "",
         f"`scripts/repro/accuracy_vs_retention.sh {model} build {out} {shots} {limit}`", ""]
for v in variants[1:]:
    lines += [f"`ITF_UNIT=chunk CHUNK={v.rsplit('chunk', 1)[1]} scripts/repro/accuracy_vs_retention.sh {model} build {out} "
              f"{shots} {limit}`", ""]
lines += ["| retention | system | " + " | ".join(tasks) + " | mean | kept share | fallback share (itf) |",
          "|---|---|" + "---|" * (len(tasks) + 3)]
lines.append("| 1.0 | recomp | " + " | ".join(f"{rec[t]['acc']:.3f}" for t in tasks) +
             f" | {sum(rec[t]['acc'] for t in tasks) / len(tasks):.3f} | 1.00 | |")
gaps = {v: [] for v in variants}
for r in retentions:
    h = load("h2o-lru", r)
    for name in ["h2o-lru"] + variants:
        res = load(name, r)
        kept = sum(res[t]["kept_share"] for t in tasks) / len(tasks)
        fb = sum(res[t]["fallback_share"] for t in tasks) / len(tasks) if name != "h2o-lru" else None
        lines.append(f"| {r} | {name} | " + " | ".join(f"{res[t]['acc']:.3f}" for t in tasks) +
                     f" | {sum(res[t]['acc'] for t in tasks) / len(tasks):.3f} | {kept:.2f} | "
                     f"{'' if fb is None else f'{fb:.2f}'} |")
        if name != "h2o-lru":
            gaps[name] += [100 * (res[t]["acc"] - h[t]["acc"]) for t in tasks]
lines.append("")
for v, g in gaps.items():
    lines.append(f"{v} minus h2o-lru over {len(g)} (task, retention) cells: mean {sum(g)/len(g):+.2f} "
                 f"points, largest gap {max(g, key=abs):+.2f} points, {sum(abs(x) <= 1 + 1e-9 for x in g)} cells within 1 point.")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "accuracy_vs_retention.md"), "w").write(text)
print(text)
PY
