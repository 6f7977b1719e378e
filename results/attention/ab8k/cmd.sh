# The 8K request stream (results/digest/ttft8k_fused's command, h2o-lfu and digest only) before and after the
# fused CPU attention, back to back on one machine, each build with a fresh store of its own:
#   before: 822d7f8 (LibTorch's kernels), built as `git worktree add W 822d7f8`, cmake Release, `ninja impress`
#   after:  the checkout's build/impress
# Usage, from the checkout's root: bash results/attention/ab8k/cmd.sh BEFORE_IMPRESS
before=${1:?usage: cmd.sh BEFORE_IMPRESS}
for side in before after; do
  bin=build/impress; [ "$side" = before ] && bin=$before
  rm -rf build/stores_ab8k_$side
  "$bin" run --model models/smollm2-135m --task retrieval --needles-per-1k 14 --pool 4 --prefix-tokens 8192 \
    --requests 64 --warmup 8 --gpu-cache 32M --cpu-cache 64M --disk-bw 128M --h2d-bw 640M --retention 0.25 \
    --system h2o-lfu,digest --store build/stores_ab8k_$side --digest-window 16 --speculate-adaptive \
    --json results/attention/ab8k/$side.json > results/attention/ab8k/$side.md 2> results/attention/ab8k/$side.err
done
