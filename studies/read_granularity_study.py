#!/usr/bin/env python3
"""How many bytes would IMPRESS's ITF and H2O read if the store could read
single 4 KiB pages of a chunk instead of whole chunk parts?

The paper's ITF reads "just those tokens": the K and V of the agreed set. The
store reads whole chunk parts (64 tokens x all KV heads), so on a model whose
important tokens are scattered, ITF in token order reads about what H2O reads
(README, "The chunk unit"). A part is [C][kv_heads][head_dim] (token-major,
docs/store.md), so a 4 KiB page holds 4096 / (kv_heads * head_dim * bytes)
tokens: direct I/O could read only the pages that hold selected tokens. This
counts, from scripts/repro/selection_reference.py's selections on each document's
context (rows = the context's new tokens, as `impress eval` selects), the
bytes each system would read per layer:
- h2o: every key part; the value pages (or parts) holding a token that any
  query head keeps;
- itf: the probe-key part of every chunk (the first KV head's keys, read
  whole); where the probe test trusts, the key and value pages (or parts)
  holding an agreed token; where it falls back, what h2o reads.
Only whole chunks are counted (a partial tail chunk is recomputed, never
stored). Token order: no reordering.

Usage: studies/read_granularity_study.py --model DIR --samples EVAL.jsonl --retention R [--docs N] [--chunk C]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "repro"))
from selection_reference import context_ids, load_model, read_samples, selected_logits, shared_prefix_ids, study_arguments

PAGE = 4096


def pad(n):
    return (n + PAGE - 1) // PAGE * PAGE


def part_bytes(tokens, chunk, token_bytes, paged):
    """Bytes read from one part type over the prefix's whole chunks: the parts
    (or, paged, the pages) that hold any of `tokens` (a set of positions)."""
    chunks = {t // chunk for t in tokens}
    if not paged:
        return len(chunks) * pad(chunk * token_bytes)
    pages = set()
    for t in tokens:
        c, o = divmod(t, chunk)
        first, last = o * token_bytes // PAGE, ((o + 1) * token_bytes - 1) // PAGE
        pages.update((c, p) for p in range(first, last + 1))
    return len(pages) * PAGE


def main():
    ap = study_arguments(__doc__.split("\n")[0], docs=20)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--elem-bytes", type=int, default=2, help="stored KV element size (fp16: 2)")
    args = ap.parse_args()
    records = read_samples(args.samples)[: args.docs]
    model, tok = load_model(args.model)
    cfg = model.config
    hq, hkv = cfg.num_attention_heads, cfg.num_key_value_heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // hq
    g = hq // hkv
    kv_token = hkv * d * args.elem_bytes      # one token's keys (or values), all KV heads
    probe_token = d * args.elem_bytes         # the probe heads' keys: the first KV head (docs/paper.md, GQA)
    prefix_ids = shared_prefix_ids(tok, records)
    total = {(s, paged): 0 for s in ("h2o", "itf") for paged in (False, True)}
    full = 0
    trusted_layers = layers = 0
    for r in records:
        _, _, ids, m = context_ids(tok, prefix_ids, r)
        stored = m // args.chunk * args.chunk  # tokens in whole chunks
        n_chunks = stored // args.chunk
        every = set(range(stored))
        for system in ("h2o", "itf"):
            keeps = []
            _, decisions = selected_logits(model, ids[:m], ids[m:], len(ids) - m, system, args.retention, args.alpha,
                                           keeps=keeps)
            for keep, trusted in zip(keeps, decisions):
                kept_any = {t for t in keep[:, :stored].any(0).nonzero().flatten().tolist()}
                for paged in (False, True):
                    keys_all = n_chunks * pad(args.chunk * kv_token)
                    h2o_bytes = keys_all + part_bytes(kept_any, args.chunk, kv_token, paged)
                    if system == "h2o":
                        total[(system, paged)] += h2o_bytes
                        continue
                    probe = n_chunks * pad(args.chunk * probe_token)
                    if trusted:
                        agreed = {t for t in keep[0, :stored].nonzero().flatten().tolist()}
                        total[(system, paged)] += probe + 2 * part_bytes(agreed, args.chunk, kv_token, paged)
                    else:
                        total[(system, paged)] += probe + h2o_bytes
                if system == "itf":
                    layers += 1
                    trusted_layers += bool(trusted)
            if system == "h2o":
                full += len(keeps) * 2 * n_chunks * pad(args.chunk * kv_token)
        print(f"doc {r['doc']} done ({stored} stored prefix tokens)", file=sys.stderr)
    tokens_per_page = PAGE / kv_token
    print(f"{len(records)} documents, retention {args.retention}, chunk {args.chunk} tokens, "
          f"{tokens_per_page:.2f} tokens per 4 KiB page, ITF trusted in {trusted_layers} of {layers} layers")
    print()
    print("| read unit | h2o bytes / all KV | itf bytes / all KV | h2o / itf |")
    print("|---|---|---|---|")
    for paged, name in ((False, "chunk part (the store today)"), (True, "4 KiB page")):
        h, i = total[("h2o", paged)] / full, total[("itf", paged)] / full
        print(f"| {name} | {h:.3f} | {i:.3f} | {h / i:.2f}x |")


if __name__ == "__main__":
    main()
