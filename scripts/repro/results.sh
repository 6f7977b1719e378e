#!/usr/bin/env bash
# Re-measures the tables docs/results.md cites, at the checkout's commit, each
# step into results/remeasure/<step>/ (every JSON there carries its provenance;
# each step's commands go to its commands.txt). Steps, and what they take on 2 cores:
#   select-bench   impress_select_bench, one thread (Selection cost)          ~1 min
#   store-fio      the store against fio, twice (Store read bandwidth)         ~1 min
#   prefill        impress against transformers, 3 runs (Prefill speed)        ~2 min
#   remote         the remote tier against redis-benchmark                     ~1 min
#   ttft           the seven systems, real disk and 128 MB/s, 16 x 2K (TTFT)   ~25 min
#   ttft-units     the chunk unit after 16, both units after 128 warm-up requests
#                  (The chunk unit)                                            ~20 min
#   figures        `reproduce $FIGURES` (default all; Paper vs this project)  over 12 min (4 of 18 figures took 12)
#   figures-warm64 the TTFT figures with 64 warm-up requests                   ~22 min
#   figures-chunk  the figures with the chunk unit                             ~14 min
#   codec          `reproduce codec` at 4 x 2K with the cluster (Quantized KV) ~15 min
#   codec-bytes    bytes read per codec with the caches off, 4 x 2K (Quantized KV) ~10 min
#   retrieval      the retrieval task's accuracy table at 25%                  ~25 min
#   readahead      the capped run with and without reading ahead, back to back
#                  (TTFT, "Reading ahead")                                      ~10 min
#   speculate      with and without --speculate, back to back: PIQA at 16 and 128
#                  warm-up requests, capped and on the real disk, then the four
#                  tasks at reproduce's scale (TTFT, "Speculative K/V reads")   ~35 min
# Usage: scripts/repro/results.sh BUILD STEP... (or `all`); MODEL, STORE, FIGURES override.
# A step's commands.txt gains a dated line with the commit per invocation, so a step
# finished in two invocations (FIGURES=... for the figures left) names both.
set -euo pipefail
build=${1:?usage: results.sh BUILD STEP...|all}; shift
model=${MODEL:-models/smollm2-135m}
store=${STORE:-$build/results_stores}
all=(select-bench store-fio prefill remote ttft ttft-units figures figures-warm64 figures-chunk codec codec-bytes
     retrieval readahead speculate)
