#!/usr/bin/env python3
"""A reference for importance-aware loading, written from docs/paper.md on top of
Hugging Face transformers' Llama modules, to check the C++ selectors against.

`selected_logits` runs new tokens after a prefix whose KV is held, as the
`h2o-*` and `impress-itf` systems do: in every layer the first `rows` new
tokens' queries score the prefix tokens (H2O importance: column sums of the
true attention weights), a selection of prefix tokens is made per head, and
every new token then attends to its heads' selected prefix tokens and to the
new tokens up to itself. Unselected prefix tokens are dropped, not recomputed.

Selections (k = ceil(retention * P), at least 1; k >= P keeps everything):
- "h2o": each query head keeps its own top-k.
- "itf": 3 query heads are probes: the first 3 (--probe-layout first, the
  paper), or one per KV head in turn, heads 0, g, 2g (--probe-layout spread;
  g query heads per KV head; 1, g + 1, ... when there are fewer KV heads than
  3). Their top-k sets' mean pairwise
  Jaccard index J is compared with t = ((k/P) / (2 - k/P)) ** alpha; if
  J > t, every head keeps the agreed set (tokens ranked by how many probe
  sets hold them, then by importance summed over the probes, then by lower
  position; exactly k), else the layer falls back to "h2o".
- "itf-grouped" (a diagnostic, studies/probe_layout_study.py): the query heads
  of each KV head keep the set they agree on; no probe test.

As a check: scripts/repro/selection_reference.py --model DIR --system
h2o-lru|impress-itf --retention R [--alpha A] [--probe-layout L] [--docs N] (--impress BIN
[--task T --shots S --data DIR] | --samples EVAL.jsonl) compares the choice
log-likelihoods of `impress eval --samples` (run here, or a file it wrote
with the same options) with this reference's, document by document, and
exits 1 when one differs by more than --tolerance.
"""
import argparse
import json
import math
import sys

import torch


def retained(retention, n):
    return min(n, max(1, math.ceil(retention * n - 1e-9)))


def jaccard(a, b):
    a, b = set(a.tolist()), set(b.tolist())
    return len(a & b) / len(a | b) if a | b else 1.0


def agreed_set(sets, importance, k):
    """sets [H, k] of positions, importance [H, P] -> the k agreed positions."""
    p = importance.shape[1]
    votes = torch.zeros(p, dtype=torch.float64)
    for row in sets:
        votes[row] += 1
    total = importance.double().sum(0)
    order = sorted(range(p), key=lambda i: (-votes[i].item(), -total[i].item(), i))
    return torch.tensor(sorted(order[:k]))


