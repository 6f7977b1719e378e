#!/usr/bin/env bash
# The device check of the CUDA data path (docs/gpu.md), in three calls made
# back to back on one warm CUDA machine that has python3 with torch and
# transformers, a compiler, CMake and ninja, but no Debian -dev packages, no
# gguf package and no network:
#   scripts/gpu/gpu_check.sh CALL CARRY_DIR OUT_DIR      (CALL: 1, 2, 3 or 4)
# CARRY_DIR is what scripts/gpu/gpu_prepare.sh made here for that call
# (build/gpu-carry/callN); data/ and tests/tokenizers/ travel with the tree.
# Each call may carry 64 MiB with the tree and run 10 minutes, so the trained
# model's GGUF comes in three parts; each part is kept in build-gpu/ (ignored
# by git, so it stays on the machine while it is warm) until the last arrives.
#  call 1: build (impress, the tests, the store bench); where the test
#          binary's std::filesystem resolves (LinkOrder.*); the CUDA tests
#          (tests/cuda_test.cc: every tier on CUDA against the CPU), the model
#          tests against transformers on CUDA and the reuse tests, on the tiny
#          checkpoints, one process per suite (a crash prints its test and
#          stack: tests/crash_trace.cc).
#  call 2: keeps the GGUF's second part; nothing else (a short call).
#  call 3: joins the GGUF (its sha256 against gpu_prepare's), converts it with
#          scripts/setup/prepare_smollm2.py (config and tokenizer files: make setup's,
#          carried in call 1) and checks the weights' digest against
#          `make setup`'s; the CUDA and model tests again on it (SmolLM2's
#          fixtures); `impress run` fp16 on CUDA with the trained model,
#          all seven systems, PIQA then RTE, 8 prefixes of ~4K tokens against
#          128 MB GPU and 256 MB CPU caches, on a file system that takes
#          O_DIRECT (the first of build-gpu/, /var/tmp, /tmp that does); the
#          store's read bandwidth against fio where fio is installed.
#  call 4: on call 3's model (CARRY_DIR is not read: pass "."), first the
#          digest system where loading dominates: results/digest/ttft8k_adaptive's
#          run (retrieval, 4 x 8K, 25%, the disk capped at 128 MB/s) for
#          h2o-lfu, impress (chunk unit) and digest, its table by
#          scripts/tables/digest_table.py ttft; then h2o-lfu and digest with
#          every read started two layers ahead (results/digest/floor8k's pair,
#          the CPU's comparison of record); then selection's share of TTFT
#          in its parts, results/selection/README.md's 4 x 8K and 16 x 2K runs
#          (both measured on the device before: results/gpu/device_2026-12-04b),
#          with what time is left.
# Every step runs under its own limit and under the call's deadline
# (CALL_LIMIT seconds, default 500, well under the 600 a command may run).
# OUT_DIR gets gpu_check_CALL.log (everything printed), summary.md
# (scripts/gpu/gpu_summary.py: steps with exit codes and seconds, test counts, the
# runs' TTFT mean and p99, I/O share, copy_hidden_share, host syncs per layer;
# rewritten after every step) and gpu_check_CALL.tgz (every log and JSON).
# Rehearsal on a CPU machine: DEVICE=cpu SCALE=tiny, each call in turn (the
# CUDA tests then compare the CPU with itself: IMPRESS_CUDA_TEST_DEVICE=cpu).
set -uo pipefail
call=${1:?usage: gpu_check.sh CALL CARRY_DIR OUT_DIR}
carry=$(readlink -f "${2:?usage: gpu_check.sh CALL CARRY_DIR OUT_DIR}"); mkdir -p "${3:?}"; final=$(readlink -f "$3")
tag=gpu_check_$call
out=$(mktemp -d)  # the work folder
deadline=$(( $(date +%s) + ${CALL_LIMIT:-500} ))
exec > >(tee "$final/$tag.log") 2>&1
source "$(dirname "$0")/gpu_common.sh"
summarize() { python3 scripts/gpu/gpu_summary.py "$out"; }
# run NAME CMD...: one step (its programs under their limits), its exit code
# and seconds in steps.txt.
run() {
  local name=$1; shift
  step "$name"
  local t0; t0=$(date +%s)
  "$@"; local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$out/steps.txt"
  save
  return $rc
}
if [ "${SCALE:-gpu}" = tiny ]; then
  scale=(--pool 2 --prefix-tokens 256 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M)
  tests_device=cpu
else
  scale=(--pool 8 --prefix-tokens 4096 --requests 24 --warmup 8 --gpu-cache 128M --cpu-cache 256M)
  tests_device=$device
fi
parts=build-gpu/model-parts
mkdir -p "$parts"
machine > "$out/machine.txt" 2>&1; cat "$out/machine.txt"

keep_part() {  # the part this call carried, kept for call 3 (call 1: with make setup's config and tokenizer)
  if [ "$call" = 1 ]; then rm -rf "$parts/shape" && cp -r "$carry/shape" "$parts/shape" || return 1; fi
  cp "$carry"/gguf.part"$call" "$parts/" && ls -l "$parts"
}

