#!/usr/bin/env python3
"""Per (ITF unit, system) of two behaviour snapshots' run JSON: the largest
|log-likelihood| difference over every measured request and choice, how many
are bitwise equal, and whether predictions and bytes per tier are the same.
Usage: compare_logliks.py BEFORE_DIR AFTER_DIR"""
import json
import sys


def runs(path):
    j = json.load(open(path))
    out = {}
    for res in (j["sweep"] if "sweep" in j else [j]):
        for r in res["runs"]:
            out[(res["config"]["itf_unit"], r["system"])] = r
    return out


before, after = sys.argv[1:3]
for f in ["run_prefetch", "run_no_prefetch", "run_speculate"]:
    a, b = runs(f"{before}/{f}.json"), runs(f"{after}/{f}.json")
    for k in sorted(a):
        ra, rb = a[k], b[k]
        la = [x for r in ra["per_request"] for x in r["loglik"]]
        lb = [x for r in rb["per_request"] for x in r["loglik"]]
        d = max(abs(x - y) for x, y in zip(la, lb))
        eq = sum(x == y for x, y in zip(la, lb))
        preds = [r["pred"] for r in ra["per_request"]] == [r["pred"] for r in rb["per_request"]]
        print(f"{f} {k[0]} {k[1]}: max |d loglik| {d:.2e}, {eq}/{len(la)} equal, predictions "
              f"{'same' if preds else 'DIFFER'}, bytes {'same' if ra['bytes_read'] == rb['bytes_read'] else 'DIFFER'}")
