#!/usr/bin/env python3
"""docs/results.md's TTFT table of every system on the real disk and with the
disk capped, from the two `impress run --json` results (scripts/repro/results.sh,
step ttft): mean / p99 TTFT and I/O wait in ms, disk MB read and K/V chunks
read per request in the capped run; a system missing from the capped run
(recomp, which reads no KV) says so.

Usage: ttft_doc_table.py REAL.json CAPPED.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from selection_table import points  # noqa: E402  ((itf unit, system), run) of a run or sweep JSON


def runs(path):
    return {system: r for (_, system), r in points(path)}


def main(real_path, capped_path):
    real, capped = runs(real_path), runs(capped_path)
    print("| system | real disk (1.4 GB/s) | I/O | disk capped at 128 MB/s | I/O | disk MB | K/V chunks |")
    print("|---|---|---|---|---|---|---|")
    for name, r in real.items():
        cells = [f"{r['ttft_ms']['mean']:.0f} / {r['ttft_ms']['p99']:.0f}", f"{r['io_ms']['mean']:.1f}"]
        c = capped.get(name)
        if c is None:
            cells += ["not run (reads no KV)", "0", "0", "0"]
        else:
            cells += [f"{c['ttft_ms']['mean']:.0f} / {c['ttft_ms']['p99']:.0f}", f"{c['io_ms']['mean']:.0f}",
                      f"{c['bytes_read']['disk'] / 1e6:.0f}", f"{c['kv_chunks_per_request']:.0f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    accs = sorted({r["acc"] for r in list(real.values()) + list(capped.values())})
    print(f"\naccuracy over the measured requests: {', '.join(f'{a:.3f}' for a in accs)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
