# The fused CPU attention reading the prefix's K and V in place (a head's rows at their own stride) instead of
# copying them contiguous first, and its tiles carrying their keys' addresses: what it computes must not move.
# Writes, under OUT, per-question log-likelihoods of digest (one set a layer) and h2o-lru (a mask per head) on
# the accuracy regression's retrieval questions, and the attention benchmark. Usage: cmd.sh BUILD OUT
build=${1:?usage: cmd.sh BUILD OUT}; out=${2:?usage: cmd.sh BUILD OUT}
mkdir -p "$out"
for sys in digest h2o-lru; do
  OMP_NUM_THREADS=2 "$build/impress" eval --model models/smollm2-135m --task retrieval --prefix-tokens 1024 --limit 40 \
    --retention 0.25 --system $sys --samples "$out/$sys.jsonl" > /dev/null
done
OMP_NUM_THREADS=2 "$build/impress_attention_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json > /dev/null
python3 scripts/tables/attention_table.py "$out/bench.json" > "$out/bench.md"
