#!/usr/bin/env bash
# Every `impress reproduce` driver end to end on two tiny checkpoints at a
# tiny scale: each figure writes JSON with rows, CSV with a header and one
# line per row, and markdown naming its command; scripts/tables/plot.py draws each.
# fig15 at retention 1 must give recomp's accuracy and answers, retrieval
# among the tasks as every accuracy figure takes it; the spread
# probe layout runs in stores of its own.
# Usage: reproduce_smoke.sh IMPRESS_BINARY FIXTURES_DIR DATA_DIR PLOT_SCRIPT
set -euo pipefail
bin=$1; fixtures=$2; data=$3; plot=$4
model() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models'][sys.argv[2]])" "$fixtures/fixtures.json" "$1"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
OMP_NUM_THREADS=1 "$bin" reproduce all --model "$(model tiny-llama-gqa)" --model "$(model tiny-opt-preln)" \
  --out "$tmp/figs" --store "$tmp/stores" --data "$data" --tasks piqa,copa,retrieval --task piqa --prefixes 2 \
  --prefix-tokens 96 --requests 2 --warmup 2 --gpu-cache 128K --cpu-cache 256K --disk-bw 0 --h2d-bw 0 \
  --docs 3 --shots 1 --analysis-docs 2 --retention 1,0.25 --alpha 0,0.6 --chunk 16,32 --pool 2,3 \
  --retrieval-tokens 256 --retrieval-questions 4 >"$tmp/out"
python3 - "$tmp/figs" $("$bin" list figures) <<'PY'
import csv, json, os, sys
d, names = sys.argv[1], sys.argv[2:]
assert sorted(names) == sorted(n[:-5] for n in os.listdir(d) if n.endswith(".json")), names  # every registered one
for n in names:
    j = json.load(open(os.path.join(d, n + ".json")))
    assert j["name"] == n and j["rows"], n
    assert all(len(r) == len(j["columns"]) for r in j["rows"]), n
    ids = j["column_ids"]  # what scripts read: one per column, distinct, lower_snake
    assert len(ids) == len(j["columns"]) and len(set(ids)) == len(ids), n
    assert all(i and i.replace("_", "").isalnum() and i == i.lower() for i in ids), (n, ids)
    assert j["command"].startswith("impress reproduce " + n), n
    assert j["machine"]["cores"] > 0, n
    rows = list(csv.reader(open(os.path.join(d, n + ".csv"))))
    assert rows[0] == j["columns"] and len(rows) == len(j["rows"]) + 1, n
    assert j["command"] in open(os.path.join(d, n + ".md")).read(), n
    assert isinstance(j["headline"], str) and (j["headline"] or n == "codec"), n  # the registry's headline
f15 = json.load(open(os.path.join(d, "fig15.json")))
assert len(f15["rows"]) == 3 * 2, "fig15: one row per task and retention"
assert {r[0] for r in f15["rows"]} == {"piqa", "copa", "retrieval"}, "fig15: retrieval beside the four tasks"
for r in f15["rows"]:  # keeping every token is full reuse: recomp's accuracy and answers
    assert 0 <= r[6] <= 1 and 0 <= r[7] <= 1, r
    if r[1] == 1:
        assert r[3] == r[2] and r[4] == r[2] and r[6] == 1 and r[7] == 1, r
spi = json.load(open(os.path.join(d, "spi.json")))
si = {c: i for i, c in enumerate(spi["column_ids"])}
assert len(spi["rows"]) == 3 * 2 * 5, "spi: every (task, retention, system), retrieval beside the two tasks"
assert {r[si["task"]] for r in spi["rows"]} == {"piqa", "copa", "retrieval"}
for r in spi["rows"]:
    assert 0 <= r[si["recall"]] <= 1 + 1e-9, r
    if r[si["retention"]] == 1 or r[si["system"]] == "h2o-lru":  # H2O's own top-k, or every token
        assert abs(r[si["recall"]] - 1) < 1e-9, r
    if r[si["retention"]] == 1:
        assert r[si["acc"]] == r[si["acc_recomp"]], r
f25 = json.load(open(os.path.join(d, "fig25.json")))
assert len({r[0] for r in f25["rows"]}) == 2, "fig25: one group per model"
codec = json.load(open(os.path.join(d, "codec.json")))
ci = {c: i for i, c in enumerate(codec["column_ids"])}
points = {(r[ci["system"]], r[ci["itf_unit"]]) for r in codec["rows"]}
assert len(points) == 6 and len(codec["rows"]) == 3 * 6, "codec: every point at fp16, int8 and int4 on the disk"
for r in codec["rows"]:  # at this scale the GPU tier may hold everything: nothing below it
    assert r[ci["slow_tier"]] == "disk" and r[ci["mb_below_gpu_per_request"]] >= 0, r
    if r[ci["codec"]] == "fp16" and r[ci["mb_below_gpu_per_request"]] > 0:
        assert r[ci["fp16_over_codec_bytes"]] == 1, r
print(f"{len(names)} figures checked")
PY
# The spread probe layout: its own store folder, and the command says so.
OMP_NUM_THREADS=1 "$bin" reproduce fig19 fig15 --model "$(model tiny-llama-gqa)" --out "$tmp/spread" \
  --store "$tmp/stores" --data "$data" --tasks copa --task piqa --prefixes 2 --prefix-tokens 96 --requests 2 \
  --warmup 2 --gpu-cache 128K --cpu-cache 256K --disk-bw 0 --h2d-bw 0 --docs 3 --shots 1 --retention 0.25 \
  --probe-layout spread >/dev/null
ls -d "$tmp/stores"/*-spread >/dev/null
python3 - "$tmp/spread" <<'PY'
import json, os, sys
for n in ("fig19", "fig15"):
    j = json.load(open(os.path.join(sys.argv[1], n + ".json")))
    assert j["rows"] and "--probe-layout spread" in j["command"], n
PY
python3 "$plot" --impress "$bin" "$tmp/figs" >/dev/null
n=$(ls "$tmp/figs"/*.png | wc -l)
want=$("$bin" list figures | wc -l)
[ "$n" -eq "$want" ] || { echo "plot.py drew $n of $want figures"; exit 1; }
echo "reproduce_smoke: $n figures written and drawn"
