#!/usr/bin/env bash
# The paper's figures at the GPU scale (docs/reproduce.md, "The GPU scale"),
# one command on a CUDA machine prepared as for scripts/gpu/gpu_check.sh:
#   scripts/gpu/gpu_reproduce.sh CARRY_DIR OUT_DIR [MODEL_DIR]
# MODEL_DIR: a model the machine has (default: SmolLM2-135M's shapes with
# random weights, which is what fits the trip to the device machine; its
# accuracies and the selection systems' bytes are not the trained model's).
# Builds, measures the disk with fio, runs the figures that matter in order
# of importance in one invocation (a figure's files are written when it
# ends, so a run cut short keeps the figures before), then scripts/tables/plot.py
# and scripts/paper_vs_project.py. OUT_DIR gets gpu_reproduce.log,
# gpu_reproduce.tgz (figures/ with each figure's JSON, CSV, markdown with its
# command, machine and seconds, PNG; disk.txt) and summary.md
# (paper_vs_project.md). DEVICE=cpu SCALE=tiny rehearses it on a CPU.
set -uo pipefail
carry=$(readlink -f "$1"); mkdir -p "$2"; final=$(readlink -f "$2"); model=${3:-}
out=$(mktemp -d)
exec > >(tee "$final/gpu_reproduce.log") 2>&1
source "$(dirname "$0")/gpu_common.sh"
figures=(fig16 fig18 fig20 fig21 tail fig17 fig22 fig23)
if [ "${SCALE:-gpu}" = tiny ]; then
  scale=(--tasks piqa --task piqa --prefixes 2 --prefix-tokens 256 --requests 2 --warmup 1 --gpu-cache 1M
         --cpu-cache 2M --disk-bw 0 --h2d-bw 0 --docs 4 --alpha 0,0.6 --chunk 32,64)
  budget=900
else
  scale=(--tasks piqa,rte,copa,openbookqa --task rte --prefixes 12 --prefix-tokens 4096 --requests 32 --warmup 12
         --gpu-cache 64M --cpu-cache 256M --disk-bw 0 --h2d-bw 0 --docs 40)
  budget=${REPRODUCE_LIMIT:-330}
fi

step machine
machine

step build
build_gpu impress impress_store_bench || exit 1

step "this machine's disk (fio, direct I/O)"
stores=$(direct_dir) || { echo "no file system here takes O_DIRECT: the store cannot run"; exit 1; }
echo "stores in $stores"
disk_vs_fio "$stores" | tee "$out/disk.txt"

if [ -z "$model" ]; then
  step "SmolLM2-135M's shapes, random fp16 weights"
  model=/tmp/smollm2-shape
  shape_model "$model"
fi

step "impress reproduce ${figures[*]}"
rm -rf "$stores/figures"
limit "$budget" build-gpu/impress reproduce "${figures[@]}" --model "$model" --data data --out "$out/figures" \
  --store "$stores/figures" --device "$device" --dtype "$dtype" "${scale[@]}"
grep -H "^Machine:" "$out"/figures/*.md  # each figure's machine, date and seconds

step "plots and paper vs project"
python3 scripts/tables/plot.py --impress build-gpu/impress "$out/figures" || echo "(no plots: matplotlib missing?)"
python3 scripts/tables/paper_vs_project.py "$out/figures" build-gpu/impress | tee "$out/summary.md"
step done
save
