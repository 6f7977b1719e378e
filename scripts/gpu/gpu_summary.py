#!/usr/bin/env python3
"""summary.md of one device call (scripts/gpu/gpu_check.sh) from what its work
folder holds so far: rewritten after every step, so a call cut short still
says what it got. Reads machine.txt, steps.txt, cuda_tests.log, model.txt,
run_<task>.json, store_vs_fio.txt, selection_<2k|8k>.json,
digest_8k.json and digest_8k_ahead2.json, each when present.

Usage: scripts/gpu/gpu_summary.py WORK_DIR
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tables"))  # selection_table
from selection_table import table as selection_table  # noqa: E402
import digest_table  # noqa: E402


def config_of(d):
    """A run's configuration, or a sweep's first point's."""
    return d["sweep"][0]["config"] if "sweep" in d else d.get("config", {})


def read(path):
    return open(path).read() if os.path.exists(path) else None


def main():
    out = sys.argv[1]
    print("# Device check\n")
    m = read(f"{out}/machine.txt")
    if m:
        print("Machine: " + "; ".join(l.strip() for l in m.splitlines() if l.strip()) + "\n")
    s = read(f"{out}/steps.txt")
    if s:
        print("| step | rc | seconds |\n|---|---|---|")
        for line in s.splitlines():
            name, rc, secs = line.split("\t")
            print(f"| {name} | {rc} | {secs} |")
        print()
    t = read(f"{out}/cuda_tests.log")
    if t:
        # The log holds one or more gtest runs (one per suite); a crashed run
        # has no summary line, its crash_trace line names the test.
        passed = sum(int(n) for n in re.findall(r"^\[  PASSED  \] (\d+) test", t, re.M))
        failed = [n.rstrip(",") for n in re.findall(r"^\[  FAILED  \] (\S+)", t, re.M) if not n.isdigit()]
        skipped = sum(int(n) for n in re.findall(r"^\[  SKIPPED \] (\d+) test", t, re.M))
        crashed = re.findall(r"crash_trace: signal (.*?) in test (\S+?);", t)
        print(f"CUDA tests: {passed} passed, {len(set(failed))} failed, {skipped} skipped"
              + (": " + ", ".join(sorted(set(failed))) if failed else "")
              + "".join(f"; crashed ({sig}) in {name}" for sig, name in crashed) + "\n")
    mt = read(f"{out}/model.txt")
    if mt:
        print("Model: " + mt.strip() + "\n")
    for task in ("piqa", "rte"):
        p = f"{out}/run_{task}.json"
        if not os.path.exists(p):
            continue
        d = json.load(open(p))
        c = d.get("config", {})
        print(f"## impress run, {task}, {c.get('device', '?')}, {c.get('pool')} x {c.get('prefix_tokens')}-token prefixes, "
              f"{c.get('requests')} measured requests\n")
        print("| system | TTFT mean ms | p99 ms | I/O share | copy hidden share | host syncs / layer (mean, max; fallback, other layers) "
              "| MB below the caches / request | fallback share | acc |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in d["runs"]:
            b = r["bytes_read"]
            below = (b["disk"] + b.get("remote", 0)) / max(1, r["requests"]) / 1e6
            hidden = r.get("device_timeline", {}).get("copy_hidden_share")
            h = r.get("host_syncs_per_layer", {})
            print(f"| {r['system']} | {r['ttft_ms']['mean']:.1f} | {r['ttft_ms']['p99']:.1f} | {r['io_share']:.2f} | "
                  f"{'-' if hidden is None else f'{hidden:.2f}'} | {h.get('mean', 0):.2f}, {h.get('max', 0)}; "
                  f"{h.get('fallback_layers', 0):.2f}, {h.get('other_layers', 0):.2f} | {below:.1f} | "
                  f"{r['fallback_share']:.2f} | {r['acc']:.3f} |")
        print()
    f = read(f"{out}/store_vs_fio.txt")
    if f:
        print("Store read bandwidth against fio, this machine's disk:\n\n```\n" + f.strip() + "\n```")
    for n in ("2k", "8k"):
        p = f"{out}/selection_{n}.json"
        if not os.path.exists(p):
            continue
        c = config_of(json.load(open(p)))
        print(f"\n## Selection's cost, {c.get('task', '?')}, {c.get('device', '?')}, {c.get('pool')} x {c.get('prefix_tokens')}-token "
              f"prefixes, {c.get('requests')} measured requests (results/selection/README.md's command)\n")
        print("\n".join(selection_table(p)))
    for name, what in (("digest_8k", "results/digest/ttft8k_adaptive's command"),
                       ("digest_8k_ahead2", "results/digest/floor8k's pair, every read two layers ahead")):
        p = f"{out}/{name}.json"
        if not os.path.exists(p):
            continue
        c = config_of(json.load(open(p)))
        print(f"\n## The digest system where loading dominates, {c.get('task', '?')}, {c.get('device', '?')}, {c.get('pool')} x "
              f"{c.get('prefix_tokens')}-token prefixes, {c.get('requests')} measured requests ({what})\n")
        digest_table.ttft(p)

if __name__ == "__main__":
    main()
