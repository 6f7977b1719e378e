#!/usr/bin/env python3
"""The "paper vs this project" table: one row per figure, the paper's claim
beside the headline of our run, computed from the figures' JSON.

Usage: scripts/paper_vs_project.py [results/figures [build/impress]] > results/figures/paper_vs_project.md
(the figure names and their order come from `impress list figures`)
"""
import json
import os
import subprocess
import sys


def load(d, name):
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        fig = json.load(f)
    fig["dicts"] = [dict(zip(fig["column_ids"], r)) for r in fig["rows"]]  # rows by stable column id
    return fig


def rng(values, fmt="{:.2f}", unit=""):
    values = list(values)
    lo, hi = min(values), max(values)
    if fmt.format(lo) == fmt.format(hi):
        return fmt.format(lo) + unit
    return f"{fmt.format(lo)}{unit}-{fmt.format(hi)}{unit}"


def by_task(fig, system_col, value_col):
    out = {}
    for r in fig["dicts"]:
        out.setdefault(r["task"], {})[r[system_col]] = r[value_col]
    return out


def headline(name, f):
    rows = f["dicts"]
    if name == "io-share":
        return "as spends " + rng((100 * r["io_share"] for r in rows), "{:.0f}", "%") + " of TTFT on I/O"
    if name == "head-jaccard":
        m = sum(r["jaccard_all_heads"] for r in rows) / len(rows)
        p = sum(r["jaccard_probe_heads"] for r in rows) / len(rows)
        return f"mean pairwise Jaccard {m:.2f} (probe heads {p:.2f}) vs {rows[0]['jaccard_random']:.2f} for random sets"
    if name == "similarity-ratio":
        return "; ".join(f"{r['selection_ratio']:.2f}: {r['jaccard_all_heads']:.2f} vs random {r['jaccard_random']:.2f}" for r in rows)
    if name == "chunk-importance":
        note = [n for n in f["notes"] if n.startswith("mean important share")]
        return note[0] if note else ""
    if name == "spi":
        at = {r["system"]: r for r in rows if r["task"] == "retrieval" and abs(r["retention"] - 0.25) < 1e-9}
        if not {"static", "random", "h2o-lru", "impress-itf (token)"} <= at.keys():
            return ""
        s, rnd, h, i = at["static"], at["random"], at["h2o-lru"], at["impress-itf (token)"]
        return (f"retrieval at 25%: recall of H2O's top-k static {s['recall']:.2f}, impress-itf {i['recall']:.2f}; "
                f"acc static {s['acc']:.3f}, random {rnd['acc']:.3f}, impress-itf {i['acc']:.3f}, h2o-lru {h['acc']:.3f} "
                f"(full KV {h['acc_recomp']:.3f})")
    if name == "fig15":
        d = [r["itf_minus_h2o_points"] for r in rows]
        within = sum(abs(x) <= 1 for x in d)
        text = f"impress-itf minus h2o-lru: mean {sum(d) / len(d):+.2f} points, within 1 point in {within} of {len(d)} cells"
        if rows and "h2o_lru_agrees" in rows[0]:
            h = [r["h2o_lru_agrees"] for r in rows]
            i = [r["impress_itf_agrees"] for r in rows]
            text += f"; answers kept from recomp: h2o-lru {sum(h) / len(h):.2f}, impress-itf {sum(i) / len(i):.2f}"
        return text
    if name == "fig16":
        t = by_task(f, "system", "h2o_lfu_over_system")
        return "impress " + rng((s["impress"] for s in t.values()), "{:.2f}", "x") + " lower than h2o-lfu; as " + \
            rng((s["as"] for s in t.values()), "{:.2f}", "x") + " lower than h2o-lfu too"
    if name == "fig17":
        t = by_task(f, "system", "h2o_lfu_over_system_io")
        return "impress " + rng((s["impress"] for s in t.values()), "{:.2f}", "x") + " less I/O time than h2o-lfu"
    if name == "tail":
        t = by_task(f, "system", "ttft_p99_ms")
        task = "rte" if "rte" in t else next(iter(t))
        return f"{task}: " + ", ".join(f"{s} {v:.0f}" for s, v in t[task].items()) + " ms"
    if name == "fig18":
        parts = []
        for task in dict.fromkeys(r["task"] for r in rows):
            steps = [r for r in rows if r["task"] == task]
            parts.append(f"{task} " + " > ".join(f"{r['ttft_mean_ms']:.0f}" for r in steps))
        return "mean TTFT ms, h2o-lfu > +ITF > +RO > All: " + "; ".join(parts)
    if name == "fig19":
        return "mean per-layer load ratio " + rng(r["load_ratio_mean"] for r in rows) + ", fallback share " + \
            rng(r["fallback_share"] for r in rows)
    if name == "fig20":
        return rng((r["without_over_with_ro"] for r in rows), "{:.2f}", "x") + " fewer chunks with RO"
    if name == "fig21":
        return "; ".join(f"{r['task']} {r['kv_hit_gpu_lfu']:.2f} -> {r['kv_hit_gpu_score']:.2f}" for r in rows)
    if name == "fig22":
        a, b = rows[0], rows[-1]
        return (f"alpha {a['alpha']:g} -> {b['alpha']:g}: TTFT {a['ttft_mean_ms']:.0f} -> {b['ttft_mean_ms']:.0f} ms, "
                f"K/V chunks {a['kv_chunks_per_request']:.0f} -> {b['kv_chunks_per_request']:.0f}, acc {a['acc']:.3f} -> {b['acc']:.3f}")
    if name == "fig23":
        return "impress " + rng((r["speedup"] for r in rows), "{:.2f}", "x") + " faster at chunk " + \
            ",".join(str(r["chunk_tokens"]) for r in rows)
    if name == "fig24":
        return "impress " + rng((r["speedup"] for r in rows), "{:.2f}", "x") + " faster at pools of " + \
            rng((r["pool_mb"] for r in rows), "{:.0f}", " MB")
    if name == "fig25":
        return "; ".join(f"{r['model']}: impress {r['h2o_lfu_over_system']:.2f}x" for r in rows if r["system"] == "impress")
    return ""


def main(args):
    d = args[0] if args else "results/figures"
    impress = args[1] if len(args) > 1 else "build/impress"
    names = subprocess.run([impress, "list", "figures"], check=True, capture_output=True, text=True).stdout.split()
    print("| figure | paper | this project | command |")
    print("|---|---|---|---|")
    for name in names:
        f = load(d, name)
        if f is None:
            continue
        print(f"| {name} | {f['paper']} | {headline(name, f)} | `impress reproduce {name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
