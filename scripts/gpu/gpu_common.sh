# Steps the device scripts share (scripts/gpu/gpu_check.sh, scripts/gpu/gpu_reproduce.sh);
# sourced, not run. The caller sets: carry (the folder scripts/gpu/gpu_prepare.sh
# made), final (the folder whose files come back) and out (a work folder).
# DEVICE=cpu SCALE=tiny rehearse on a CPU machine.

device=${DEVICE:-cuda}
dtype=float16
[ "${SCALE:-gpu}" = tiny ] && dtype=float32  # fp16 matmuls are slow on a CPU

# Everything under the work folder, packed into one file (the device machine
# brings back few files), and summary.md beside it; after every step, so a
# run stopped early still brings back what it had. A caller that defines
# summarize() has summary.md rewritten first.
save() {
  declare -F summarize >/dev/null && summarize > "$out/summary.md" 2>/dev/null
  tar czf "$final/${tag:-$(basename "$0" .sh)}.tgz" -C "$out" . 2>/dev/null
  [ -f "$out/summary.md" ] && cp "$out/summary.md" "$final/"
}
step() { save; echo; echo "=== $* ($(date +%T))"; }
# limit SECONDS CMD...: CMD, killed at its limit, or at the call's deadline
# (epoch seconds in $deadline, when the caller sets one) if that comes first.
limit() {
  local s=$1; shift
  if [ -n "${deadline:-}" ]; then
    local left=$(( deadline - $(date +%s) ))
    [ "$left" -lt "$s" ] && s=$left
    [ "$s" -le 0 ] && { echo "(step skipped: the call's deadline has passed)"; return 124; }
  fi
  timeout --signal=KILL "$s" "$@"; local rc=$?
  [ $rc -eq 137 ] && echo "(step stopped at its ${s}s limit)"; return $rc
}

machine() {
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  echo "cores $(nproc), $(free -g | awk '/Mem:/{print $2}') GiB RAM; /tmp on: $(df -h /tmp | tail -1)"
}

# build_gpu TARGET...: build-gpu/ against this machine's LibTorch and the carried -dev packages.
build_gpu() {
  local prefix; prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  limit 240 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DIMPRESS_DEPS_DIR="$carry/deps" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; return 1; }
  limit "${BUILD_LIMIT:-300}" cmake --build build-gpu -j "$(nproc)" --target "$@" >>"$out/build.log" 2>&1 ||
    { grep -E "error|Error" -A3 "$out/build.log" | head -40; return 1; }
  echo "built: $*"
}

# shape_model DIR: SmolLM2-135M's shapes (carry/shape) with random fp16
# weights, written to DIR. The trained weights (270 MB in fp16) are larger
# than what travels to the device machine; TTFT and the bytes of recomp and
# as do not depend on the weights, the selection systems' bytes and every
# accuracy do.
shape_model() {
  python3 - "$carry/shape" "$1" <<'PY'
import shutil, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig.from_pretrained(sys.argv[1])
torch.manual_seed(0)
with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
    m = LlamaForCausalLM(cfg).half()
m.save_pretrained(sys.argv[2], safe_serialization=True)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{sys.argv[1]}/{f}", sys.argv[2])
print("saved", sum(p.numel() for p in m.parameters()) / 1e6, "M params, random weights")
PY
}

# direct_dir: the first of these folders whose file system takes O_DIRECT
# (the store reads with it; tmpfs refuses it), or nothing.
direct_dir() {
  local d
  for d in "$PWD/build-gpu/stores" /var/tmp/impress-gpu /tmp/impress-gpu "$HOME/impress-gpu"; do
    mkdir -p "$d" 2>/dev/null || continue
    if dd if=/dev/zero of="$d/.direct" bs=4096 count=1 oflag=direct status=none 2>/dev/null &&
       dd if="$d/.direct" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
      rm -f "$d/.direct"; echo "$d"; return 0
    fi
    rm -f "$d/.direct"
  done
  return 1
}

# disk_vs_fio DIR: what fio reads from DIR's disk with direct I/O, and the store's own bandwidth.
disk_vs_fio() {
  if command -v fio >/dev/null; then
    limit 60 bash scripts/bench/bench_store.sh build-gpu "$1/bench-store"
  else
    echo "fio is not installed here: the store's bandwidth alone"
    limit 60 build-gpu/impress_store_bench --dir "$1/bench-store" --set 32 --chunks 4096 --threads 8
  fi
}
