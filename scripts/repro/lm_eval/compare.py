#!/usr/bin/env python3
"""Compare `impress eval --samples` with lm-evaluation-harness, document by document.

  python3 scripts/repro/lm_eval/compare.py --ours SAMPLES.jsonl --lm-eval LM_EVAL.json [--out TABLE.md]

Per task: documents, share with the same chosen answer (acc's argmax), acc
of each and their difference in points, and the largest per-choice
log-likelihood difference. Exit 1 when agreement < 99% or |acc diff| > 0.5.
"""
import argparse
import json
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--lm-eval", dest="lm_eval", required=True)
    ap.add_argument("--out")
    ap.add_argument("--command", default="", help="the command that produced --ours, recorded in the table")
    args = ap.parse_args()

    ours = defaultdict(list)
    for line in open(args.ours, encoding="utf-8"):
        d = json.loads(line)
        ours[d["task"]].append(d)
    ref = json.load(open(args.lm_eval))
    rows, ok = [], True
    for task, r in ref["tasks"].items():
        mine = sorted(ours.get(task, []), key=lambda d: d["doc"])
        n = min(len(mine), len(r["docs"]))
        if n == 0:
            continue
        same = sum(mine[i]["pred"] == r["docs"][i]["pred"] for i in range(n))
        acc_ours = sum(mine[i]["pred"] == mine[i]["gold"] for i in range(n)) / n
        acc_ref = sum(r["docs"][i]["pred"] == mine[i]["gold"] for i in range(n)) / n
        ll = max(abs(a - b) for i in range(n) for a, b in zip(mine[i]["loglik"], r["docs"][i]["ll"]))
        agree = same / n
        good = agree >= 0.99 and abs(acc_ours - acc_ref) * 100 <= 0.5
        ok &= good
        rows.append(f"| {task} | {n} | {100 * agree:.2f}% | {acc_ours:.4f} | {acc_ref:.4f} | "
                    f"{100 * (acc_ours - acc_ref):+.2f} | {ll:.1e} | {'yes' if good else 'NO'} |")
    table = ["| task | docs | same answer | acc impress | acc lm-eval | diff (points) | max loglik diff | ok |",
             "|---|---|---|---|---|---|---|---|"] + rows
    text = "\n".join(table)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# SmolLM2-135M {ref.get('shots', 0)}-shot: impress vs lm-evaluation-harness "
                    f"{ref.get('lm_eval_version', '')}\n\n")
            if args.command:
                f.write(f"impress: `{args.command}`\n\n")
            f.write("lm-eval: `python3 scripts/repro/lm_eval/run_lm_eval.py --model models/smollm2-135m "
                    "--out results/lm_eval/smollm2_0shot_lm_eval.json` (HF backend, fp32, CPU, tasks pointed at "
                    "data/)\n\n")
            f.write(text + "\n\nPass: same answer on >= 99% of documents and acc within 0.5 points.\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
