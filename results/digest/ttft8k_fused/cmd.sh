# ../ttft8k_adaptive_b's run (every system in one run, a fresh store, --speculate-adaptive) on the build with the
# fused CPU attention (src/model/attention_cpu.h, c40f831), which every system's forward pass now takes: whether
# a faster shared forward brings digest's TTFT ratios against h2o-lfu to the aims. Run from the checkout's root.
rm -rf build/stores_digest8k_fused
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_fused \
  --digest-window 16 --speculate-adaptive \
  --json results/digest/ttft8k_fused/run.json > results/digest/ttft8k_fused/run.md 2> results/digest/ttft8k_fused/run.err
