# The chunk-size trade at 2K (4 retrieval haystacks, 32 measured requests, disk 128 MB/s): run from the checkout's root.
build/impress run --model models/smollm2-135m --task retrieval --pool 4 --prefix-tokens 2048 \
  --requests 32 --warmup 8 --gpu-cache 8M --cpu-cache 16M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress,digest --itf-unit chunk --chunk 16,32,64 --store build/stores_digest2k \
  --json results/digest/chunk2k/run.json > results/digest/chunk2k/run.md 2> results/digest/chunk2k/run.err
