#!/usr/bin/env python3
"""The codec comparison as docs/results.md shows it: per slow tier and
metric, h2o-lfu at fp16, IMPRESS (token unit) at fp16, IMPRESS (chunk unit)
at int4, and the last against the second.

Usage: scripts/tables/codec_doc_table.py CODEC.json ROW...
       scripts/tables/codec_doc_table.py --runs DIR ROW...
The first reads the codec figure's JSON (`impress reproduce codec`); the
second the run JSONs DIR/TIER_fp16.json (h2o-lfu and impress at the token
unit) and DIR/TIER_int4.json (impress at the chunk unit), as
results/codec/ttft8k/measure.sh writes them. ROW is TIER:METRIC, TIER a slow
tier (disk, cluster) and METRIC ttft (mean / p99 ms), mb (MB below the GPU
per request; the figure only) or io (I/O share of TTFT).
"""
import json
import os
import sys

LABELS = {"ttft": "TTFT mean / p99 ms", "mb": "MB below the GPU per request", "io": "I/O share of TTFT"}
COLUMNS = [("h2o-lfu", "token", "fp16"), ("impress", "token", "fp16"), ("impress", "chunk", "int4")]


def figure_cells(path):
    fig = json.load(open(path))
    table = [dict(zip(fig["column_ids"], r)) for r in fig["rows"]]

    def cells(tier):
        return [[r for r in table if (r["slow_tier"], r["system"], r["itf_unit"], r["codec"]) == (tier, *c)][0]
                for c in COLUMNS]
    return cells


def run_cells(folder):
    def cells(tier):
        out = []
        for system, _, codec in COLUMNS:
            runs = json.load(open(os.path.join(folder, f"{tier}_{codec}.json")))["runs"]
            r = [x for x in runs if x["system"] == system][0]
            out.append({"ttft_mean_ms": r["ttft_ms"]["mean"], "ttft_p99_ms": r["ttft_ms"]["p99"],
                        "io_share": r["io_share"]})
        return out
    return cells


def row(tier, metric, cells):
    base, best = cells[1], cells[2]
    if metric == "ttft":
        shown = [f"{c['ttft_mean_ms']:.0f} / {c['ttft_p99_ms']:.0f}" for c in cells]
        vs = f"{base['ttft_mean_ms'] / best['ttft_mean_ms']:.2f}x / {base['ttft_p99_ms'] / best['ttft_p99_ms']:.2f}x"
    elif metric == "mb":
        shown = [f"{c['mb_below_gpu_per_request']:.1f}" for c in cells]
        vs = f"{base['mb_below_gpu_per_request'] / best['mb_below_gpu_per_request']:.1f}x fewer"
    else:
        shown = [f"{c['io_share']:.2f}" for c in cells]
        vs = ""
    return "| " + " | ".join([f"{tier}, {LABELS[metric]}"] + shown) + (f" | {vs} |" if vs else " | |")


def main(args):
    cells = run_cells(args[1]) if args[0] == "--runs" else figure_cells(args[0])
    print("| slow tier | h2o-lfu fp16 | IMPRESS (token unit) fp16 | IMPRESS chunk unit, int4 | "
          "chunk int4 vs token fp16 |")
    print("|---|---|---|---|---|")
    for spec in args[2:] if args[0] == "--runs" else args[1:]:
        tier, metric = spec.split(":")
        print(row(tier, metric, cells(tier)))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1:])