# cuda_tests FILTER [MODEL]: the fixtures (the tiny checkpoints, and with MODEL
# SmolLM2's too, with transformers' outputs), then the tests FILTER names.
cuda_tests() {
  local fixtures=(--tiny-only); [ -n "${2:-}" ] && fixtures=(--model "$2")
  limit 120 python3 scripts/setup/make_fixtures.py "${fixtures[@]}" --out build-gpu/fixtures 2>&1 |
    grep -v -E "Loading|it/s" | tail -3
  local log; log=$(mktemp)
  IMPRESS_FIXTURES=$PWD/build-gpu/fixtures IMPRESS_TEST_DEVICE=$tests_device IMPRESS_CUDA_TEST_DEVICE=$tests_device \
    limit 200 build-gpu/impress_tests --gtest_filter="$1" > "$log" 2>&1
  cat "$log" >> "$out/cuda_tests.log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|OK \]" "$log" | tail -40
  grep -A40 "crash_trace:" "$log" | head -42
  grep -q "^\[  PASSED  \]" "$log" && ! grep -q "^\[  FAILED  \]" "$log"
}

# link_order: which libraries the test binary needs first, and where its
# std::filesystem calls resolve (tests/link_order_test.cc).
link_order() {
  readelf -d build-gpu/impress_tests | grep NEEDED | head -4
  limit 60 build-gpu/impress_tests --gtest_filter='LinkOrder*:CrashTrace*' 2>&1 | tail -4 | tee -a "$out/cuda_tests.log"
}

