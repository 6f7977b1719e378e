#!/usr/bin/env python3
"""The digest system's tables, printed from their result files.

  digest_table.py retention DIGEST_DIR [REF_DIR [STEM]]
      Retrieval accuracy against retention: digest (DIGEST_DIR/rR/STEM, STEM
      digest unless given: digest-int8 for --digest-codec int8)
      beside recomp, pooled H2O (h2o-lru-p7) and IMPRESS (impress-itf-token)
      from REF_DIR (default results/retrieval; recomp from its r25/), each
      paired against digest on the same 400 questions (scripts/tables/paired_test.py:
      digest minus the other, 95% interval, McNemar p), and the share of the
      prefix's K/V each reads below the GPU per request: digest the tokens it
      keeps (whole chunks), the others as eval reports their kept share.
  digest_table.py options DIGEST_DIR
      Each option varied at 25% and 10% against DIGEST_DIR's defaults (its
      rR/digest) at that retention.
  digest_table.py ttft RUN_JSON
      A run (or a sweep's points): TTFT mean and p99, I/O and selection shares, MB
      from disk and digest MB per request, accuracy over the measured requests,
      per chunk size, ITF unit and system.
  digest_table.py split RUN_JSON [MB]
      A run's measured requests in two, per system: those that read at most
      MB (default 0) from disk and those that read more, each with its count
      and mean TTFT, I/O and selection ms.
  digest_table.py ratios RUN_JSON...
      One row per run of digest and h2o-lfu side by side: its build, date,
      both systems' TTFT mean and p99 and their ratios (h2o-lfu over digest);
      then the median ratios over the runs.
"""
import json
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from paired_test import compare, interval, load_preds, right  # noqa: E402

RETENTIONS = [("r5", 0.05), ("r10", 0.10), ("r25", 0.25), ("r50", 0.50)]


def result(path):
    with open(path) as f:
        return json.load(f)["results"][0]


def paired(a_samples, b_samples):
    """(b - a points, low, high, p) of B against A on the same questions."""
    a, b = right(load_preds(a_samples, "acc")), right(load_preds(b_samples, "acc"))
    n, acc_a, acc_b, only_a, only_b, p = compare(a, b)
    lo, hi = interval(n, only_a, only_b)
    return 100 * (acc_b - acc_a), 100 * lo, 100 * hi, p


