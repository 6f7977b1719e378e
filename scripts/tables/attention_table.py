#!/usr/bin/env python3
"""docs/results.md's attention table from impress_attention_bench's JSON
(--benchmark_out=FILE --benchmark_out_format=json, with repetitions): per
shape, the median ms of the project's Attend and of LibTorch's
scaled_dot_product_attention, their ratio and the project's GFLOP/s.

Usage: attention_table.py ATTENTION_BENCH.json
"""
import json
import sys

SHAPES = [("80 new tokens, a quarter of 8K kept (2,048 keys)", "request_8k_quarter"),
          ("80 new tokens, a quarter of 2K kept (512 keys)", "request_2k_quarter"),
          ("80 new tokens, an H2O union (4,096 keys, a mask per head)", "request_h2o_union"),
          ("2,048-token prefill, no prefix", "prefill_2k")]


def ms(b):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def main(path):
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            rows[b["run_name"]] = b
        elif b.get("run_type", "iteration") == "iteration":
            rows.setdefault(b["name"], b)
    print("| shape | impress ms | LibTorch ms | LibTorch / impress | impress GFLOP/s |")
    print("|---|---|---|---|---|")
    for label, shape in SHAPES:
        ours, theirs = rows[f"BM_Attend/{shape}"], rows[f"BM_LibTorch/{shape}"]
        print(f"| {label} | {ms(ours):.2f} | {ms(theirs):.2f} | {ms(theirs) / ms(ours):.2f}x | {ours['GFLOP/s']:.0f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
