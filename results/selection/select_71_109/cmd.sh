# The standard 8K PIQA run (4 x 8K prefixes, 25%, disk 128 MB/s, 4 warm-up, 8 requests) of impress,
# both ITF units, at 5eca404 and ea67a47 built side by side (each in its own worktree, `ninja impress`),
# alternated A B A B, each run on a fresh store, nothing else running: run from the checkout's root.
# BUILD_5eca404 and BUILD_ea67a47 name the two builds' impress binaries.
out=results/selection/select_71_109
for rep in 1 2; do
  for c in 5eca404 ea67a47; do
    bin=BUILD_$c; rm -rf /tmp/store_71_109
    ${!bin} run --model models/smollm2-135m --task piqa --system impress --itf-unit token,chunk --pool 4 \
      --prefix-tokens 8192 --requests 8 --warmup 4 --retention 0.25 --gpu-cache 32M --cpu-cache 64M \
      --disk-bw 128M --h2d-bw 640M --store /tmp/store_71_109 --json $out/${c}_$rep.json > $out/${c}_$rep.md 2>&1
  done
done
rm -rf /tmp/store_71_109
# and the checkout's own build, once, after them (head_1.json):
#   build/impress run ... (the same flags) --json $out/head_1.json
python3 scripts/tables/select_ms_table.py results/selection/select_71_109 > results/selection/select_71_109/table.md
