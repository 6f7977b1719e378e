# TTFT where loading dominates with int8 digests scored from their codes (DigestChunkScoresInt8, f20cbdc); as ../ttft8k_int8, every system in the same run: run from the checkout's root.
rm -rf build/stores_digest8k_int8q  # a fresh store, as in every run of this kind
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_int8q \
  --json results/digest/ttft8k_int8q/run.json > results/digest/ttft8k_int8q/run.md 2> results/digest/ttft8k_int8q/run.err
