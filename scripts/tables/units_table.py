#!/usr/bin/env python3
"""docs/results.md's tables of the two ITF units against h2o-lfu, from
`impress run --json` results: per (unit, system) mean / p99 TTFT, I/O wait,
MB read from every tier, optionally the K/V chunks loaded per layer (the mean
of layer_kv_load_ratio), and h2o-lfu's TTFT, p99, I/O time and bytes over the
system's in the same unit's run.

Usage: units_table.py [--chunks] --systems S1,S2,... UNIT=RUN.json ...
(RUN.json: one run or a sweep; the point whose itf_unit is UNIT is used)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from selection_table import points  # noqa: E402  ((itf unit, system), run) of a run or sweep JSON


def point(path, unit):
    rows = {system: r for (u, system), r in points(path) if u == unit}
    if not rows:
        sys.exit(f"{path}: no run with itf_unit {unit}")
    return rows


def mb(r):
    return sum(r["bytes_read"][t] for t in ("gpu", "cpu", "disk")) / 1e6


def main(args):
    chunks = "--chunks" in args
    args = [a for a in args if a != "--chunks"]
    if len(args) < 3 or args[0] != "--systems":
        sys.exit(__doc__)
    systems, runs = args[1].split(","), args[2:]
    head = "| unit | system | TTFT mean / p99 ms | I/O ms | MB read (GPU + CPU + disk) |"
    head += " K/V chunks per layer |" if chunks else ""
    print(head + " vs h2o-lfu: TTFT, p99, I/O time, bytes |")
    print("|---" * (head.count("|")) + "|")
    for spec in runs:
        unit, path = spec.split("=", 1)
        rows = point(path, unit)
        base = rows["h2o-lfu"]
        for name in systems:
            r = rows[name]
            cells = [unit, name, f"{r['ttft_ms']['mean']:.0f} / {r['ttft_ms']['p99']:.0f}",
                     f"{r['io_ms']['mean']:.0f}", f"{mb(r):.0f}"]
            if chunks:
                ratio = r["layer_kv_load_ratio"]
                cells.append(f"{sum(ratio) / len(ratio):.2f}")
            ratios = "" if name == "h2o-lfu" else ", ".join(
                f"{a / b:.2f}x" for a, b in ((base["ttft_ms"]["mean"], r["ttft_ms"]["mean"]),
                                              (base["ttft_ms"]["p99"], r["ttft_ms"]["p99"]),
                                              (base["io_ms"]["mean"], r["io_ms"]["mean"]), (mb(base), mb(r))))
            print("| " + " | ".join(cells + [ratios]) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
