#!/usr/bin/env bash
# Sweeps through the real executable on a tiny checkpoint: run with two
# retentions x two chunk sizes and eval with two ITF units x two alphas write
# one result per combination, each naming its own parameters, in the
# documented order; `as`, which keeps every token, runs once per chunk size
# and its row is repeated at the second retention, marked so.
# Usage: sweep_cli.sh IMPRESS_BINARY FIXTURES_DIR DATA_DIR
set -euo pipefail
bin=$1; fixtures=$2; data=$3
model=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models']['tiny-llama-gqa'])" "$fixtures/fixtures.json")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$bin" run --model "$model" --data "$data" --task piqa --system as,impress --pool 2 --prefix-tokens 96 \
  --requests 2 --warmup 1 --gpu-cache 64K --cpu-cache 128K --store "$tmp/store" \
  --retention 0.25,0.5 --chunk 16,32 --json "$tmp/run.json" >/dev/null
"$bin" eval --model "$model" --data "$data" --task copa --shots 2 --limit 3 --system impress-itf --retention 0.25 \
  --itf-unit token,chunk --chunk 8 --alpha 0,0.6 --json "$tmp/eval.json" >/dev/null
python3 - "$tmp" <<'PY'
import json, os, sys
t = sys.argv[1]
run = json.load(open(os.path.join(t, "run.json")))["sweep"]
got = [(r["config"]["retention"], r["config"]["chunk"]) for r in run]
assert got == [(0.25, 16), (0.25, 32), (0.5, 16), (0.5, 32)], got
assert all([x["system"] for x in r["runs"]] == ["as", "impress"] for r in run)
# as at retention 0.5 is the run measured at 0.25 with the same chunk size;
# impress, which depends on the retention, is measured at every point.
for later, first in ((2, 0), (3, 1)):
    rep = dict(run[later]["runs"][0])
    assert rep.pop("repeated") is True, run[later]["runs"][0].keys()
    assert rep == run[first]["runs"][0]
for r in run[:2]:
    assert not any("repeated" in x for x in r["runs"])
assert not any("repeated" in r["runs"][1] for r in run)
# impress keeps its point's retention of the prefix at every layer (k = r x P,
# a whole number of tokens for these prefixes, so exactly).
for r in run:
    imp = r["runs"][1]
    assert imp["kept_share"] == r["config"]["retention"], (imp["kept_share"], r["config"])
    assert all(x == r["config"]["retention"] for x in imp["layer_kept_share"]), imp["layer_kept_share"]
assert sorted(os.listdir(os.path.join(t, "store"))) == ["chunk16", "chunk32"], os.listdir(os.path.join(t, "store"))
ev = json.load(open(os.path.join(t, "eval.json")))["sweep"]
got = [(e["itf_unit"], e["alpha"], e["chunk"]) for e in ev]
assert got == [("token", 0, 8), ("token", 0.6, 8), ("chunk", 0, 8), ("chunk", 0.6, 8)], got
# alpha = 0 never trusts the probe heads: every probed layer falls back, and
# the unit of the agreed set does not matter.
for e in (ev[0], ev[2]):
    assert e["results"][0]["fallback_share"] == 1.0, e["results"][0]
assert ev[0]["results"][0]["gold_loglik_mean"] == ev[2]["results"][0]["gold_loglik_mean"]
print("sweep_cli: run 4 points (as repeated at 2), eval 4 points")
PY
# run --brief: the headline rows carry the JSON's numbers, each mean's
# speedup over h2o-lfu's, and nothing of the full report.
"$bin" run --model "$model" --data "$data" --task piqa --system as,h2o-lfu,impress --pool 2 --prefix-tokens 96 \
  --requests 2 --warmup 1 --gpu-cache 64K --cpu-cache 128K --store "$tmp/brief" --brief --json "$tmp/brief.json" \
  >"$tmp/brief.txt"
python3 - "$tmp/brief.txt" "$tmp/brief.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
runs = {r["system"]: r for r in json.load(open(sys.argv[2]))["runs"]}
rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]] for l in text.splitlines()
        if l.startswith("| ") and not l.startswith("| system")}
assert sorted(rows) == sorted(runs), (rows, text)
base = runs["h2o-lfu"]["ttft_ms"]["mean"]
for name, r in runs.items():
    mean, p99, speedup, disk, acc = rows[name]
    assert mean == f"{r['ttft_ms']['mean']:.1f}" and p99 == f"{r['ttft_ms']['p99']:.1f}", (name, rows[name])
    assert speedup == f"{base / r['ttft_ms']['mean']:.2f}x", (name, speedup)
    assert disk == f"{r['bytes_read']['disk'] / 1e6:.1f}" and acc == f"{r['acc']:.3f}", (name, rows[name])
assert "io mean ms" not in text and "per layer" not in text, text
print("sweep_cli: run --brief's headline equals its JSON")
PY
