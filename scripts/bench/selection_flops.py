#!/usr/bin/env python3
"""The arithmetic of a request beside what `impress run --json` measured: how
many floating-point operations the probe heads' importance step and the
model's own forward pass make per request, the rate each ran at, and the
importance step's share of TTFT had it run at the forward's rate. This bounds
what any faster importance code could reach without computing less.

Counts (two per multiply-add; T new tokens and P reused prefix tokens per
request, the run's means; d the head size; r the kept share):
  forward, per layer:  T * (linear weights) + 4 * Hq * d * (T * kept + T (T + 1) / 2),
      kept = P * r for a selective system, P for one that keeps everything;
      linear weights: 2 D (Hq d + 2 Hkv d) + 2 Hq d D for attention's projections,
      plus 3 * 2 D F (gated MLP, Llama) or 2 * 2 D F (OPT)
  lm head:             2 D V, once (TTFT scores the last token only)
  importance, per layer: 2 * heads * T * (P + T) * d (scores over every prefix key and the
      new ones; the softmax and the column sum are not counted), heads every query head for
      H2O; for the ITF systems the probe heads, plus every query head on the layers whose
      probe was not trusted (the run's fallback share), which then score as H2O does
Measured: importance ms and selection ms from the run; the forward's time is
TTFT less selection, I/O wait and placement.

With --model CONFIG (a Hugging Face config.json), the same requests' counts (and
fallback share) for that model instead: what the probe step costs against a
larger forward pass.

Usage: selection_flops.py RUN.json [--config CONFIG] [--model CONFIG ...] [--probe-heads 3]
"""
import argparse
import json
import os


def shape(path):
    with open(path) as f:
        c = json.load(f)
    opt = c.get("model_type") == "opt"
    D = c["hidden_size"]
    Hq = c["num_attention_heads"]
    return {
        "name": os.path.basename(os.path.dirname(os.path.abspath(path))) if os.path.basename(path) == "config.json"
        else os.path.basename(path).removesuffix(".json"),
        "D": D, "L": c["num_hidden_layers"], "Hq": Hq,
        "Hkv": Hq if opt else c.get("num_key_value_heads", Hq),
        "d": c.get("head_dim") or D // Hq,
        "F": c["ffn_dim"] if opt else c["intermediate_size"],
        "mlp_mats": 2 if opt else 3, "V": c["vocab_size"],
    }


def scored_heads(system, m, probe_heads, fallback_share):
    """The query heads whose scores the system's importance step computes, a
    layer on average: an ITF layer that falls back scores its probe heads and
    then, as H2O, every query head."""
    return m["Hq"] if system.startswith("h2o") else probe_heads + m["Hq"] * fallback_share


def counts(m, T, P, kept, heads):
    """GFLOP per request: forward (layers and lm head) and importance."""
    D, Hq, Hkv, d, F = m["D"], m["Hq"], m["Hkv"], m["d"], m["F"]
    weights = 2 * D * (Hq * d + 2 * Hkv * d) + 2 * Hq * d * D + m["mlp_mats"] * 2 * D * F
    attend = 4 * Hq * d * (T * kept + T * (T + 1) / 2)
    forward = m["L"] * (T * weights + attend) + 2 * D * m["V"]
    importance = m["L"] * 2 * heads * T * (P + T) * d
    return forward / 1e9, importance / 1e9


def runs(path):
    with open(path) as f:
        j = json.load(f)
    for p in j["sweep"] if "sweep" in j else [j]:
        for r in p["runs"]:
            yield p["config"], r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--config", help="the run's model config.json (default: the run's model directory's)")
    ap.add_argument("--model", action="append", default=[], help="another model's config.json for the same requests")
    ap.add_argument("--probe-heads", type=int, default=3, help="the ITF systems' probe heads")
    a = ap.parse_args()
    header = ("| unit | system | T | P | forward GFLOP | importance GFLOP | importance share of the arithmetic "
              "| forward GFLOP/s | importance GFLOP/s | importance at the forward's rate, share of TTFT "
              "| measured importance / TTFT | measured selection / TTFT |")
    print(header)
    print("|" + "---|" * header.count(" | ") + "---|")
    others = []
    for cfg, r in runs(a.run):
        if r["select_ms"].get("importance", 0) <= 0:
            continue  # nothing probed: no importance step to bound
        m = shape(a.config or os.path.join(cfg["model"], "config.json"))
        n = r["requests"]
        T, P = r["computed_tokens"] / n, r["reused_tokens"] / n
        kept = P * r["kept_share"]
        fallback = r.get("fallback_share", 0.0)
        fwd, imp = counts(m, T, P, kept, scored_heads(r["system"], m, a.probe_heads, fallback))
        s, ttft = r["select_ms"], r["ttft_ms"]["mean"]
        fwd_ms = ttft - s["mean"] - r["io_ms"]["mean"] - r.get("placement_ms", {}).get("mean", 0.0)
        fwd_rate, imp_rate = fwd / fwd_ms * 1e3, imp / s["importance"] * 1e3
        at_fwd_rate = imp / fwd_rate * 1e3  # ms
        print(f"| {cfg['itf_unit']} | {r['system']} | {T:.1f} | {P:.0f} | {fwd:.2f} | {imp:.2f} "
              f"| {imp / (fwd + imp):.3f} | {fwd_rate:.0f} | {imp_rate:.0f} "
              f"| {at_fwd_rate / (ttft - s['importance'] + at_fwd_rate):.3f} "
              f"| {s['importance'] / ttft:.3f} | {s['mean'] / ttft:.3f} |")
        others.append((cfg['itf_unit'], r["system"], T, P, kept, fallback))
    if a.model:
        print()
        print("| model | unit | system | forward GFLOP | importance GFLOP | importance share of the arithmetic |")
        print("|---|---|---|---|---|---|")
        for path in a.model:
            m = shape(path)
            for unit, system, T, P, kept, fallback in others:  # the same fallback share on that model
                fwd, imp = counts(m, T, P, kept, scored_heads(system, m, a.probe_heads, fallback))
                print(f"| {m['name']} | {unit} | {system} | {fwd:.2f} | {imp:.2f} | {imp / (fwd + imp):.4f} |")


if __name__ == "__main__":
    main()
