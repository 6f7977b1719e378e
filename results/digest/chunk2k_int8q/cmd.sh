# The chunk-size trade at 2K with int8 digests scored from their codes (since f20cbdc), as ../chunk2k (4 retrieval haystacks, 32 measured requests, disk 128 MB/s): run from the checkout's root.
rm -rf build/stores_digest2k_int8q
build/impress run --model models/smollm2-135m --task retrieval --pool 4 --prefix-tokens 2048 \
  --requests 32 --warmup 8 --gpu-cache 8M --cpu-cache 16M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
  --system as,h2o-lfu,impress,digest --itf-unit chunk --chunk 16,32,64 --store build/stores_digest2k_int8q \
  --json results/digest/chunk2k_int8q/run.json > results/digest/chunk2k_int8q/run.md 2> results/digest/chunk2k_int8q/run.err
rm -rf build/stores_digest2k_int8q
