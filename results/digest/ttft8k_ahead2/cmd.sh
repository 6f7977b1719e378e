# ../ttft8k_fused's run (every system in one run, a fresh store, --speculate-adaptive) with every system's
# reads started two layers ahead (--read-ahead 2, 344fd55): whether digest's TTFT ratios against h2o-lfu reach
# the aims when both pipelines read as deep. Run from the checkout's root.
rm -rf build/stores_digest8k_ahead2
build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
  --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress-itf,impress,digest --itf-unit token,chunk --store build/stores_digest8k_ahead2 \
  --digest-window 16 --speculate-adaptive --read-ahead 2 \
  --json results/digest/ttft8k_ahead2/run.json > results/digest/ttft8k_ahead2/run.md 2> results/digest/ttft8k_ahead2/run.err
python3 scripts/tables/digest_table.py ttft results/digest/ttft8k_ahead2/run.json > results/digest/ttft8k_ahead2/table.md
