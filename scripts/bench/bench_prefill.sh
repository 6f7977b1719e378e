#!/usr/bin/env bash
# Prefill throughput on a 2048-token prompt: impress vs transformers, same
# machine, same thread count, run back to back so the ratio is meaningful.
# Usage: scripts/bench/bench_prefill.sh MODEL_DIR BUILD_DIR [THREADS]
# With OUT=FILE.json, also writes both numbers, their ratio and the provenance there.
set -euo pipefail
model=$1; build=$2; threads=${3:-$(nproc)}; tokens=${TOKENS:-2048}
echo "prefill benchmark: $model, $tokens tokens, $threads threads, fp32 CPU"
bench_json=$(mktemp); trap 'rm -f "$bench_json"' EXIT
"$build/impress_bench" --model "$model" --tokens "$tokens" --threads "$threads" --benchmark_repetitions=3 \
  --benchmark_format=json --benchmark_out="$bench_json" --benchmark_out_format=json >/dev/null 2>&1
ours=$(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['benchmarks']; print(max(x['tok/s'] for x in b if x.get('run_type')=='iteration'))" "$bench_json")
theirs=$(python3 "$(dirname "$0")/bench_prefill.py" --model "$model" --tokens "$tokens" --threads "$threads" |
         python3 -c "import json,sys; print(json.load(sys.stdin)['tok_s'])")
python3 - "$ours" "$theirs" <<'PY'
import sys
ours, theirs = float(sys.argv[1]), float(sys.argv[2])
print(f"impress      {ours:9.1f} tok/s")
print(f"transformers {theirs:9.1f} tok/s")
print(f"ratio        {ours / theirs:9.2f}x (impress / transformers)")
PY
if [ -n "${OUT:-}" ]; then
  python3 "$(dirname "$0")/bench_provenance.py" "$bench_json" max:tok/s "$theirs" transformers_tok_s "$OUT" \
    "transformers $(python3 -c 'import transformers;print(transformers.__version__)') SDPA, scripts/bench/bench_prefill.py --tokens $tokens --threads $threads" >/dev/null
fi
