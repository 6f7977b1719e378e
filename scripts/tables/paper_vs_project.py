#!/usr/bin/env python3
"""The "paper vs this project" table: one row per figure, the paper's claim
(the figure's JSON records it) beside the headline of our run, which
`impress list figures --json --headlines DIR` computes from the JSON's rows
(src/experiment/figure_headline.h), so every committed figure JSON gives its
row whether or not it recorded a headline.

A figure JSON recorded before figures named their columns by id (the first
measurements: results/figures_chunk, figures_warm64, figures_n48) has only
the columns' display names; with --ids-from REF each such NAME.json takes its
ids from REF/NAME.json, which must list the same display names (a figure's
columns have not changed since), and is read from a copy. Without --ids-from,
or where REF's names differ, the script stops naming the file.

Usage: scripts/tables/paper_vs_project.py [DIR [IMPRESS]] [--ids-from REF] > DIR/paper_vs_project.md
(DIR: default results/figures; IMPRESS: the binary, by default $IMPRESS or
build/impress; the figure names and their order come from `impress list figures`)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def with_ids(d, ref, tmp):
    """A copy of d's figure JSONs in tmp, each without column ids given REF's."""
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(d, name)) as f:
            fig = json.load(f)
        if isinstance(fig, dict) and "columns" in fig and "column_ids" not in fig:
            ref_path = os.path.join(ref, name)
            theirs = json.load(open(ref_path)) if os.path.exists(ref_path) else {}
            if theirs.get("columns") != fig["columns"] or "column_ids" not in theirs:
                sys.exit(f"paper_vs_project: {os.path.join(d, name)}: {ref_path} does not name the same columns by id")
            fig["column_ids"] = theirs["column_ids"]
        with open(os.path.join(tmp, name), "w") as f:
            json.dump(fig, f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default="results/figures")
    ap.add_argument("impress", nargs="?", default=os.environ.get("IMPRESS", "build/impress"))
    ap.add_argument("--ids-from", help="a folder of the same figures recorded with column ids")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        read = a.dir
        if a.ids_from:
            with_ids(a.dir, a.ids_from, tmp)
            read = tmp
        listed = subprocess.run([a.impress, "list", "figures", "--json", "--headlines", read], check=True,
                                capture_output=True, text=True).stdout
        print("| figure | paper | this project | command |")
        print("|---|---|---|---|")
        for entry in json.loads(listed)["figures"]:
            if "headline" not in entry:  # no NAME.json in the folder
                continue
            name = entry["name"]
            with open(os.path.join(read, name + ".json")) as f:
                paper = json.load(f)["paper"]
            print(f"| {name} | {paper} | {entry['headline']} | `impress reproduce {name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
