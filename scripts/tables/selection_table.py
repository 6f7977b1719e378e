#!/usr/bin/env python3
"""Prints selection's cost per system from `impress run --json` results (a
sweep over --itf-unit included): mean TTFT, selection ms in its parts
(importance, decision, gather), selection's share of TTFT, and the cache
policy's placement ms beside it ("-" where a result does not report it
apart: it was then inside gather). With two files, before and after, one
row per (ITF unit, system) with both, for a change that must not move what
the systems compute (bytes read and log-likelihoods are checked equal).

Usage: selection_table.py RUN.json [AFTER.json]
"""
import json
import sys


def points(path):
    with open(path) as f:
        j = json.load(f)
    for p in j["sweep"] if "sweep" in j else [j]:
        for r in p["runs"]:
            yield (p["config"]["itf_unit"], r["system"]), r


def cells(r):
    s, ttft = r["select_ms"], r["ttft_ms"]["mean"]
    placement = r.get("placement_ms", {}).get("mean")
    return [f"{ttft:.0f}", f"{s['mean']:.1f}", f"{s.get('importance', 0):.1f}", f"{s.get('decision', 0):.1f}",
            f"{s.get('gather', 0):.1f}", f"{s['mean'] / ttft:.3f}" if ttft else "-",
            "-" if placement is None else f"{placement:.1f}"]


def same_work(a, b):
    """Bytes per tier and every request's log-likelihoods: what a speed-up must not move."""
    la = [x["loglik"] for x in a["per_request"]]
    lb = [x["loglik"] for x in b["per_request"]]
    return a["bytes_read"] == b["bytes_read"] and la == lb


COLS = ["ttft ms", "select ms", "importance", "decision", "gather", "select / ttft", "placement ms"]


def table(path):
    """One result's table, a line per (ITF unit, system)."""
    lines = ["| unit | system | " + " | ".join(COLS) + " |", "|---" * (len(COLS) + 2) + "|"]
    for (unit, sys_), r in points(path):
        lines.append(f"| {unit} | {sys_} | " + " | ".join(cells(r)) + " |")
    return lines


def main(args):
    if len(args) not in (1, 2):
        sys.exit(__doc__.strip().splitlines()[-1])
    if len(args) == 1:
        print("\n".join(table(args[0])))
        return
    before, after = dict(points(args[0])), dict(points(args[1]))
    print("| unit | system | " + " | ".join(f"{c} (before → after)" for c in COLS) + " | same bytes and log-likelihoods |")
    print("|---" * (len(COLS) + 3) + "|")
    for key, b in before.items():
        if key not in after or b["select_ms"]["mean"] <= 0 and after[key]["select_ms"]["mean"] <= 0:
            continue
        a = after[key]
        pairs = [f"{x} → {y}" for x, y in zip(cells(b), cells(a))]
        print(f"| {key[0]} | {key[1]} | " + " | ".join(pairs) + f" | {'yes' if same_work(b, a) else 'NO'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
