#!/usr/bin/env python3
"""Draws each figure `impress reproduce` wrote as a PNG beside its JSON.

Usage: scripts/tables/plot.py [--impress BIN] [DIR or FILE.json ...]
       (defaults: build/impress, results/figures)

Every FILE.json becomes FILE.png, drawn as the figure registry says
(`BIN list figures --json`: each figure's chart kind and the columns it
reads). The JSON is the data: its "rows" are the figure's table, read by
"column_ids" (stable; "columns" are the labels a reader sees), "series" what
a table cannot hold (per-layer arrays, the head-by-head Jaccard matrices).
"""
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def col(fig, id):
    return fig["column_ids"].index(id)


def label(fig, id):
    return fig["columns"][col(fig, id)]


def grouped_bars(ax, fig, group, series, value, ylabel):
    """Bars of `value`, one group per distinct `group` cell, one bar per `series` cell."""
    g, s, v = col(fig, group), col(fig, series), col(fig, value)
    groups = list(dict.fromkeys(r[g] for r in fig["rows"]))
    names = list(dict.fromkeys(r[s] for r in fig["rows"]))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs, ys = [], []
        for j, grp in enumerate(groups):
            for r in fig["rows"]:
                if r[g] == grp and r[s] == name:
                    xs.append(j + i * width)
                    ys.append(r[v])
        ax.bar(xs, ys, width, label=str(name))
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(groups))])
    ax.set_xticklabels([str(x) for x in groups])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def wide_bars(ax, fig, group, values, ylabel):
    """Bars of several columns side by side, one group per row."""
    g = col(fig, group)
    width = 0.8 / len(values)
    for i, name in enumerate(values):
        v = col(fig, name)
        ax.bar([j + i * width for j in range(len(fig["rows"]))], [r[v] for r in fig["rows"]], width, label=name)
    ax.set_xticks([j + width * (len(values) - 1) / 2 for j in range(len(fig["rows"]))])
    ax.set_xticklabels([str(r[g]) for r in fig["rows"]])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def lines(ax, fig, x, ys, ylabel, logx=False):
    xi = col(fig, x)
    for name in ys:
        yi = col(fig, name)
        ax.plot([r[xi] for r in fig["rows"]], [r[yi] for r in fig["rows"]], marker="o", label=label(fig, name))
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(label(fig, x))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def plot_fig15(fig):
    tasks = list(dict.fromkeys(r[0] for r in fig["rows"]))
    f, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = sorted((r for r in fig["rows"] if r[0] == task), key=lambda r: r[1])
        xs = [r[1] for r in rows]
        for i, name in [(2, "recomp"), (3, "h2o-lru"), (4, "impress-itf")]:
            ax.plot(xs, [r[i] for r in rows], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_title(task)
        ax.set_xlabel("retention")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=7)
    return f


def plot_spi(fig):
    """Fig. 5: per task, recall of H2O's top-k (top) and accuracy (bottom) against retention."""
    t, r, s = col(fig, "task"), col(fig, "retention"), col(fig, "system")
    rec, acc, full = col(fig, "recall"), col(fig, "acc"), col(fig, "acc_recomp")
    tasks = list(dict.fromkeys(x[t] for x in fig["rows"]))
    systems = list(dict.fromkeys(x[s] for x in fig["rows"]))
    f, axes = plt.subplots(2, len(tasks), figsize=(3.6 * len(tasks), 6), squeeze=False)
    for i, task in enumerate(tasks):
        rows = [x for x in fig["rows"] if x[t] == task]
        for name in systems:
            pts = sorted((x[r], x[rec], x[acc]) for x in rows if x[s] == name)
            axes[0][i].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            axes[1][i].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=name)
        axes[1][i].axhline(rows[0][full], color="gray", linestyle="--", label="recomp")
        axes[0][i].set_title(task)
        for ax, ylabel in ((axes[0][i], "recall of H2O's top-k"), (axes[1][i], "accuracy")):
            ax.set_xscale("log")
            ax.set_xlabel("retention")
            ax.set_ylabel(ylabel)
        axes[1][i].legend(fontsize=6)
    return f


