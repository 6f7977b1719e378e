#!/usr/bin/env python3
"""Prints what a change to the engine must not move, from `impress run
--json` and `impress eval --json` results: per system and configuration, the
bytes read per tier, chunks read and loaded, K/V chunks per request, kept and
fallback shares, hit rates, per-layer K/V load ratios and accuracy; per eval
task, accuracy, gold log-likelihood and kept and fallback shares. Timing is
left out (it moves with the machine). Two tables from the same commands
before and after a refactor must be identical (diff them).

Usage: behaviour_table.py RESULT.json [RESULT.json ...]
"""
import json
import sys


def run_rows(path, result):
    cfg = result["config"]
    label = f"{cfg['itf_unit']} unit, {'read-ahead' if cfg['prefetch'] else 'no prefetch'}"
    if cfg.get("speculate"):
        label += ", speculate"
    for r in result["runs"]:
        b = r["bytes_read"]
        layers = " ".join(f"{x:.4f}" for x in r["layer_kv_load_ratio"])
        yield (f"| {label} | {r['system']} | {b['gpu']} | {b['cpu']} | {b['disk']} | {r['chunks_read']} | "
               f"{r['chunk_loads']} | {r['kv_chunks_per_request']:.4f} | {r['kept_share']:.6f} | "
               f"{r['fallback_share']:.6f} | {r['hit_rate']['gpu']:.6f} | {r['hit_rate']['cpu']:.6f} | "
               f"{r['speculated_chunks_per_request']:.4f} | {r['acc']:.4f} | {r['recomputed_after_error']} | {layers} |")


def eval_rows(path, result):
    label = f"{result['system']} r{result['retention']} {result['itf_unit']} unit, {result['probe_layout']} probes"
    for r in result["results"]:
        yield (f"| {label} | {r['task']} | {r['n']} | {r['acc']:.6f} | {r['acc_norm']:.6f} | "
               f"{r['gold_loglik_mean']:.6f} | {r['kept_share']:.6f} | {r['fallback_share']:.6f} |")


def results(path):
    with open(path) as f:
        j = json.load(f)
    return j["sweep"] if "sweep" in j else [j]


def main(paths):
    if not paths:
        sys.exit(__doc__.strip().splitlines()[-1])
    runs, evals = [], []
    for p in paths:
        for r in results(p):
            (runs if "runs" in r else evals).extend((run_rows if "runs" in r else eval_rows)(p, r))
    if runs:
        print("| config | system | bytes gpu | bytes cpu | bytes disk | chunks read | chunk loads | KV chunks/req | "
              "kept | fallback | hit gpu | hit cpu | speculated/req | acc | recomputed | K/V load ratio per layer |")
        print("|" + "---|" * 16)
        print("\n".join(runs))
    if evals:
        if runs:
            print()
        print("| eval | task | n | acc | acc_norm | gold loglik | kept | fallback |")
        print("|" + "---|" * 8)
        print("\n".join(evals))


if __name__ == "__main__":
    main(sys.argv[1:])
