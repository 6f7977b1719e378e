#!/usr/bin/env python3
"""Fidelity and accuracy of the two IMPRESS probe layouts against H2O.

Reads `impress eval --samples` files of recomp, h2o-lru and impress-itf with
the first probe heads (BASE_DIR/samples/{task}_r{r}_{system}_token.jsonl, as
scripts/repro/paired_accuracy.sh names them) and of impress-itf with
--probe-layout spread (SPREAD_DIR/samples/{task}_r{r}_impress-itf-spread_token.jsonl,
its JSON beside), and prints per task and retention each system's accuracy,
its agreement with recomp's answers, spread's fallback share, and the exact
McNemar p of spread against first and against H2O on agreement.

Usage: scripts/tables/probe_layout_table.py BASE_DIR SPREAD_DIR TASKS RETENTION...
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_test import agreement, compare, load_preds, right  # noqa: E402


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    base, spread, tasks, *retentions = sys.argv[1:]
    sample = lambda d, name: os.path.join(d, "samples", name + ".jsonl")
    print("| task | n | retention | h2o-lru acc | first acc | spread acc | h2o-lru agrees | first agrees | "
          "spread agrees | spread vs first p | spread vs h2o-lru p | spread fallback share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in tasks.split(","):
        ref = load_preds(sample(base, f"{t}_r1.0_recomp_token"), "acc")
        for r in retentions:
            h2o = load_preds(sample(base, f"{t}_r{r}_h2o-lru_token"), "acc")
            first = load_preds(sample(base, f"{t}_r{r}_impress-itf_token"), "acc")
            name = f"{t}_r{r}_impress-itf-spread_token"
            sp = load_preds(sample(spread, name), "acc")
            if not (h2o.keys() == first.keys() == sp.keys() == ref.keys()):
                sys.exit(f"{sample(spread, name)}: scores other documents than {base}")
            fallback = json.load(open(os.path.join(spread, name + ".json")))["results"][0]["fallback_share"]
            acc = [compare(right(h2o), right(x))[2] for x in (h2o, first, sp)]
            agree = [compare(agreement(h2o, ref), agreement(x, ref))[2] for x in (h2o, first, sp)]
            p_first = compare(agreement(first, ref), agreement(sp, ref))[5]
            p_h2o = compare(agreement(h2o, ref), agreement(sp, ref))[5]
            print(f"| {t} | {len(ref)} | {r} | " + " | ".join(f"{x:.3f}" for x in acc + agree) +
                  f" | {p_first:.3f} | {p_h2o:.3f} | {fallback:.2f} |")


if __name__ == "__main__":
    main()