def plot_head_jaccard(fig):
    s = fig["series"]
    mats, h = s["jaccard"], s["heads"]
    layers = len(mats)
    picks = sorted(set([0, layers // 4, layers // 2, 3 * layers // 4, layers - 1]))
    f, axes = plt.subplots(1, len(picks) + 1, figsize=(3.2 * (len(picks) + 1), 3.2))
    for ax, l in zip(axes, picks):
        im = ax.imshow([mats[l][i * h:(i + 1) * h] for i in range(h)], vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"layer {l}")
        ax.set_xlabel("head")
        ax.set_ylabel("head")
    f.colorbar(im, ax=axes[-2])
    ax = axes[-1]
    lines(ax, fig, "layer", ["jaccard_all_heads", "jaccard_probe_heads", "jaccard_random"], "Jaccard")
    return f


def plot_chunk_importance(fig):
    f, ax = plt.subplots(figsize=(6, 3.4))
    ax.bar(range(len(fig["rows"])), [r[2] for r in fig["rows"]])
    ax.set_xticks(range(len(fig["rows"])))
    ax.set_xticklabels([r[0] for r in fig["rows"]], rotation=45, fontsize=7)
    ax.set_xlabel("important share of a chunk read")
    ax.set_ylabel("fraction of chunks read")
    return f


def plot_fig19(fig):
    f, ax = plt.subplots(figsize=(7, 3.4))
    for i, (task, s) in enumerate(fig["series"].items()):
        ax.plot(s["layer_kv_load_ratio"], marker=".", color=f"C{i}", label=f"{task} load ratio")
        ax.plot(s["layer_fallback_share"], linestyle=":", color=f"C{i}", label=f"{task} fallback")
    ax.set_xlabel("layer")
    ax.set_ylabel("share")
    ax.legend(fontsize=6, ncol=2)
    return f


def plot_fig22(fig):
    f, ax = plt.subplots(figsize=(6, 3.4))
    lines(ax, fig, "alpha", ["ttft_mean_ms"], "TTFT ms")
    ax2 = ax.twinx()
    ai = col(fig, "acc")
    ax2.plot([r[0] for r in fig["rows"]], [r[ai] for r in fig["rows"]], color="C3", marker="s", label="accuracy")
    ax2.set_ylabel("accuracy")
    ax2.legend(fontsize=7, loc="lower right")
    return f


def plot_codec(fig):
    """Per slow tier: MB below the GPU per request and mean TTFT, one group per system
    (with its ITF unit where it has one), one bar per codec."""
    tier_i, sys_i, unit_i = col(fig, "slow_tier"), col(fig, "system"), col(fig, "itf_unit")
    tiers = list(dict.fromkeys(r[tier_i] for r in fig["rows"]))
    f, axes = plt.subplots(len(tiers), 2, figsize=(10, 3.2 * len(tiers)), squeeze=False)
    for i, tier in enumerate(tiers):
        rows = [list(r) for r in fig["rows"] if r[tier_i] == tier]
        for r in rows:
            if r[sys_i] not in ("as", "h2o-lfu"):
                r[sys_i] += "/" + r[unit_i]
        sub = dict(fig, rows=rows)
        grouped_bars(axes[i][0], sub, "system", "codec", "mb_below_gpu_per_request", f"MB below the GPU / request ({tier})")
        grouped_bars(axes[i][1], sub, "system", "codec", "ttft_mean_ms", f"mean TTFT ms ({tier})")
    for ax in axes.flat:
        ax.tick_params(axis="x", labelsize=7, labelrotation=12)
    return f


def one_axis(draw):
    def make(fig, chart):
        f, ax = plt.subplots(figsize=(7, 3.4))
        draw(ax, fig, chart)
        return f
    return make


# The drawings a figure's chart kind names (`impress list figures --json`:
# each figure's "chart"); the first three draw the chart's columns on one axis.
KINDS = {
    "grouped_bars": one_axis(lambda ax, fig, c: grouped_bars(ax, fig, *c["columns"], c["ylabel"])),
    "wide_bars": one_axis(lambda ax, fig, c: wide_bars(ax, fig, c["columns"][0], c["columns"][1:], c["ylabel"])),
    "lines": one_axis(lambda ax, fig, c: lines(ax, fig, c["columns"][0], c["columns"][1:], c["ylabel"], c["logx"])),
    "head_jaccard_matrices": lambda fig, c: plot_head_jaccard(fig),
    "chunk_share_histogram": lambda fig, c: plot_chunk_importance(fig),
    "recall_and_accuracy_by_retention": lambda fig, c: plot_spi(fig),
    "accuracy_by_retention": lambda fig, c: plot_fig15(fig),
    "layer_load_ratios": lambda fig, c: plot_fig19(fig),
    "alpha_sweep": lambda fig, c: plot_fig22(fig),
    "codec_bytes_and_ttft": lambda fig, c: plot_codec(fig),
}


def charts(impress):
    """Figure name -> its chart, from the registry."""
    out = subprocess.run([impress, "list", "figures", "--json"], check=True, capture_output=True, text=True).stdout
    return {f["name"]: f["chart"] for f in json.loads(out)["figures"]}


def plot(path, known):
    with open(path) as f:
        fig = json.load(f)
    chart = known.get(fig.get("name"))
    draw = KINDS.get(chart["kind"]) if chart else None
    if draw is None:
        print(f"{path}: no chart for figure '{fig.get('name')}'", file=sys.stderr)
        return False
    figure = draw(fig, chart)
    figure.suptitle(f"{fig['name']}: {fig['title']}", fontsize=9)
    figure.tight_layout()
    out = os.path.splitext(path)[0] + ".png"
    figure.savefig(out, dpi=110)
    plt.close(figure)
    print(out)
    return True


def main(args):
    impress = "build/impress"
    if args[:1] == ["--impress"]:
        impress, args = args[1], args[2:]
    paths = []
    for a in args or ["results/figures"]:
        if os.path.isdir(a):
            paths += sorted(os.path.join(a, n) for n in os.listdir(a) if n.endswith(".json"))
        else:
            paths.append(a)
    if not paths:
        print("no figure JSON found: run `impress reproduce` first", file=sys.stderr)
        return 1
    known = charts(impress)
    ok = all([plot(p, known) for p in paths])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
