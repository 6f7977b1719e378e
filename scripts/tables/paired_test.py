#!/usr/bin/env python3
"""Paired comparison of two systems' accuracy on the same documents.

Reads the per-document records `impress eval --samples` writes for system A
and system B (same tasks, shots, seed and documents) and prints, per task,
both accuracies, the documents only one of them got right, and the exact
two-sided McNemar p-value: under "A and B are equally accurate" each of the
b + c discordant documents is A's with probability 1/2, so
p = min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)]).
Beside it, the 95% interval of the difference B - A (Wald, for paired
proportions): d = (c - b) / n, se = sqrt(((b + c) / n - d^2) / n), d +- 1.96 se,
where b documents only A holds and c only B.

With --reference R.jsonl (the same documents scored with the full prefix KV),
a second table asks the same of fidelity instead of accuracy: the share of
documents on which each system predicts what R predicts, right or wrong. That
measures how much each selection changes the model's answers, without the
noise of near-tied documents whose gold label a coin flip decides.

A, B and R may each be several files joined by commas, the same number for
each: file i of A is compared with file i of B (the same documents under
several few-shot seeds, say), and each (document, file) pair counts once.
Pairs from one document under different prefixes need not be independent, so
the pooled p-value and interval can come out smaller and narrower than they
should: a pooled "not significant" holds, a pooled "significant" needs a
second look (are the changed pairs on different documents?).

Usage: scripts/tables/paired_test.py A.jsonl[,A2.jsonl...] B.jsonl[,B2.jsonl...] [--reference R.jsonl[,...]]
                              [--metric acc|acc_norm] [--label-a A] [--label-b B]
"""
import argparse
import json
import math
import sys


def load_preds(paths, metric):
    """{(task, doc, i): (prediction, right)} of the samples files `paths`
    (joined by commas), i the file's position in the list. A multiple-choice
    record's prediction is its chosen index, right when it is the gold one; a
    task file's generation record (keyed by its line) predicts its output,
    right when every answer occurs in it (RULER's string_match_all, `all`)."""
    key = "pred" if metric == "acc" else "pred_norm"
    preds = {}
    for i, path in enumerate(paths.split(",")):
        with open(path) as f:
            for line_no, line in enumerate(f, 1):
                try:
                    r = json.loads(line)
                    if "output" in r:
                        preds[(r["task"], r["line"], i)] = (r["output"], bool(r["all"]))
                    else:
                        preds[(r["task"], r["doc"], i)] = (r[key], r[key] == r["gold"])
                except (ValueError, KeyError) as e:
                    sys.exit(f"{path}:{line_no}: not an eval samples record ({e})")
    return preds


def right(preds):
    """{key: whether the prediction is right} of load_preds' result."""
    return {k: ok for k, (_, ok) in preds.items()}


def agreement(preds, ref):
    """{key: whether the prediction equals the reference's}."""
    return {k: pred == ref[k][0] for k, (pred, _) in preds.items()}


def compare(a, b):
    """Per-document booleans a and b of the same documents -> (n, share of a,
    share of b, documents only a holds, only b holds, McNemar p)."""
    n = len(a)
    only_a = sum(a[k] and not b[k] for k in a)
    only_b = sum(b[k] and not a[k] for k in a)
    return n, sum(a.values()) / n, sum(b.values()) / n, only_a, only_b, mcnemar_exact(only_a, only_b)


def interval(n, only_a, only_b, z=1.96):
    """The Wald interval (low, high) of the paired difference B - A."""
    d = (only_b - only_a) / n
    se = math.sqrt(max(0.0, ((only_a + only_b) / n - d * d) / n))
    return d - z * se, d + z * se


def table(a, b, label, label_a, label_b):
    """Markdown rows comparing the per-document booleans a and b per task."""
    rows = [f"| task | n | {label_a} {label} | {label_b} {label} | B - A points | 95% interval | "
            f"only A | only B | McNemar p |", "|---|---|---|---|---|---|---|---|---|"]
    for t in dict.fromkeys(k[0] for k in a):
        docs = [k for k in a if k[0] == t]
        n, share_a, share_b, only_a, only_b, p = compare({k: a[k] for k in docs}, {k: b[k] for k in docs})
        low, high = interval(n, only_a, only_b)
        rows.append(f"| {t} | {n} | {share_a:.3f} | {share_b:.3f} | {100 * (share_b - share_a):+.2f} | "
                    f"[{100 * low:+.2f}, {100 * high:+.2f}] | {only_a} | {only_b} | {p:.3f} |")
    return "\n".join(rows)


def mcnemar_exact(b, c):
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--reference", help="samples of the same documents with the full prefix KV")
    ap.add_argument("--metric", choices=["acc", "acc_norm"], default="acc")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    args = ap.parse_args()
    lists = [args.a, args.b] + ([args.reference] if args.reference else [])
    if len({x.count(",") for x in lists}) != 1:
        sys.exit(f"{args.b}: not as many files as {args.a} (and --reference)")
    pa, pb = load_preds(args.a, args.metric), load_preds(args.b, args.metric)
    if pa.keys() != pb.keys():
        sys.exit(f"{args.b}: scores other documents than {args.a} ({len(pa)} vs {len(pb)} records)")
    print(table(right(pa), right(pb), args.metric, args.label_a, args.label_b))
    if args.reference:
        ref = load_preds(args.reference, args.metric)
        if ref.keys() != pa.keys():
            sys.exit(f"{args.reference}: scores other documents than {args.a} ({len(ref)} vs {len(pa)} records)")
        print()
        print(table(agreement(pa, ref), agreement(pb, ref), "agrees with full KV", args.label_a, args.label_b))


if __name__ == "__main__":
    main()
