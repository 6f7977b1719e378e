# "Prefill speed" on the build with the fused CPU attention (c40f831 on): impress against transformers on a
# 2048-token prompt, two threads, three runs back to back (scripts/bench/bench_prefill.sh). Run from the
# checkout's root, alone on the machine.
for r in 1 2 3; do
  OUT=results/attention/prefill_$r.json bash scripts/bench/bench_prefill.sh models/smollm2-135m build 2 \
    > results/attention/prefill_$r.txt
done
