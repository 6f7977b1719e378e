#!/usr/bin/env bash
# The device check of the CUDA data path (docs/gpu.md), one command on a CUDA
# machine that has python3 with torch + transformers, a compiler and CMake, but
# maybe no Debian -dev packages and no network:
#   scripts/gpu_check.sh CARRY_DIR OUT_DIR
# CARRY_DIR is what scripts/gpu_prepare.sh made on a Debian machine: deps/
# (scripts/pack_deps.sh), shape/ (SmolLM2-135M's config.json and tokenizer
# files) and tokenizers/ (the fixtures' gpt2/ and llama2/). Steps, each under
# its own time limit, about 7 minutes on an H200 machine in all:
#  1. build against the machine's own LibTorch (impress, the tests, the store bench);
#  2. the CUDA tests (tests/cuda_test.cc: every system's logits on CUDA = the
#     CPU's, with and without read-ahead; the next layer's read on the load
#     stream before this layer ends) and the model tests on CUDA;
#  3. impress run, fp16 on CUDA, real disk, no caps, all seven systems, PIQA
#     and RTE, 8 prefixes of ~4K tokens (a pool of 750 MB against 128 MB GPU
#     and 256 MB CPU caches), on SmolLM2-135M's shapes with random weights
#     (the trained weights are not on the device machine: TTFT and bytes do
#     not depend on them, accuracy does and is not reported);
#  4. the summary: as's I/O share of TTFT, IMPRESS against AS+H2O+LFU, the
#     share of copy time hidden under compute (the run JSON's device_timeline);
#  5. the store's read bandwidth against fio on this machine's disk.
# Logs and JSON go to OUT_DIR; OUT_DIR/summary.md is the result.
# Rehearsal on a CPU machine: DEVICE=cpu SCALE=tiny runs every step at a size
# two cores finish in minutes (the CUDA tests then skip, saying so).
set -uo pipefail
carry=$(readlink -f "$1"); out=$2
deps=$carry/deps; shape=$carry/shape
device=${DEVICE:-cuda}; dtype=float16
if [ "${SCALE:-gpu}" = tiny ]; then
  scale=(--pool 2 --prefix-tokens 256 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M); dtype=float32
else
  scale=(--pool 8 --prefix-tokens 4096 --requests 24 --warmup 8 --gpu-cache 128M --cpu-cache 256M)
fi
mkdir -p "$out"; out=$(readlink -f "$out")
exec > >(tee "$out/gpu_check.log") 2>&1
step() { echo; echo "=== $* ($(date +%T))"; }
limit() { local s=$1; shift; timeout --signal=KILL "$s" "$@"; local rc=$?; [ $rc -eq 137 ] && echo "(step stopped at its ${s}s limit)"; return $rc; }

step machine
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
echo "cores $(nproc), $(free -g | awk '/Mem:/{print $2}') GiB RAM; /tmp on: $(df -h /tmp | tail -1)"

step build
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
limit 240 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DIMPRESS_DEPS_DIR="$deps" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
limit "${BUILD_LIMIT:-300}" cmake --build build-gpu -j "$(nproc)" --target impress impress_tests impress_store_bench >>"$out/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "$out/build.log" | head -40; exit 1; }
echo "built"

step "fixtures (tiny checkpoints, transformers' outputs)"
shared=$(mktemp -d); ln -s "$carry/tokenizers" "$shared/tokenizers"
limit 120 python3 scripts/make_fixtures.py --tiny-only --out build-gpu/fixtures --shared "$shared" 2>&1 | grep -v -E "Loading|it/s" | tail -3

step "CUDA tests"
IMPRESS_FIXTURES=$PWD/build-gpu/fixtures IMPRESS_TEST_DEVICE=cuda limit 150 \
  build-gpu/impress_tests --gtest_filter='*CudaPath*:*ModelVsTransformers*:*ReuseTest*' 2>&1 |
  tee "$out/cuda_tests.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|OK \]" | tail -40

step "SmolLM2-135M's shapes, random fp16 weights"
model=/tmp/smollm2-shape
python3 - "$shape" "$model" <<'PY'
import shutil, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig.from_pretrained(sys.argv[1])
torch.manual_seed(0)
with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
    m = LlamaForCausalLM(cfg).half()
m.save_pretrained(sys.argv[2], safe_serialization=True)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{sys.argv[1]}/{f}", sys.argv[2])
print("saved", sum(p.numel() for p in m.parameters()) / 1e6, "M params")
PY

for task in piqa rte; do
  step "impress run on CUDA, $task: all seven systems"
  rm -rf "/tmp/gpu-store-$task"
  limit 150 build-gpu/impress run --model "$model" --task "$task" --data data "${scale[@]}" --store "/tmp/gpu-store-$task" \
    --device "$device" --dtype "$dtype" --system recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress \
    --json "$out/run_$task.json" | tee "$out/run_$task.md" | head -12
done

step summary
python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, os, sys
out = sys.argv[1]
print("| task | as I/O share of TTFT | as copy hidden under compute | IMPRESS / AS+H2O+LFU TTFT | bytes below the caches, h2o-lfu / impress |")
print("|---|---|---|---|---|")
for task in ("piqa", "rte"):
    p = f"{out}/run_{task}.json"
    if not os.path.exists(p):
        print(f"| {task} | (no run) | | | |"); continue
    runs = {r["system"]: r for r in json.load(open(p))["runs"]}
    a, h, i = runs["as"], runs["h2o-lfu"], runs["impress"]
    below = lambda r: r["bytes_read"]["disk"] + r["bytes_read"].get("remote", 0)
    hidden = a.get("device_timeline", {}).get("copy_hidden_share", float("nan"))
    print(f"| {task} | {a['io_share']:.2f} | {hidden:.2f} | {h['ttft_ms']['mean'] / i['ttft_ms']['mean']:.2f}x lower "
          f"({i['ttft_ms']['mean']:.1f} vs {h['ttft_ms']['mean']:.1f} ms) | {below(h) / max(1, below(i)):.2f}x |")
PY

step "store read bandwidth against fio, this machine's disk"
if command -v fio >/dev/null; then
  limit 60 bash scripts/bench_store.sh build-gpu /tmp/gpu-bench-store | tee "$out/store_vs_fio.txt"
else
  echo "fio is not installed here: the store's bandwidth alone" | tee "$out/store_vs_fio.txt"
  limit 60 build-gpu/impress_store_bench --dir /tmp/gpu-bench-store --set 32 --chunks 4096 --threads 8 | tee -a "$out/store_vs_fio.txt"
fi
step done
