# The fused CPU attention (src/model/attention_cpu.h) against LibTorch's scaled_dot_product_attention at
# SmolLM2's shape (9 query heads over 3 KV heads, head_dim 64), both in one run on two threads: a request's
# 80 new tokens over a quarter of an 8K and a 2K prefix, over an H2O union with its per-head mask, and a
# 2K-token prefill. Run from the checkout's root; the table is scripts/tables/attention_table.py of the JSON.
OMP_NUM_THREADS=2 build/impress_attention_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out=results/attention/bench.json --benchmark_out_format=json > results/attention/bench.txt
