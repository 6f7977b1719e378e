#!/usr/bin/env python3
"""A comparison bench's result as JSON with its provenance: the impress
benchmark's JSON (its context holds the provenance as impress_<field>, see
bench/bench_provenance.h) and the other tool's number, with their ratio.

Usage: bench_provenance.py BENCH_JSON METRIC OTHER_VALUE OTHER_LABEL OUT [NOTE]
METRIC: the impress benchmark's counter (first iteration row; `max:NAME` for
the best of repetitions). Prints the ratio.
"""
import json
import sys


def main(bench_json, metric, other, label, out, note=""):
    b = json.load(open(bench_json))
    ctx = b["context"]
    prov = {k[len("impress_"):]: ctx[k] for k in ctx if k.startswith("impress_")}
    for k in ("model", "machine"):
        if k in prov and prov[k].startswith("{"):
            prov[k] = json.loads(prov[k])
    prov["dirty"] = prov.get("dirty") == "true"
    rows = [x for x in b["benchmarks"] if x.get("run_type", "iteration") == "iteration"]
    if metric.startswith("max:"):
        ours = max(float(x[metric[4:]]) for x in rows)
    else:
        ours = float(rows[0][metric])
    result = {"provenance": prov, "metric": metric, "impress": ours, label: float(other),
              "ratio": ours / float(other), "note": note, "benchmarks": rows}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{ours / float(other):.3f}")


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    main(*sys.argv[1:])
