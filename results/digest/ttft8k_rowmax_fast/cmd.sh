# TTFT where loading dominates with the digest defaults of 8bbefd8 and the host chunk sums of 7c8df64; as ../ttft8k_w4, every system in the same run: run from the checkout's root.
rm -rf build/stores_digest8k  # a fresh store, as in every run of this kind
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k \
  --json results/digest/ttft8k_rowmax_fast/run.json > results/digest/ttft8k_rowmax_fast/run.md 2> results/digest/ttft8k_rowmax_fast/run.err
