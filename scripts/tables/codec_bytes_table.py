#!/usr/bin/env python3
"""Disk MB per measured request for each codec, same selection, caches off
(scripts/repro/results.sh, step codec-bytes: DIR/bytes_{fp16,int8,int4}.json), one
row per (system, ITF unit; "-" for systems without one), with fp16's bytes
over each codec's.

Usage: codec_bytes_table.py DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from selection_table import points  # noqa: E402  ((itf unit, system), run) of a run or sweep JSON

CODECS = ("fp16", "int8", "int4")


def per_request(path):
    """{(system, unit): disk MB per measured request} of a run JSON (a sweep or one point)."""
    out = {}
    for (unit, system), r in points(path):
        key = (system, unit if system.startswith("impress") else "-")
        out.setdefault(key, r["bytes_read"]["disk"] / 1e6 / r["requests"])
    return out


def main(folder):
    mb = {c: per_request(os.path.join(folder, f"bytes_{c}.json")) for c in CODECS}
    print("| system | unit | fp16 MB/request | int8 | int4 | fp16 / int8 | fp16 / int4 |")
    print("|---|---|---|---|---|---|---|")
    for key in mb["fp16"]:
        f, i8, i4 = (mb[c][key] for c in CODECS)
        print(f"| {key[0]} | {key[1]} | {f:.2f} | {i8:.2f} | {i4:.2f} | {f / i8:.2f} | {f / i4:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
