#!/usr/bin/env bash
# GPU check on a CUDA machine that has python3 with torch + transformers, a
# compiler and CMake, but maybe no Debian -dev packages and no network:
#   [DATA_DIR=data] scripts/gpu_check.sh DEPS_DIR TOKENIZERS_DIR LOG_DIR
# DEPS_DIR from scripts/pack_deps.sh; TOKENIZERS_DIR holds gpt2/ and llama2/.
# Builds against the machine's own LibTorch, runs the model tests on CUDA
# (fp32, against transformers on CPU), then times prefill of a Llama-2-7B-shaped
# model (random weights, 8 of its 32 layers, fp16) against transformers on the
# same GPU. Everything goes to LOG_DIR/gpu_check.log.
set -uo pipefail
deps=$(readlink -f "$1"); toks=$(readlink -f "$2"); logdir=$3
mkdir -p "$logdir"; log="$logdir/gpu_check.log"
exec > >(tee "$log") 2>&1
step() { echo; echo "=== $* ($(date +%T))"; }

step machine
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"

step build
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DIMPRESS_DEPS_DIR="$deps" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 >build-gpu.log 2>&1 || { tail -30 build-gpu.log; exit 1; }
cmake --build build-gpu -j "$(nproc)" >>build-gpu.log 2>&1 || { grep -E "error|Error" -A3 build-gpu.log | head -40; exit 1; }
echo "built"

step fixtures
shared=$(mktemp -d); ln -s "$toks" "$shared/tokenizers"
python3 scripts/make_fixtures.py --tiny-only --out build-gpu/fixtures --shared "$shared" 2>&1 | grep -v -E "Loading|it/s" | tail -4

step "model tests on CUDA (fp32 vs transformers on CPU)"
echo "TMPDIR=${TMPDIR:-unset}"
IMPRESS_FIXTURES=$PWD/build-gpu/fixtures IMPRESS_TEST_DEVICE=cuda \
  build-gpu/impress_tests --gtest_filter='*ModelVsTransformers*:*ReuseTest*:Safetensors*:TensorSet*:Config*:Model.*:ChunkStore*:TieredCache*:RadixTree*' 2>&1 | grep -E "OK|FAILED|PASSED|Failure|SKIPPED" | tail -40

step "Llama-2-7B-shaped model, 8 layers, random fp16 weights"
big=/tmp/llama7b-8l
python3 - "$big" "$toks/llama2" <<'PY'
import shutil, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=8,
                  num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=8192)
torch.manual_seed(0)
with torch.device("cuda"):
    m = LlamaForCausalLM(cfg).half()
m.save_pretrained(sys.argv[1], safe_serialization=True)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{sys.argv[2]}/{f}", sys.argv[1])
print("saved", sum(p.numel() for p in m.parameters()) / 1e9, "B params")
PY
build-gpu/impress info --model "$big"

step "greedy tokens, fp16 on CUDA: impress vs transformers"
prompt="The capital of France is a city that"
build-gpu/impress generate --model "$big" --prompt "$prompt" -n 16 --ids --ignore-eos --device cuda --dtype float16
python3 - "$big" "$prompt" <<'PY'
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
t = AutoTokenizer.from_pretrained(sys.argv[1]); m = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float16).cuda()
ids = t(sys.argv[2], return_tensors="pt").input_ids.cuda()
out = m.generate(ids, max_new_tokens=16, do_sample=False, min_new_tokens=16)
print(out[0, ids.shape[1]:].tolist())
PY

step "prefill (TTFT of a cold prompt), fp16 on CUDA"
for n in 2048 8192; do
  echo "-- $n tokens"
  build-gpu/impress_bench --model "$big" --tokens $n --device cuda --dtype float16 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep -E "prefill|mean|median"
  python3 scripts/bench_prefill.py --model "$big" --tokens $n --device cuda --dtype float16 --repeats 5
done
if [ -d "${DATA_DIR:-}" ]; then
  step "impress run on CUDA: every system, PIQA, 4 prefixes of 2K tokens, caches smaller than the pool"
  run=(build-gpu/impress run --model "$big" --task piqa --data "$DATA_DIR" --pool 4 --prefix-tokens 2048 --requests 24
       --warmup 4 --gpu-cache 256M --cpu-cache 512M --store /tmp/gpu-store --device cuda --dtype float16)
  "${run[@]}" --system recomp,as,h2o-lfu,impress-itf,impress --json "$logdir/run_cuda.json"
  step "the same, IMPRESS with speculative K/V reads"
  "${run[@]}" --system h2o-lfu,impress-itf,impress --speculate --json "$logdir/run_cuda_speculate.json"
fi
step done