trained_model() {  # $1: where to write it
  cat "$parts"/gguf.part1 "$parts"/gguf.part2 "$parts"/gguf.part3 > "$parts/model.gguf" || return 1
  python3 - "$carry/model.json" "$parts/model.gguf" <<'PY' || return 1
import hashlib, json, sys
want = json.load(open(sys.argv[1]))["gguf_sha256"]
h = hashlib.sha256()
with open(sys.argv[2], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
got = h.hexdigest()
print("GGUF sha256", got, "(as prepared)" if got == want else f"!= {want} (prepared)")
sys.exit(got != want)
PY
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gguf-site \
    "$carry"/gguf-*.whl || return 1
  PYTHONPATH=/tmp/gguf-site${PYTHONPATH:+:$PYTHONPATH} limit 150 python3 scripts/setup/prepare_smollm2.py --gguf "$parts/model.gguf" \
    --out "$1" 2>&1 | grep -v -E "it/s|legacy" | tail -2
  # The config and tokenizer files `make setup` wrote, over the ones this
  # machine's transformers wrote (its version may write them differently);
  # the weights are checked below.
  cp "$parts"/shape/* "$1/" || return 1
  local got want
  got=$(python3 scripts/setup/model_digest.py "$1") || return 1
  want=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['weights_digest'])" "$carry/model.json")
  if [ "$got" = "$want" ]; then
    echo "SmolLM2-135M-Instruct, trained, converted here; weights digest $got = make setup's" | tee "$out/model.txt"
  else
    echo "SmolLM2-135M-Instruct converted here, weights digest $got != make setup's $want" | tee "$out/model.txt"
    return 1
  fi
}

store_vs_fio() { disk_vs_fio "$1" | tee "$out/store_vs_fio.txt"; }

systems_run() {  # TASK MODEL STORES
  rm -rf "$3/$1"
  limit 150 build-gpu/impress run --model "$2" --task "$1" --data data "${scale[@]}" --store "$3/$1" \
    --device "$device" --dtype "$dtype" --system "$(build-gpu/impress list systems --paper | paste -sd,)" \
    --json "$out/run_$1.json" > "$out/run_$1.md" && head -14 "$out/run_$1.md"
}

# selection_share NAME MODEL STORES RUN-ARGS...: results/selection/README.md's run
# (as, h2o-lfu and both ITF units of impress-itf and impress, PIQA, the disk
# capped at 128 MB/s) on this device: selection's share of TTFT in its parts.
selection_share() {
  local name=$1 model=$2 stores=$3; shift 3
  rm -rf "$stores/selection_$name"
  limit "$SELECTION_LIMIT" build-gpu/impress run --model "$model" --task piqa --data data --system as,h2o-lfu,impress-itf,impress \
    --itf-unit token,chunk "$@" --disk-bw 128M --h2d-bw 640M --store "$stores/selection_$name" \
    --device "$device" --dtype "$dtype" --json "$out/selection_$name.json" > "$out/selection_$name.md" &&
    python3 scripts/tables/selection_table.py "$out/selection_$name.json"
}
# selection_step SIZE MODEL STORES: one of selection_share's runs (2k or 8k)
# as a step; on the device 4 x 8K takes about 135 s and 16 x 2K about 300 s
# (results/gpu/device_2026-12-04b); call 4 runs them after the digest step.
selection_step() {
  local -n args=selection_$1
  run "selection's share, ${titles[$1]}" selection_share "$1" "$2" "$3" "${args[@]}"
}
declare -A titles=([2k]="16 x 2K" [8k]="4 x 8K")
SELECTION_LIMIT=${SELECTION_LIMIT:-330}
if [ "${SCALE:-gpu}" = tiny ]; then
  selection_2k=(--pool 2 --prefix-tokens 256 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M)
  selection_8k=(--pool 1 --prefix-tokens 512 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M)
else
  selection_2k=(--pool 16 --prefix-tokens 2048 --requests 40 --warmup 32 --gpu-cache 32M --cpu-cache 64M)
  selection_8k=(--pool 4 --prefix-tokens 8192 --requests 8 --warmup 8 --gpu-cache 32M --cpu-cache 64M)
fi

# digest_ttft MODEL STORES [DEPTH]: results/digest/ttft8k_adaptive's run on
# this device for h2o-lfu, impress (chunk unit) and digest (the digest scored
# on the device, the kept chunks gathered there): where the forward pass is
# cheap, digest's TTFT mean and p99 against h2o-lfu's. On the CPU the same
# run is every system's (results/digest/ttft8k_adaptive/cmd.sh). With DEPTH
# (2), results/digest/floor8k's pair instead: h2o-lfu and digest with every
# read started DEPTH layers ahead (the CPU's comparison of record), written
# as digest_8k_aheadDEPTH.*.
digest_ttft() {
  local model=$1 stores=$2 depth=${3:-} name=digest_8k systems=h2o-lfu,impress,digest
  [ -n "$depth" ] && { name=digest_8k_ahead$depth; systems=h2o-lfu,digest; }
  rm -rf "${stores:?}/$name"
  limit "$DIGEST_LIMIT" build-gpu/impress run --model "$model" --task retrieval --needles-per-1k 14 --data data \
    --system "$systems" --itf-unit chunk "${digest_8k[@]}" --disk-bw 128M --h2d-bw 640M \
    --retention 0.25 --digest-window 16 --speculate-adaptive ${depth:+--read-ahead "$depth"} --store "$stores/$name" \
    --device "$device" --dtype "$dtype" --json "$out/$name.json" > "$out/$name.md" &&
    python3 scripts/tables/digest_table.py ttft "$out/$name.json"
}
DIGEST_LIMIT=${DIGEST_LIMIT:-240}
if [ "${SCALE:-gpu}" = tiny ]; then
  digest_8k=(--pool 1 --prefix-tokens 512 --requests 2 --warmup 1 --gpu-cache 1M --cpu-cache 2M)
else
  digest_8k=(--pool 4 --prefix-tokens 8192 --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M)
fi

# find_stores: sets stores to direct_dir's folder, or ends the call saying there is none.
find_stores() {
  stores=$(direct_dir) || { echo "no file system here takes O_DIRECT: the store cannot run"; step done; exit 1; }
  echo "stores in $stores" | tee -a "$out/machine.txt"
}
model=build-gpu/smollm2-135m  # call 3 converts the trained model here; call 4 runs on it

case "$call" in
  1)
    run "keep GGUF part 1" keep_part
    run build build_gpu impress impress_tests impress_store_bench || { step done; exit 1; }
    run "link order" link_order
    # One process per suite, so that a crash in one hides nothing of the others.
    for suite in CudaPath ModelVsTransformers ReuseTest; do run "CUDA tests, $suite" cuda_tests "*$suite*"; done
    ;;
  2)
    run "keep GGUF part 2" keep_part
    ;;
  3)
    run "keep GGUF part 3" keep_part
    [ -x build-gpu/impress ] || { echo "no build-gpu/impress: call 1 did not build on this machine"; step done; exit 1; }
    run "the trained model from its GGUF" trained_model "$model" || { step done; exit 1; }
    for suite in CudaPath ModelVsTransformers; do
      run "CUDA tests on the trained model, $suite" cuda_tests "*$suite*smollm2*" "$model"
    done
    find_stores
    for task in piqa rte; do run "impress run, $task, all seven systems" systems_run "$task" "$model" "$stores"; done
    run "store read bandwidth against fio" store_vs_fio "$stores"
    ;;
  4)  # the digest system at 8K, then the selection runs, on call 3's model
    [ -f "$model/config.json" ] || { echo "no $model: call 3 did not convert the model on this machine"; step done; exit 1; }
    find_stores
    run "digest against h2o-lfu, retrieval 4 x 8K" digest_ttft "$model" "$stores"
    run "digest against h2o-lfu, retrieval 4 x 8K, two layers ahead" digest_ttft "$model" "$stores" 2
    selection_step 8k "$model" "$stores"
    selection_step 2k "$model" "$stores"
    ;;
  *) echo "gpu_check: CALL is 1, 2, 3 or 4"; exit 2 ;;
esac
step done
save
