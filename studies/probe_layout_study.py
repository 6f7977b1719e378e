#!/usr/bin/env python3
"""Why does IMPRESS's agreed set change more answers than H2O on some tasks?

For the first N documents of an `impress eval --samples` file written with
the full prefix KV (`--system recomp`), runs scripts/repro/selection_reference.py's
selections and counts the documents whose answer stays what the full KV
answers, and the mean absolute change of the answer's log-likelihood margin
(best minus second-best choice, in nats):
- h2o: every query head its own top-k (the baselines);
- itf: docs/paper.md's probe heads, the first 3 query heads (for a GQA model, the
  query heads of the first KV head), whose agreed set serves every head;
- itf-spread: probe heads one per KV head (query heads 0, g, 2g): the trust
  test sees heads that read different keys, at the cost of reading their keys;
- itf-grouped: each KV head's own query heads agree on their set (no probe
  test, every key read): how far one shared set per KV head is from H2O.

Usage: studies/probe_layout_study.py --model DIR --samples FULL.jsonl --retention R [--alpha A] [--docs N]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "repro"))
from selection_reference import choice_logliks, load_model, read_samples, shared_prefix_ids, study_arguments


def margin(ll, answer):
    """How far choice `answer` leads the best other choice, in nats."""
    return ll[answer] - max(x for i, x in enumerate(ll) if i != answer)


def main():
    args = study_arguments(__doc__.split("\n")[0], docs=40).parse_args()
    records = read_samples(args.samples)[: args.docs]
    model, tok = load_model(args.model)
    cfg = model.config
    g = cfg.num_attention_heads // cfg.num_key_value_heads
    prefix_ids = shared_prefix_ids(tok, records)
    variants = {"h2o": ("h2o", (0, 1, 2)), "itf": ("itf", (0, 1, 2)), "itf-spread": ("itf", (0, g, 2 * g)),
                "itf-grouped": ("itf-grouped", ())}
    kept = {v: 0 for v in variants}
    drift = {v: 0.0 for v in variants}
    trusted = {v: [0, 0] for v in variants}
    for r in records:
        full = r["loglik"]
        answer = max(range(len(full)), key=full.__getitem__)
        for name, (system, probes) in variants.items():
            ll, decisions = choice_logliks(model, tok, prefix_ids, r, system, args.retention, args.alpha, probes)
            kept[name] += max(range(len(ll)), key=ll.__getitem__) == answer
            drift[name] += abs(margin(ll, answer) - margin(full, answer))
            trusted[name][0] += sum(d is True for d in decisions[-1])
            trusted[name][1] += sum(d is not None for d in decisions[-1])
        print(f"doc {r['doc']} done", file=sys.stderr)
    n = len(records)
    print(f"| selection | answers kept from the full KV | mean margin change (nats) | layers trusted |")
    print("|---|---|---|---|")
    for name in variants:
        t, p = trusted[name]
        print(f"| {name} | {kept[name]}/{n} ({kept[name] / n:.2f}) | {drift[name] / n:.3f} | "
              f"{f'{t}/{p}' if p else '-'} |")


if __name__ == "__main__":
    main()
