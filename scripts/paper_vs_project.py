#!/usr/bin/env python3
"""The "paper vs this project" table: one row per figure, the paper's claim
beside the headline of our run, both as the figure's JSON records them
(`impress reproduce` computes the headline from the figure's rows:
src/experiment/figure_headline.h).

Usage: scripts/paper_vs_project.py [results/figures [build/impress]] > results/figures/paper_vs_project.md
(the figure names and their order come from `impress list figures`)
"""
import json
import os
import subprocess
import sys


def load(d, name):
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        fig = json.load(f)
    if "headline" not in fig:
        print(f"{path}: no headline (written before figures recorded one; rerun `impress reproduce {name}`)",
              file=sys.stderr)
    return fig


def main(args):
    d = args[0] if args else "results/figures"
    impress = args[1] if len(args) > 1 else "build/impress"
    names = subprocess.run([impress, "list", "figures"], check=True, capture_output=True, text=True).stdout.split()
    print("| figure | paper | this project | command |")
    print("|---|---|---|---|")
    for name in names:
        f = load(d, name)
        if f is None:
            continue
        print(f"| {name} | {f['paper']} | {f.get('headline', '')} | `impress reproduce {name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
