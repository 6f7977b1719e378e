#!/usr/bin/env bash
# The device check of the CUDA data path (docs/gpu.md), one command on a CUDA
# machine that has python3 with torch + transformers, a compiler and CMake, but
# maybe no Debian -dev packages and no network:
#   scripts/gpu_check.sh CARRY_DIR OUT_DIR
# CARRY_DIR is what scripts/gpu_prepare.sh made on a Debian machine: deps/
# (scripts/pack_deps.sh) and shape/ (SmolLM2-135M's config.json and tokenizer
# files); data/ and tests/tokenizers/ travel with the tree. Steps, each under
# its own time limit, about 7 minutes on an H200 machine in all:
#  1. build against the machine's own LibTorch (impress, the tests, the store bench);
#  2. the CUDA tests (tests/cuda_test.cc: every system's logits on CUDA = the
#     CPU's, with and without read-ahead; the next layer's read on the load
#     stream before this layer ends) and the model tests on CUDA;
#  3. impress run, fp16 on CUDA, real disk, no caps, all seven systems, PIQA
#     and RTE, 8 prefixes of ~4K tokens (a pool of 750 MB against 128 MB GPU
#     and 256 MB CPU caches), on SmolLM2-135M's shapes with random weights
#     (the trained weights do not fit the trip to the device machine: recomp's
#     and as's TTFT and bytes do not depend on them; the selection systems'
#     bytes and every accuracy do, and random heads rarely agree, so IMPRESS
#     mostly falls back to H2O there: the summary says so);
#  4. the summary: as's I/O share of TTFT, IMPRESS against AS+H2O+LFU, the
#     share of copy time hidden under compute (the run JSON's device_timeline);
#  5. the store's read bandwidth against fio on this machine's disk.
# OUT_DIR gets three files: gpu_check.log (everything printed), summary.md
# (the result) and gpu_check.tgz (every log and JSON, refreshed after each
# step, so a run stopped early still brings back what it had).
# Rehearsal on a CPU machine: DEVICE=cpu SCALE=tiny runs every step at a size
# two cores finish in minutes (the CUDA tests then skip, saying so).
set -uo pipefail
carry=$(readlink -f "$1"); mkdir -p "$2"; final=$(readlink -f "$2")
out=$(mktemp -d)  # the work folder
exec > >(tee "$final/gpu_check.log") 2>&1
source "$(dirname "$0")/gpu_common.sh"
if [ "${SCALE:-gpu}" = tiny ]; then
  scale=(--pool 2 --prefix-tokens 256 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M)
else
  scale=(--pool 8 --prefix-tokens 4096 --requests 24 --warmup 8 --gpu-cache 128M --cpu-cache 256M)
fi

step machine
machine

step build
build_gpu impress impress_tests impress_store_bench || exit 1

step "fixtures (tiny checkpoints, transformers' outputs)"
limit 120 python3 scripts/make_fixtures.py --tiny-only --out build-gpu/fixtures 2>&1 | grep -v -E "Loading|it/s" | tail -3

step "CUDA tests"
IMPRESS_FIXTURES=$PWD/build-gpu/fixtures IMPRESS_TEST_DEVICE=$device limit 150 \
  build-gpu/impress_tests --gtest_filter='*CudaPath*:*ModelVsTransformers*:*ReuseTest*' 2>&1 |
  tee "$out/cuda_tests.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|OK \]" | tail -40

step "SmolLM2-135M's shapes, random fp16 weights"
model=/tmp/smollm2-shape
shape_model "$model"

for task in piqa rte; do
  step "impress run on $device, $task: all seven systems"
  rm -rf "/tmp/gpu-store-$task"
  limit 150 build-gpu/impress run --model "$model" --task "$task" --data data "${scale[@]}" --store "/tmp/gpu-store-$task" \
    --device "$device" --dtype "$dtype" --system "$(build-gpu/impress run --list-systems | paste -sd,)" \
    --json "$out/run_$task.json" >"$out/run_$task.md"
  head -12 "$out/run_$task.md"
done

step summary
python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, os, sys
out = sys.argv[1]
print("Model: SmolLM2-135M's shapes with random weights: recomp's and as's numbers are the trained model's;")
print("the selection systems' are not (IMPRESS falls back to H2O where the probe heads disagree, as random heads do).\n")
print("| task | as I/O share of TTFT | as copy hidden under compute | IMPRESS / AS+H2O+LFU TTFT | bytes below the caches, h2o-lfu / impress | impress fallback share |")
print("|---|---|---|---|---|---|")
for task in ("piqa", "rte"):
    p = f"{out}/run_{task}.json"
    if not os.path.exists(p):
        print(f"| {task} | (no run) | | | |"); continue
    runs = {r["system"]: r for r in json.load(open(p))["runs"]}
    a, h, i = runs["as"], runs["h2o-lfu"], runs["impress"]
    below = lambda r: r["bytes_read"]["disk"] + r["bytes_read"].get("remote", 0)
    hidden = a.get("device_timeline", {}).get("copy_hidden_share", float("nan"))
    print(f"| {task} | {a['io_share']:.2f} | {hidden:.2f} | {h['ttft_ms']['mean'] / i['ttft_ms']['mean']:.2f}x lower "
          f"({i['ttft_ms']['mean']:.1f} vs {h['ttft_ms']['mean']:.1f} ms) | {below(h) / max(1, below(i)):.2f}x | {i['fallback_share']:.2f} |")
PY

step "store read bandwidth against fio, this machine's disk"
disk_vs_fio | tee "$out/store_vs_fio.txt"
step done
save
