#!/usr/bin/env python3
"""Compares `impress run --json` results pairwise: for each (A, B) pair of
files, one row per system both ran, with A's and B's mean and p99 TTFT, I/O
wait and bytes read from all tiers, and B / A for each (above 1: A is lower).
Each pair should come from the same command with one flag changed, run back
to back; `--control SYSTEM` names a system the flag does not affect, whose
ratio is the run-to-run noise.

Usage: compare_runs.py [--control SYSTEM] A1.json B1.json [A2.json B2.json ...]
"""
import json
import os
import sys


def runs(path):
    with open(path) as f:
        result = json.load(f)
    if "sweep" in result:
        sys.exit(f"{path}: a sweep; compare single runs")
    return result["config"], {r["system"]: r for r in result["runs"]}


def total_bytes(r):
    return sum(r["bytes_read"].values())


def main(args):
    control = None
    if args[:1] == ["--control"]:
        control, args = args[1], args[2:]
    if not args or len(args) % 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    print("| task | A | B | system | A mean / p99 ms | B mean / p99 ms | B/A mean | B/A p99 | A / B I/O ms | B/A bytes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for a_path, b_path in zip(args[::2], args[1::2]):
        a_cfg, a = runs(a_path)
        _, b = runs(b_path)
        for system, ra in a.items():
            rb = b.get(system)
            if rb is None:
                continue
            name = f"{system} (control)" if system == control else system
            ta, tb = ra["ttft_ms"], rb["ttft_ms"]
            print(f"| {a_cfg['task']} | {os.path.basename(a_path)} | {os.path.basename(b_path)} | {name} "
                  f"| {ta['mean']:.0f} / {ta['p99']:.0f} | {tb['mean']:.0f} / {tb['p99']:.0f} "
                  f"| {tb['mean'] / ta['mean']:.2f} | {tb['p99'] / ta['p99']:.2f} "
                  f"| {ra['io_ms']['mean']:.0f} / {rb['io_ms']['mean']:.0f} "
                  f"| {total_bytes(rb) / max(total_bytes(ra), 1):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
