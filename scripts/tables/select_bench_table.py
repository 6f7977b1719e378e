#!/usr/bin/env python3
"""docs/results.md's two selection-cost tables from impress_select_bench's
JSON (--benchmark_out=FILE --benchmark_out_format=json): µs per layer of each
step at 16 and 64 new tokens, and the real store layer's selection in its parts.

Usage: select_bench_table.py SELECT_BENCH.json
"""
import json
import sys

STEPS = [("attention, full prefix", "BM_AttendFullPrefix"), ("H2O", "BM_SelectH2O"),
         ("ITF trusted", "BM_SelectItfTrusted"), ("ITF falling back", "BM_SelectItfFallback"),
         ("H2O importance (9 heads)", "BM_H2OImportance"), ("probe importance (3 heads)", "BM_ItfProbeImportance"),
         ("its score matmul alone", "BM_ItfProbeScoresMatmul"), ("probe top-k", "BM_ItfTopKSets"),
         ("Jaccard", "BM_ItfJaccard"), ("agreed set", "BM_ItfAgreedSet")]
STORE = [("h2o-lfu", "BM_Store/h2o-lfu/64"), ("impress-itf, token unit", "BM_Store/impress-itf/token/64"),
         ("impress-itf, chunk unit", "BM_Store/impress-itf/chunk/64")]


def us(b):
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def fmt(v):
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def main(path):
    rows = {b["name"].split("/iterations")[0]: b for b in json.load(open(path))["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"}
    print("| new tokens | " + " | ".join(label for label, _ in STEPS) + " |")
    print("|---|" + "---|" * len(STEPS))
    for n in (16, 64):
        print(f"| {n} | " + " | ".join(fmt(us(rows[f"{name}/{n}"])) for _, name in STEPS) + " |")
    print()
    print("| real store layer, 64 new tokens | select | importance | decision | gather |")
    print("|---|---|---|---|---|")
    for label, name in STORE:
        b = rows[name]
        print(f"| {label} | " + " | ".join(fmt(b[k]) for k in ("select_us", "importance_us", "decision_us", "gather_us")) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
