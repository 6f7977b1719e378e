# TTFT where loading dominates, as ../ttft8k_fast (every system in one run, a fresh store, digest scored from
# its last 16 question rows) with --speculate-adaptive: a layer's guess is taken from the caches where they hold
# at least half of it, and read whole where they hold less (a prefix the caches let go): run from the checkout's root.
rm -rf build/stores_digest8k_adaptive
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_adaptive \
  --digest-window 16 --speculate-adaptive \
  --json results/digest/ttft8k_adaptive/run.json > results/digest/ttft8k_adaptive/run.md 2> results/digest/ttft8k_adaptive/run.err
