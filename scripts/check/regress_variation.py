#!/usr/bin/env python3
"""The spread of the accuracy regression's numbers over runs of the same code
(regress_variation.sh's files), beside the expected file's tolerances and its
committed numbers: per metric, the largest difference between any two runs and
between any run and the expected file, and the row where it is largest.

Usage: regress_variation.py EXPECTED RUN.json...
"""
import itertools
import json
import sys


def rows(path):
    d = json.load(open(path))
    return {(r["task"], r["system"]): r for r in d["results"]}, d


def main(expected, runs):
    want, exp = rows(expected)
    got = {p: rows(p)[0] for p in runs}
    tol = exp["tolerance"]
    print(f"{len(runs)} runs of `impress regress --update` (regress_variation.sh) against {expected}\n")
    print("| metric | tolerance | largest run-to-run difference | its row | largest run vs expected | its row |")
    print("|---|---|---|---|---|---|")
    for metric in ("acc", "acc_norm", "gold_loglik_mean"):
        between = max(((abs(got[a][k][metric] - got[b][k][metric]), k)
                       for a, b in itertools.combinations(runs, 2) for k in want), default=(0.0, None))
        against = max(((abs(got[p][k][metric] - want[k][metric]), k) for p in runs for k in want), default=(0.0, None))
        fmt = lambda v: f"{v:.3g}"
        print(f"| {metric} | {tol[metric]} | {fmt(between[0])} | {'/'.join(between[1]) if between[0] else '-'} | "
              f"{fmt(against[0])} | {'/'.join(against[1]) if against[0] else '-'} |")
    flips = sum(1 for p in runs for k in want for m in ("acc", "acc_norm") if got[p][k][m] != want[k][m])
    print(f"\nrows whose acc or acc_norm differ from the expected file, over all runs: {flips}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
