# TTFT where loading dominates, as ../ttft8k_int8q (every system in the same run, a fresh store), with the
# digest system scored from its last 16 question rows (--digest-window 16) and every system's speculative
# guess taken from the caches only (--speculate-cached: impress and digest guess the next layer's chunks
# among those a cache tier holds, so a guess reads nothing from disk): run from the checkout's root.
rm -rf build/stores_digest8k_fast
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_fast \
  --digest-window 16 --speculate-cached \
  --json results/digest/ttft8k_fast/run.json > results/digest/ttft8k_fast/run.md 2> results/digest/ttft8k_fast/run.err
