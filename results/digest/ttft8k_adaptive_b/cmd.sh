# ../ttft8k_adaptive's run again, on a later build (100ca23: nothing on the request path changed since f9ff8a2
# but a store without digests refused up front), to see whether its p99 ratio holds in a second run on this shared
# machine: every system in one run, a fresh store, --speculate-adaptive. Run from the checkout's root.
rm -rf build/stores_digest8k_adaptive_b
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_adaptive_b \
  --digest-window 16 --speculate-adaptive \
  --json results/digest/ttft8k_adaptive_b/run.json > results/digest/ttft8k_adaptive_b/run.md 2> results/digest/ttft8k_adaptive_b/run.err
