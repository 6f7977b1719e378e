#!/usr/bin/env bash
# Every JSON the tool writes says how it was made: `impress --version` is the
# checkout's commit (with -dirty when tracked files differ), and an eval's and
# a run's --json carry that commit, their command line, the model's digest
# (CRC-32C over config.json and the weights, recomputed here in Python),
# LibTorch's version and the machine; so do `store stats --json` and a
# benchmark's JSON (Google Benchmark's context, each field as impress_<field>).
# Usage: provenance.sh IMPRESS_BINARY FIXTURES_DIR DATA_DIR SOURCE_DIR [BENCH_BINARY]
set -euo pipefail
bin=$1; fixtures=$2; data=$3; src=$4; bench=${5:-}
model=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models']['tiny-llama-gqa'])" "$fixtures/fixtures.json")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if want=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
  [ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] || want="$want-dirty"
else
  want=unknown  # not a git checkout: the build could not name its commit
fi
got=$("$bin" --version)
[ "$got" = "$want" ] || { echo "provenance: --version says '$got', the checkout is '$want' (rebuild?)"; exit 1; }
"$bin" eval --model "$model" --data "$data" --task copa --limit 2 --shots 1 --json "$tmp/eval.json" >/dev/null
"$bin" run --model "$model" --data "$data" --task copa --system as --pool 1 --prefix-tokens 64 --requests 1 \
  --warmup 0 --store "$tmp/store" --json "$tmp/run.json" >/dev/null
"$bin" store stats --store "$tmp/store" --json >"$tmp/store.json"
if [ -n "$bench" ]; then
  "$bench" --benchmark_filter='BM_Memcpy/fp16' --benchmark_min_time=0.01 --benchmark_out="$tmp/bench.json" \
    --benchmark_out_format=json >/dev/null
fi
python3 - "$tmp" "$model" "$want" "$(python3 -c 'import torch;print(torch.__version__.split("+")[0])')" <<'PY'
import glob, json, os, sys
tmp, model, want, torch_version = sys.argv[1:]
commit, dirty = want.removesuffix("-dirty"), want.endswith("-dirty")

def crc32c(data, crc=0):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF

data = open(os.path.join(model, "config.json"), "rb").read()
for w in sorted(glob.glob(os.path.join(model, "*.safetensors"))):
    data += open(w, "rb").read()
digest = "crc32c:%08x" % crc32c(data)
for name, verb in (("eval", "eval"), ("run", "run")):
    p = json.load(open(os.path.join(tmp, name + ".json")))["provenance"]
    assert p["commit"] == commit and p["dirty"] == dirty, (name, p["commit"], p["dirty"], want)
    assert p["command"].startswith("impress " + verb + " --model ") and "--json" in p["command"], p["command"]
    assert p["model"] == {"dir": model, "digest": digest}, (p["model"], digest)
    assert p["libtorch"] == torch_version, (p["libtorch"], torch_version)
    assert p["machine"]["cores"] > 0 and p["machine"]["date"], p["machine"]
p = json.load(open(os.path.join(tmp, "store.json")))["provenance"]
assert p["commit"] == commit and p["dirty"] == dirty and p["command"].startswith("impress store stats "), p
names = "eval, run and store stats JSON"
if os.path.exists(os.path.join(tmp, "bench.json")):
    c = json.load(open(os.path.join(tmp, "bench.json")))["context"]
    assert c["impress_commit"] == commit and c["impress_dirty"] == str(dirty).lower(), c
    assert "--benchmark_out=" in c["impress_command"] and json.loads(c["impress_machine"])["cores"] > 0, c
    names += " and a benchmark's context"
print(f"provenance: {want}, model {digest}, in {names}")
PY
