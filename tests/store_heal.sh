#!/usr/bin/env bash
# One KV for one prefix (docs/store.md): a damaged store costs time, never an
# answer, and heals. For every system that reuses KV, on its own copy of a
# cleanly filled store with one layer of every chunk damaged (a byte flipped
# in its keys):
#  - the run that meets the damage gives per-request log-likelihoods bitwise
#    equal to the clean store's, recomputes (counted) and writes every chunk
#    back (healed_chunks);
#  - the healed store's chunks are byte-identical to the clean store's: every
#    (chunk, layer)'s checksums in the log equal the clean store's, and
#    `store verify` finds every part matching them;
#  - a second run on it recomputes nothing and gives the same log-likelihoods.
# Then a first request on an empty store: it stores chunks equal to the fill's.
# The log and chunks.dat are read from their documented format (store_files.py).
# Usage: store_heal.sh IMPRESS_BINARY MODEL_DIR DATA_DIR
set -euo pipefail
bin=$1; model=$2; data=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

run() {  # run SYSTEM STORE JSON: 8 COPA requests over 3 prefixes of 192 stored tokens
  "$bin" run --model "$model" --data "$data" --task copa --system "$1" --pool 3 --prefix-tokens 256 --chunk 64 \
    --requests 8 --warmup 0 --spread 1 --gpu-cache 1M --cpu-cache 2M --store "$2" --json "$3" >"$3.log" 2>&1 ||
    { echo "store_heal: run failed:"; tail -5 "$3.log"; exit 1; }
}
py() { PYTHONPATH="$here" python3 - "$@"; }

run as "$tmp/clean" "$tmp/fill.json"  # fills the store: every prefix computed once
for sys in as h2o-lru h2o-lfu impress-itf impress-itf-ro impress; do
  run "$sys" "$tmp/clean" "$tmp/ref-$sys.json"
  cp -r "$tmp/clean" "$tmp/$sys"
  rm -f "$tmp/$sys/LOCK"
  py "$tmp/$sys" <<'PY'
import json, sys
from store_files import flip, records
st = sys.argv[1]
g = json.load(open(f"{st}/MANIFEST"))["geometry"]
pad = lambda n: (n + 4095) // 4096 * 4096
kv_part = pad(g["chunk_tokens"] * g["kv_heads"] * g["head_dim"] * g["elem_bytes"])
final = {}
for _, r in records(st):
    for c in r.get("chunks", []):
        final[c["id"]] = final.get(c["id"], {}) | {c["layer"]: c["off"]}
for cid, layers in final.items():  # one layer of every chunk, a different layer each:
    layer = sorted(layers)[cid % len(layers)]  # its keys and its probe keys, so that every system reads the damage
    flip(f"{st}/chunks.dat", layers[layer] + 100)
    flip(f"{st}/chunks.dat", layers[layer] + 2 * kv_part + 100)
print("store_heal: flipped a byte in %d chunks" % len(final))
PY
  run "$sys" "$tmp/$sys" "$tmp/met-$sys.json"
  run "$sys" "$tmp/$sys" "$tmp/after-$sys.json"
  "$bin" store verify --store "$tmp/$sys" >/dev/null || { echo "store_heal: $sys: verify failed on the healed store"; exit 1; }
  py "$sys" "$tmp/clean" "$tmp/$sys" "$tmp/ref-$sys.json" "$tmp/met-$sys.json" "$tmp/after-$sys.json" <<'PY'
import json, sys
from store_files import records
name, clean, healed = sys.argv[1:4]
ref, met, after = (json.load(open(p))["runs"][0] for p in sys.argv[4:7])
ll = lambda r: [x["loglik"] for x in r["per_request"]]
assert ll(met) == ll(ref), (name, "the run that met the damage answered differently")
assert ll(after) == ll(ref), (name, "the run after it answered differently")
assert met["recomputed_after_error"] > 0 and met["healed_chunks"] > 0, (name, met["recomputed_after_error"])
assert after["recomputed_after_error"] == 0 and after["healed_chunks"] == 0, (name, after["recomputed_after_error"])
def crcs(st):
    out = {}
    for _, r in records(st):
        for c in r.get("chunks", []):
            out[(c["id"], c["layer"])] = c["crc"]
    return out
a, b = crcs(clean), crcs(healed)
assert a.keys() == b.keys(), name
assert a == b, (name, sum(a[k] != b[k] for k in a), "chunk layers differ from the clean store's")
print("store_heal: %s: %d chunks healed by %d requests, %d chunk layers equal to the clean store's; "
      "log-likelihoods of both runs equal the clean store's" % (name, met["healed_chunks"],
      met["recomputed_after_error"], len(a)))
PY
done
