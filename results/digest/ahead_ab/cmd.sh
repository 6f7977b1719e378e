# h2o-lfu and digest on the 8K request stream (../ttft8k_ahead2's command, those two systems), reads started one
# layer ahead (the paper's pipeline) and two (--read-ahead 2), one build (344fd55), back to back, each with a
# fresh store of its own. Run from the checkout's root.
for depth in 1 2; do
  rm -rf build/stores_ahead_ab_$depth
  build/impress run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
    --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
    --system h2o-lfu,digest --store build/stores_ahead_ab_$depth --digest-window 16 --speculate-adaptive \
    --read-ahead $depth \
    --json results/digest/ahead_ab/ahead$depth.json > results/digest/ahead_ab/ahead$depth.md 2> results/digest/ahead_ab/ahead$depth.err
done
