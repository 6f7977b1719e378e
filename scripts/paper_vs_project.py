#!/usr/bin/env python3
"""The "paper vs this project" table: one row per figure, the paper's claim
(the figure's JSON records it) beside the headline of our run, which
`impress list figures --json --headlines DIR` computes from the JSON's rows
(src/experiment/figure_headline.h), so every committed figure JSON gives its
row whether or not it recorded a headline.

Usage: scripts/paper_vs_project.py [results/figures [IMPRESS]] > results/figures/paper_vs_project.md
(IMPRESS: the binary, by default $IMPRESS or build/impress; the figure names
and their order come from `impress list figures`)
"""
import json
import os
import subprocess
import sys


def main(args):
    d = args[0] if args else "results/figures"
    impress = args[1] if len(args) > 1 else os.environ.get("IMPRESS", "build/impress")
    listed = subprocess.run([impress, "list", "figures", "--json", "--headlines", d], check=True, capture_output=True,
                            text=True).stdout
    print("| figure | paper | this project | command |")
    print("|---|---|---|---|")
    for entry in json.loads(listed)["figures"]:
        if "headline" not in entry:  # no NAME.json in d
            continue
        name = entry["name"]
        with open(os.path.join(d, name + ".json")) as f:
            paper = json.load(f)["paper"]
        print(f"| {name} | {paper} | {entry['headline']} | `impress reproduce {name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