def fmt_p(p):
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def retention(digest_dir, ref_dir="results/retrieval", stem="digest"):
    recomp = f"{ref_dir}/r25/recomp"
    print("| retention | digest acc | digest kept | recomp | digest - recomp [95%], p | h2o-lru-p7 | digest - h2o-lru-p7 [95%], p | impress-itf | digest - impress-itf [95%], p |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in RETENTIONS:
        dg = f"{digest_dir}/{name}/{stem}"
        if not os.path.exists(dg + ".json"):
            continue
        d = result(dg + ".json")
        cells = [f"{r:.0%}", f"{d['acc']:.4f}", f"{d['kept_share']:.3f}"]
        for other in [recomp, f"{ref_dir}/{name}/h2o-lru-p7", f"{ref_dir}/{name}/impress-itf-token"]:
            o = result(other + ".json")
            diff, lo, hi, p = paired(other + ".samples.jsonl", dg + ".samples.jsonl")
            cells += [f"{o['acc']:.4f}", f"{diff:+.2f} [{lo:+.1f}, {hi:+.1f}], {fmt_p(p)}"]
        print("| " + " | ".join(cells) + " |")


OPTIONS = [("digest-sink0", "--sink-tokens 0"), ("digest-recent64", "--recent-tokens 64"),
           ("digest-dense2", "--dense-layers 2"), ("digest-window0", "--digest-window 0"),
           ("digest-groups-sum", "--digest-groups sum"), ("digest-bound", "--digest-score bound"),
           ("digest-chunk16", "--chunk 16"), ("digest-chunk32", "--chunk 32"),
           ("digest-window4", "--digest-window 4"), ("digest-window8", "--digest-window 8"),
           ("digest-window1", "--digest-window 1"), ("digest-window16", "--digest-window 16"),
           ("digest-chunk16-sink16", "--chunk 16 --sink-tokens 16"), ("digest-pool7", "--digest-pool 7"),
           ("digest-keys4", "--digest-score keys --digest-window 4")]


def options(digest_dir):
    print("| retention | option | acc | kept | against the defaults [95%], p |")
    print("|---|---|---|---|---|")
    for name, r in [("r25", 0.25), ("r10", 0.10)]:
        base = f"{digest_dir}/{name}/digest"
        d = result(base + ".json")
        print(f"| {r:.0%} | defaults | {d['acc']:.4f} | {d['kept_share']:.3f} | - |")
        for o, flag in OPTIONS:
            f = f"{digest_dir}/{name}/{o}"
            if not os.path.exists(f + ".json"):
                continue
            x = result(f + ".json")
            diff, lo, hi, p = paired(base + ".samples.jsonl", f + ".samples.jsonl")
            print(f"| {r:.0%} | `{flag}` | {x['acc']:.4f} | {x['kept_share']:.3f} | {diff:+.2f} [{lo:+.1f}, {hi:+.1f}], {fmt_p(p)} |")


def ttft(path):
    with open(path) as f:
        d = json.load(f)
    runs = d["sweep"] if "sweep" in d else [d]
    print("| chunk | unit | system | TTFT mean ms | p99 ms | I/O share | selection share | MB from disk / request | digest MB / request | acc | requests |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for point in runs:
        unit, chunk = point["config"]["itf_unit"], point["config"]["chunk"]
        for r in point["runs"]:
            if r.get("repeated"):
                continue
            rows = r["per_request"]
            n = len(rows)
            disk = sum(x["disk_bytes"] for x in rows) / n / 1e6
            dig = sum(x.get("digest_bytes", 0) for x in rows) / n / 1e6
            sel = sum(x["select_ms"] for x in rows) / sum(x["ttft_ms"] for x in rows)
            print(f"| {chunk} | {unit if r['system'].startswith('impress') else '-'} | {r['system']} | {r['ttft_ms']['mean']:.0f} | "
                  f"{r['ttft_ms']['p99']:.0f} | {r['io_share']:.2f} | {sel:.3f} | {disk:.1f} | {dig:.1f} | {r['acc']:.3f} | {n} |")


def split(path, mb="0"):
    with open(path) as f:
        d = json.load(f)
    limit = float(mb) * 1e6
    print(f"| system | requests | more than {mb} MB from disk | TTFT mean ms | I/O mean ms | selection mean ms | MB from disk / request |")
    print("|---|---|---|---|---|---|---|")
    for point in d["sweep"] if "sweep" in d else [d]:
        for r in point["runs"]:
            if r.get("repeated"):
                continue
            for disk in (False, True):
                rows = [x for x in r["per_request"] if (x["disk_bytes"] > limit) == disk]
                if not rows:
                    continue
                n = len(rows)
                mean = lambda k: sum(x[k] for x in rows) / n  # noqa: E731
                print(f"| {r['system']} | {n} | {'yes' if disk else 'no'} | {mean('ttft_ms'):.0f} | {mean('io_ms'):.1f} | "
                      f"{mean('select_ms'):.1f} | {mean('disk_bytes') / 1e6:.1f} |")


def ratios(*paths):
    print("| run | build | date | digest mean / p99 ms | h2o-lfu mean / p99 ms | mean ratio | p99 ratio |")
    print("|---|---|---|---|---|---|---|")
    means, p99s = [], []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        prov = d["provenance"]
        point = d["sweep"][0] if "sweep" in d else d
        by = {r["system"]: r["ttft_ms"] for r in point["runs"] if not r.get("repeated")}
        g, h = by["digest"], by["h2o-lfu"]
        means.append(h["mean"] / g["mean"])
        p99s.append(h["p99"] / g["p99"])
        build = prov["commit"][:7] + ("-dirty" if prov["dirty"] else "")
        print(f"| {path} | {build} | {prov['machine']['date']} | {g['mean']:.0f} / {g['p99']:.0f} | "
              f"{h['mean']:.0f} / {h['p99']:.0f} | {means[-1]:.2f}x | {p99s[-1]:.2f}x |")
    print(f"| median of {len(paths)} | | | | | {statistics.median(means):.2f}x | {statistics.median(p99s):.2f}x |")


if __name__ == "__main__":
    modes = {"retention": retention, "options": options, "ttft": ttft, "split": split, "ratios": ratios}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](*sys.argv[2:])
