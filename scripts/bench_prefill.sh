#!/usr/bin/env bash
# Prefill throughput on a 2048-token prompt: impress vs transformers, same
# machine, same thread count, run back to back so the ratio is meaningful.
# Usage: scripts/bench_prefill.sh MODEL_DIR BUILD_DIR [THREADS]
set -euo pipefail
model=$1; build=$2; threads=${3:-$(nproc)}; tokens=${TOKENS:-2048}
echo "prefill benchmark: $model, $tokens tokens, $threads threads, fp32 CPU"
ours=$("$build/impress_bench" --model "$model" --tokens "$tokens" --threads "$threads" \
        --benchmark_repetitions=3 --benchmark_format=json 2>/dev/null |
       python3 -c "import json,sys; b=json.load(sys.stdin)['benchmarks']; print(max(x['tok/s'] for x in b if x.get('run_type')=='iteration'))")
theirs=$(python3 "$(dirname "$0")/bench_prefill.py" --model "$model" --tokens "$tokens" --threads "$threads" |
         python3 -c "import json,sys; print(json.load(sys.stdin)['tok_s'])")
python3 - "$ours" "$theirs" <<'PY'
import sys
ours, theirs = float(sys.argv[1]), float(sys.argv[2])
print(f"impress      {ours:9.1f} tok/s")
print(f"transformers {theirs:9.1f} tok/s")
print(f"ratio        {ours / theirs:9.2f}x (impress / transformers)")
PY
