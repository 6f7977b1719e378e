#!/usr/bin/env python3
"""Selection time per request from run JSONs named BUILD_REP.json in DIR: one
row per file, ITF unit and system, with its parts (importance, decision,
gather), the mean TTFT and the MB read from disk per request.

  select_ms_table.py DIR
"""
import json, glob, os, sys
d = sys.argv[1]
print("| build | run | unit | select ms | importance | decision | gather | TTFT mean ms | MB disk / request |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(d, "*_[0-9].json"))):
    j = json.load(open(f))
    b, rep = os.path.basename(f)[:-5].split("_")
    for p in j["sweep"]:
        for r in p["runs"]:
            s = r["select_ms"]
            disk = r["bytes_read"]["disk"] / r["requests"] / 1e6 if isinstance(r.get("bytes_read"), dict) and "disk" in r["bytes_read"] else float("nan")
            print(f"| {b} | {rep} | {p['config']['itf_unit']} | {s['mean']:.1f} | {s['importance']:.1f} | {s['decision']:.1f} | {s['gather']:.1f} | {r['ttft_ms']['mean']:.0f} | {disk:.1f} |")
