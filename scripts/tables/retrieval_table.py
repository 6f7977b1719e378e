#!/usr/bin/env python3
"""The accuracy table of scripts/repro/retrieval_accuracy.sh's folder: one row per
eval JSON (NAME.json), in the order given.

Usage: scripts/tables/retrieval_table.py DIR NAME [NAME ...]
"""
import json
import os
import sys


def main():
    d, names = sys.argv[1], sys.argv[2:]
    print("| system | retention | questions | haystacks | acc | stderr | kept | fallback |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        j = json.load(open(os.path.join(d, name + ".json")))
        r = j["results"][0]
        ret = "-" if j["system"] == "recomp" else j["retention"]
        print(f"| {name} | {ret} | {r['n']} | {r.get('haystacks', '-')} | {r['acc']:.4f} | {r['acc_stderr']:.4f} "
              f"| {r['kept_share']:.3f} | {r['fallback_share']:.3f} |")


if __name__ == "__main__":
    main()
