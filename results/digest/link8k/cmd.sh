# The 8K request stream (../ttft8k_ahead2's command: retrieval, 4 x 8K haystacks, 64 requests + 8 warm-up, 25%,
# GPU 32M / CPU 64M, disk 128 MB/s, host-to-device 640 MB/s, two layers ahead) for h2o-lfu and digest, on the
# build before d1cec1d (reads paid the host-to-device link only when their chunk entered the GPU level) and on
# d1cec1d's (every byte read from below pays it once, where it is read), alternately: before, after, before,
# after, all on one store (built by the first run). BEFORE is the impress binary built from 546deb0's tree
# (git checkout 546deb0; ninja -C build impress; cp build/impress build/before/impress), AFTER this
# checkout's build/impress. Run from the checkout's root: bash results/digest/link8k/cmd.sh BEFORE AFTER
before=${1:?usage: cmd.sh BEFORE AFTER}; after=${2:?}
out=results/digest/link8k
rm -rf build/stores_link8k
i=0
for pass in before_1 after_1 before_2 after_2; do
  case $pass in before*) bin=$before ;; *) bin=$after ;; esac
  $bin run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
    --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
    --system h2o-lfu,digest --store build/stores_link8k --digest-window 16 --speculate-adaptive --read-ahead 2 \
    --json $out/$pass.json > $out/$pass.md 2> $out/$pass.err
done
python3 scripts/tables/digest_table.py ratios $out/before_1.json $out/after_1.json $out/before_2.json $out/after_2.json > $out/ratios.md