def probe_heads(layout, heads, kv_heads, n=3):
    """The probe query heads of a layout (see the module docstring)."""
    g = heads // kv_heads
    if layout == "first":
        return tuple(range(min(n, heads)))
    return tuple((i % kv_heads) * g + i // kv_heads for i in range(min(n, heads)))


def select(importance, system, retention, alpha, probes=(0, 1, 2), group_size=1):
    """importance [Hq, P] -> (keep [Hq, P] bool, trusted or None). `probes`:
    the probe query heads (docs/paper.md: the first 3); `group_size`: query heads
    per KV head."""
    hq, p = importance.shape
    k = retained(retention, p)
    if k >= p:
        return torch.ones(hq, p, dtype=torch.bool), None
    sets = importance.topk(k, dim=1).indices
    keep = torch.zeros(hq, p, dtype=torch.bool)
    keep.scatter_(1, sets, True)
    if system == "h2o":
        return keep, None
    if system == "itf-grouped":  # a diagnostic: each KV head's query heads keep the set they agree on
        g = group_size
        for h in range(0, hq, g):
            keep[h : h + g] = False
            keep[h : h + g, agreed_set(sets[h : h + g], importance[h : h + g], k)] = True
        return keep, True
    probes = [h for h in probes if h < hq]
    probe = sets[probes]
    pairs = [(i, j) for i in range(len(probe)) for j in range(i + 1, len(probe))]
    similarity = sum(jaccard(probe[i], probe[j]) for i, j in pairs) / len(pairs)
    r = k / p
    if not similarity > (r / (2 - r)) ** alpha:
        return keep, False
    agreed = torch.zeros(p, dtype=torch.bool)
    agreed[agreed_set(probe, importance[probes], k)] = True
    return agreed.expand(hq, p).clone(), True


@torch.no_grad()
def selected_logits(model, prefix_ids, new_ids, rows, system, retention, alpha, probes=(0, 1, 2), keeps=None):
    """Logits [T, vocab] of `new_ids` (T tokens at positions P..P+T-1) and each
    layer's trust decision (None where nothing was probed). `keeps`, a list,
    receives each layer's keep mask [Hq, P]."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    m = model.model
    cfg = model.config
    hq, hkv = cfg.num_attention_heads, cfg.num_key_value_heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // hq
    g = hq // hkv
    p, t = len(prefix_ids), len(new_ids)
    cache = model(torch.tensor([prefix_ids]), use_cache=True).past_key_values
    h = m.embed_tokens(torch.tensor([new_ids]))
    cos, sin = m.rotary_emb(h, torch.arange(p, p + t).unsqueeze(0))
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    decisions = []
    for l, layer in enumerate(m.layers):
        x = layer.input_layernorm(h)
        a = layer.self_attn
        q = a.q_proj(x).view(1, t, hq, d).transpose(1, 2)
        k = a.k_proj(x).view(1, t, hkv, d).transpose(1, 2)
        v = a.v_proj(x).view(1, t, hkv, d).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        pk, pv = cache.layers[l].keys, cache.layers[l].values  # [1, Hkv, P, d], RoPE applied
        keys = torch.cat([pk, k], 2).repeat_interleave(g, dim=1)[0]  # [Hq, P + T, d]
        values = torch.cat([pv, v], 2).repeat_interleave(g, dim=1)[0]
        scores = q[0] @ keys.transpose(1, 2) / math.sqrt(d)  # [Hq, T, P + T]
        scores[:, :, p:] = scores[:, :, p:].masked_fill(future, float("-inf"))
        importance = scores[:, :rows].softmax(-1)[:, :, :p].sum(1)  # [Hq, P]
        keep, trusted = select(importance, system, retention, alpha, probes, g)
        decisions.append(trusted)
        if keeps is not None:
            keeps.append(keep)
        scores[:, :, :p] = scores[:, :, :p].masked_fill(~keep.unsqueeze(1), float("-inf"))
        out = scores.softmax(-1) @ values  # [Hq, T, d]
        h = h + a.o_proj(out.transpose(0, 1).reshape(1, t, hq * d))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    return model.lm_head(m.norm(h))[0].float(), decisions


def run_impress(args, path):
    """`impress eval` of the first --docs documents, writing their samples to `path`."""
    import subprocess

    subprocess.run([args.impress, "eval", "--model", args.model, "--task", args.task, "--data", args.data,
                    "--shots", str(args.shots), "--limit", str(args.docs), "--system", args.system,
                    "--retention", str(args.retention), "--alpha", str(args.alpha), "--device", "cpu",
                    "--probe-layout", args.probe_layout,
                    "--dtype", "float32", "--samples", path], check=True, stdout=subprocess.DEVNULL)


def shared_prefix_ids(tok, records):
    """Token ids of the few-shot prefix: what every record's context starts
    with, up to its last blank line."""
    common = records[0]["context"]
    for r in records[1:]:
        while not r["context"].startswith(common):
            common = common[:-1]
    return tok(common[: common.rfind("\n\n") + 2], add_special_tokens=False).input_ids


def study_arguments(description, docs):
    """The arguments every study over an eval samples file takes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--retention", type=float, required=True)
    ap.add_argument("--alpha", type=float, default=0.6)
    ap.add_argument("--docs", type=int, default=docs)
    return ap


def context_ids(tok, prefix_ids, record):
    """The record's context tokenized as lm-eval does (trailing whitespace
    moved to the continuations): (context, moved whitespace, ids, how many
    leading ids it shares with the prefix, at least one left to run)."""
    ctx = record["context"].rstrip()
    moved = record["context"][len(ctx):]
    ids = tok(ctx, add_special_tokens=False).input_ids
    m = 0
    while m < min(len(prefix_ids), len(ids) - 1) and ids[m] == prefix_ids[m]:
        m += 1
    return ctx, moved, ids, m


def choice_logliks(model, tok, prefix_ids, record, system, retention, alpha, probes=(0, 1, 2)):
    """Each choice's log-likelihood after the record's context, tokenized as
    lm-eval does, with the prefix tokens the context shares selected; and
    every layer's trust decisions (one list per choice)."""
    ctx, moved, ids, m = context_ids(tok, prefix_ids, record)
    logliks, decisions = [], []
    for choice in record["choices"]:
        whole = tok(ctx + moved + " " + choice, add_special_tokens=False).input_ids  # lm-eval's target delimiter
        cont = whole[len(ids):]
        logits, d = selected_logits(model, ids[:m], ids[m:] + cont[:-1], len(ids) - m, system, retention, alpha,
                                    probes)
        lp = logits.log_softmax(-1)
        first = len(ids) - m - 1
        logliks.append(sum(lp[first + i, c].item() for i, c in enumerate(cont)))
        decisions.append(d)
    return logliks, decisions


def read_samples(path):
    """The records of an `impress eval --samples` file; a one-line exit on bad input."""
    records = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                r["context"], r["choices"], r["loglik"], r["doc"], r["task"]
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{line_no}: not an eval samples record ({e})")
            records.append(r)
    if not records:
        sys.exit(f"{path}: no samples")
    return records


def load_model(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    return model, tok


def check_samples(args, samples):
    records = read_samples(samples)
    model, tok = load_model(args.model)
    prefix_ids = shared_prefix_ids(tok, records)
    system = "h2o" if args.system.startswith("h2o") else "itf"
    c = model.config
    probes = probe_heads(args.probe_layout, c.num_attention_heads, getattr(c, "num_key_value_heads", None)
                         or c.num_attention_heads)
    worst, trusted, probed = 0.0, 0, 0
    for r in records[: args.docs]:
        got, decisions = choice_logliks(model, tok, prefix_ids, r, system, args.retention, args.alpha, probes)
        trusted += sum(d is True for d in decisions[-1])
        probed += sum(d is not None for d in decisions[-1])
        diff = max(abs(a - b) for a, b in zip(got, r["loglik"]))
        worst = max(worst, diff)
        print(f"{r['task']} doc {r['doc']}: reference {['%.4f' % x for x in got]}, impress "
              f"{['%.4f' % x for x in r['loglik']]}, max diff {diff:.2e}")
    n = min(args.docs, len(records))
    print(f"selection_reference: {args.system} (probe heads {probes}) at retention {args.retention}, alpha {args.alpha}: {n} documents, "
          f"probe heads trusted in {trusted} of {probed} probed layers; largest log-likelihood difference "
          f"{worst:.2e} (tol {args.tolerance})")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--system", choices=["h2o-lru", "h2o-lfu", "impress-itf"], required=True)
    ap.add_argument("--retention", type=float, required=True)
    ap.add_argument("--alpha", type=float, default=0.6)
    ap.add_argument("--probe-layout", choices=["first", "spread"], default="first")
    ap.add_argument("--docs", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--samples", help="check this `impress eval --samples` file instead of running impress")
    ap.add_argument("--impress", help="the impress executable, to run `eval` first")
    ap.add_argument("--task", default="copa")
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--data", default="data")
    args = ap.parse_args()
    if args.samples:
        sys.exit(0 if check_samples(args, args.samples) <= args.tolerance else 1)
    if not args.impress:
        ap.error("give --samples or --impress")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/samples.jsonl"
        run_impress(args, path)
        sys.exit(0 if check_samples(args, path) <= args.tolerance else 1)


if __name__ == "__main__":
    main()
