# How far I/O can take digest's TTFT ratio on this machine: h2o-lfu and digest on the 8K request stream
# (../ttft8k_ahead2's command, those two systems, two layers ahead), then the same two with a GPU cache that
# holds every prefix's K/V (--gpu-cache 1G: a chunk once read stays at the top tier; only (chunk, layer) pairs
# no request read before come from disk), reusing the first run's store. digest's TTFT with its chunks resident bounds what any change to its
# reads can reach against h2o-lfu's with the caches of the stream. Run from the checkout's root; an argument
# (a later run's suffix, e.g. _c) is added to every file name written.
s=${1:-}
rm -rf build/stores_floor8k
for cache in 32M 1G; do
  build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
    --requests 64 --warmup 8 --gpu-cache $cache --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
    --system h2o-lfu,digest --store build/stores_floor8k --digest-window 16 --speculate-adaptive --read-ahead 2 \
    --json results/digest/floor8k/gpu$cache$s.json > results/digest/floor8k/gpu$cache$s.md 2> results/digest/floor8k/gpu$cache$s.err
  python3 scripts/tables/digest_table.py ttft results/digest/floor8k/gpu$cache$s.json > results/digest/floor8k/gpu${cache}_table$s.md
done
