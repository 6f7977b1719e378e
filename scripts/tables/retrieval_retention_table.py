#!/usr/bin/env python3
"""A long-context task's accuracy against retention (the retrieval task, or a
task file's questions such as RULER's needles), every system beside full
KV (recomp) or another system on the same questions: ROOT/rR/NAME.json and
NAME.samples.jsonl for R in 5, 10, 25, 50 (scripts/repro/retrieval_accuracy.sh's and
scripts/repro/ruler_accuracy.sh's layout), recomp's from ROOT/r25. Accuracy is the
samples' share right (multiple choice: the gold choice; generation: every
answer in the output). Per system and retention: accuracy, its
paired difference from the reference in points with the 95% interval and
McNemar p (scripts/tables/paired_test.py), and the lowest retention at which the
system comes within 5 points of the reference (its point difference at least -5).

Usage: retrieval_retention_table.py ROOT [--reference NAME] NAME[=LABEL] ...
(reference: recomp, or a system whose rR/NAME files are at each retention)
"""
import importlib.util
import os
import sys

RETENTIONS = (5, 10, 25, 50)


def paired_test():
    spec = importlib.util.spec_from_file_location(
        "paired_test", os.path.join(os.path.dirname(os.path.abspath(__file__)), "paired_test.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(root, names, reference="recomp"):
    pt = paired_test()

    def reference_at(r):
        base = os.path.join(root, "r25" if reference == "recomp" else f"r{r}", reference)
        right = pt.right(pt.load_preds(base + ".samples.jsonl", "acc"))
        return sum(right.values()) / len(right), right

    print("| system | " + " | ".join(f"{r}%: acc, vs {reference} [95%], p" for r in RETENTIONS) +
          f" | within 5 points of {reference} from |")
    print("|---|" + "---|" * len(RETENTIONS) + "---|")
    for spec in names:
        name, _, label = spec.partition("=")
        cells, first = [], None
        for r in RETENTIONS:
            base = os.path.join(root, f"r{r}", name)
            if not os.path.exists(base + ".json"):
                cells.append("-")
                continue
            full, ref = reference_at(r)
            got = pt.right(pt.load_preds(base + ".samples.jsonl", "acc"))
            acc = sum(got.values()) / len(got)
            if set(got) != set(ref):
                sys.exit(f"{base}.samples.jsonl: not {reference}'s questions")
            n, _, _, only_ref, only_got, p = pt.compare(ref, got)
            low, high = pt.interval(n, only_ref, only_got)
            diff = 100 * (acc - full)
            if first is None and diff >= -5:
                first = f"{r}%"
            ps = "<0.001" if p < 0.001 else f"{p:.3f}"
            cells.append(f"{acc:.4f}, {diff:+.2f} [{100 * low:+.1f}, {100 * high:+.1f}], {ps}")
        print(f"| {label or name} | " + " | ".join(cells) + f" | {first or 'none up to 50%'} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    reference = "recomp"
    if len(args) > 2 and args[1] == "--reference":
        reference = args[2]
        del args[1:3]
    if len(args) < 2:
        sys.exit(__doc__)
    main(args[0], args[1:], reference)
