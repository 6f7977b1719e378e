#!/usr/bin/env python3
"""Paired comparison of two systems' accuracy on the same documents.

Reads the per-document records `impress eval --samples` writes for system A
and system B (same tasks, shots, seed and documents) and prints, per task,
both accuracies, the documents only one of them got right, and the exact
two-sided McNemar p-value: under "A and B are equally accurate" each of the
b + c discordant documents is A's with probability 1/2, so
p = min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)]).

Usage: scripts/paired_test.py A.jsonl B.jsonl [--metric acc|acc_norm] [--label-a A] [--label-b B]
"""
import argparse
import json
import math
import sys


def load(path, metric):
    key = "pred" if metric == "acc" else "pred_norm"
    right = {}
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                right[(r["task"], r["doc"])] = r[key] == r["gold"]
            except (ValueError, KeyError) as e:
                sys.exit(f"{path}:{line_no}: not an eval samples record ({e})")
    return right


def mcnemar_exact(b, c):
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--metric", choices=["acc", "acc_norm"], default="acc")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    args = ap.parse_args()
    a, b = load(args.a, args.metric), load(args.b, args.metric)
    if a.keys() != b.keys():
        sys.exit(f"{args.b}: scores other documents than {args.a} ({len(a)} vs {len(b)} records)")
    tasks = list(dict.fromkeys(t for t, _ in a))
    print(f"| task | n | {args.label_a} {args.metric} | {args.label_b} {args.metric} | B - A points | "
          f"only A right | only B right | McNemar p |")
    print("|---|---|---|---|---|---|---|---|")
    for t in tasks:
        docs = [k for k in a if k[0] == t]
        n = len(docs)
        only_a = sum(a[k] and not b[k] for k in docs)
        only_b = sum(b[k] and not a[k] for k in docs)
        acc_a = sum(a[k] for k in docs) / n
        acc_b = sum(b[k] for k in docs) / n
        print(f"| {t} | {n} | {acc_a:.3f} | {acc_b:.3f} | {100 * (acc_b - acc_a):+.2f} | {only_a} | {only_b} | "
              f"{mcnemar_exact(only_a, only_b):.3f} |")


if __name__ == "__main__":
    main()