steps=("$@"); [ "${steps[*]}" = all ] && steps=("${all[@]}")
paper=$("$build/impress" list systems --paper | paste -sd,)  # the paper's seven, as the registry orders them
reusing=${paper#recomp,}                                      # those that read stored KV
[ "$("$build/impress" --version)" = "$(git rev-parse HEAD)" ] ||
  echo "results: warning: $build/impress is $("$build/impress" --version), the checkout $(git rev-parse HEAD) (rebuild)" >&2
say() { echo "$*" >>"$out/commands.txt"; "$@"; }
# NAME ON OFF CMD...: CMD with flag ON, then with flag OFF ("" for none), back
# to back, into $out/NAME.json and .md with {} read as on, then off.
pair() {
  local name=$1 on=$2 off=$3 which; shift 3
  for which in on off; do
    local flag=${!which} f=$out/${name//\{\}/$which}
    say "$@" ${flag:+"$flag"} --json "$f.json" | tee "$f.md"
  done
}
for step in "${steps[@]}"; do
  out=results/remeasure/$step
  mkdir -p "$out"
  echo "# $(date -u +%FT%TZ) at $("$build/impress" --version)" >>"$out/commands.txt"
  echo "== $step ($(date -u +%H:%M))" >&2
  run=("$build/impress" run --model "$model" --task piqa --retention 0.25 --pool 16 --prefix-tokens 2048
       --requests 40 --gpu-cache 64M --cpu-cache 128M --store "$store/piqa16")
  case $step in
    select-bench)
      say env OMP_NUM_THREADS=1 "$build/impress_select_bench" --model "$model" \
        --benchmark_out="$out/select_bench.json" --benchmark_out_format=json >"$out/select_bench.txt" ;;
    store-fio)
      for r in 1 2; do say env OUT="$out/store_fio_$r.json" bash scripts/bench/bench_store.sh "$build" | tee "$out/store_fio_$r.txt"; done ;;
    prefill)
      for r in 1 2 3; do say env OUT="$out/prefill_$r.json" bash scripts/bench/bench_prefill.sh "$model" "$build" | tee "$out/prefill_$r.txt"; done ;;
    remote)
      say env OUT="$out/remote.json" bash scripts/bench/bench_remote.sh "$build" | tee "$out/remote.txt" ;;
    ttft)
      say "${run[@]}" --system "$paper" --warmup 16 \
        --json "$out/piqa_all_r025.json" | tee "$out/piqa_all_r025.md"
      say "${run[@]}" --system "$reusing" --warmup 16 \
        --disk-bw 128M --h2d-bw 640M --json "$out/piqa_all_r025_disk128M.json" | tee "$out/piqa_all_r025_disk128M.md" ;;
    ttft-units)
      say "${run[@]}" --system h2o-lfu,impress-itf,impress --itf-unit chunk --warmup 16 \
        --disk-bw 128M --h2d-bw 640M --json "$out/piqa_chunk_r025_disk128M.json" | tee "$out/piqa_chunk_r025_disk128M.md"
      say "${run[@]}" --system h2o-lfu,impress-itf,impress-itf-ro,impress --itf-unit token,chunk --warmup 128 \
        --disk-bw 128M --h2d-bw 640M --json "$out/piqa_units_warm128_r025_disk128M.json" | tee "$out/piqa_units_warm128_r025_disk128M.md" ;;
    figures)
      say "$build/impress" reproduce ${FIGURES:-all} --model "$model" --out "$out" --store "$store/figures" ;;
    figures-warm64)
      say "$build/impress" reproduce fig16 fig17 tail fig18 fig19 fig20 fig21 --model "$model" --out "$out" \
        --store "$store/figures" --warmup 64 ;;
    figures-chunk)
      say "$build/impress" reproduce io-share fig15 fig16 fig17 tail fig18 fig19 fig20 fig21 fig22 fig23 fig24 \
        --model "$model" --out "$out" --store "$store/figures" --itf-unit chunk ;;
    codec)  # docs/results.md's table: 4 x 2K-token prefixes, caches 8/16 MB, then a loopback cluster at 16 MB/s
      t=$(mktemp -d)
      url=$(TMPDIR=$t bash scripts/setup/redis_cluster.sh start 7800)
      say "$build/impress" reproduce codec --model "$model" --out "$out" --store "$store/codec" --tasks piqa \
        --task piqa --prefixes 4 --prefix-tokens 2048 --requests 8 --warmup 8 --gpu-cache 8M --cpu-cache 16M \
        --docs 20 --eval-prefix-tokens 2048 --remote "$url" --remote-bw 16M
      TMPDIR=$t bash scripts/setup/redis_cluster.sh stop 7800; rm -rf "$t" ;;
    codec-bytes)
      for c in fp16 int8 int4; do
        say "$build/impress" run --model "$model" --task piqa --system as,h2o-lfu,impress-itf,impress \
          --itf-unit token,chunk --pool 4 --prefix-tokens 2048 --requests 8 --warmup 8 --gpu-cache 0 --cpu-cache 0 \
          --kv-codec "$c" --store "$store/codec_bytes_$c" --json "$out/bytes_$c.json" | tee "$out/bytes_$c.md"
      done ;;
    retrieval)
      say bash scripts/repro/retrieval_accuracy.sh "$build" "$out" 0.25 400 ;;
    readahead)
      pair piqa_prefetch_{}_r025_disk128M "" --no-prefetch "${run[@]}" --warmup 16 --disk-bw 128M --h2d-bw 640M \
        --system "$reusing" ;;
    speculate)
      capped=(--disk-bw 128M --h2d-bw 640M)
      pair piqa_speculate_{}_r025_disk128M --speculate "" "${run[@]}" "${capped[@]}" \
        --system h2o-lfu,impress-itf,impress-itf-ro,impress --warmup 16
      pair piqa_speculate_warm128_{}_r025_disk128M --speculate "" "${run[@]}" "${capped[@]}" \
        --system h2o-lfu,impress-itf,impress --warmup 128
      pair piqa_speculate_realdisk_{}_r025 --speculate "" "${run[@]}" \
        --system h2o-lfu,impress-itf,impress-itf-ro,impress --warmup 16
      mkdir -p "$out/tasks"
      for task in piqa rte copa openbookqa; do  # reproduce's TTFT scale; COPA at 50% as the paper's runs
        r=0.25; [ $task = copa ] && r=0.5
        pair "tasks/${task}_speculate_{}" --speculate "" "$build/impress" run --model "$model" \
          --system h2o-lfu,impress-itf,impress --store "$store/c64" --task $task --retention $r --pool 8 \
          --prefix-tokens 1024 --requests 32 --warmup 8 --gpu-cache 16M --cpu-cache 32M --disk-bw 128M --h2d-bw 640M
      done
      (cd "$out/tasks" && python3 ../../../../scripts/check/compare_runs.py --control h2o-lfu \
        {piqa,rte,copa,openbookqa}_speculate_{on,off}.json >compare.md) ;;
    *) echo "results: unknown step '$step' (one of: ${all[*]}, all)" >&2; exit 1 ;;
  esac
  case $step in figures*) python3 scripts/tables/paper_vs_project.py "$out" >"$out/paper_vs_project.md" ;; esac
done
