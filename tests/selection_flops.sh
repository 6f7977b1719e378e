#!/usr/bin/env bash
# scripts/bench/selection_flops.py on a constructed run: 2 requests, 120 new tokens
# and 4000 reused ones (T = 60, P = 2000), 25% kept (500), SmolLM2-135M's shapes
# (D 576, 9 query and 3 KV heads of 64, F 1536, 30 layers, vocab 49152).
# By hand: weights 2*576*(576 + 2*192) + 2*576*576 + 3*2*576*1536 = 7,077,888 a token;
# attention 4*9*64*(60*500 + 60*61/2) = 73,336,320 a layer; forward
# 30*(60*7,077,888 + 73,336,320) + 2*576*49152 = 14,996,911,104;
# importance 30*2*3*60*2060*64 = 1,423,872,000 (impress, 3 probe heads), three
# times that for h2o (9 heads); share 1.4239 / 16.4208 = 0.087, 4.2716 / 19.2685 = 0.222.
# impress-itf falling back on 10% of its layers scores 3 + 0.1 * 9 = 3.9 heads a layer:
# 30*2*3.9*60*2060*64 = 1,850,918,400, share 1.8509 / 16.8478 = 0.110.
# Measured (TTFT 300, selection 30, importance 20, I/O 40, placement 10 ms):
# forward 14.9969 GFLOP / 0.220 s = 68 GFLOP/s, importance 1.4239 / 0.020 = 71;
# at the forward's rate 20.888 ms, 20.888 / (300 - 20 + 20.888) = 0.069; impress-itf
# 1.8509 / 0.020 = 93 GFLOP/s, at the forward's rate 27.152 ms, 27.152 / 307.152 = 0.088.
# OPT-6.7B for the same requests (D 4096, 32 heads of 128, F 16384, 32 layers,
# vocab 50272): 32*(60*402,653,184 + 16384*31830) + 2*4096*50272 = 790.19 GFLOP,
# importance 32*2*3*60*2060*128 = 3.04 GFLOP, share 0.0038; impress-itf with the
# same 10% fallback scores 3 + 0.1 * 32 = 6.2 heads: 32*2*6.2*60*2060*128 = 6.28 GFLOP,
# share 6.2777 / 796.47 = 0.0079.
set -euo pipefail
script=$1 opt=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/config.json" <<'JSON'
{"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
 "num_key_value_heads": 3, "head_dim": 64, "num_hidden_layers": 30, "vocab_size": 49152}
JSON
run() {  # system, importance ms, fallback share
  printf '{"system": "%s", "requests": 2, "computed_tokens": 120, "reused_tokens": 4000, "kept_share": 0.25,
    "fallback_share": %s, "ttft_ms": {"mean": 300}, "io_ms": {"mean": 40}, "placement_ms": {"mean": 10},
    "select_ms": {"mean": 30, "importance": %s, "decision": 4, "gather": 6}}' "$1" "$3" "$2"
}
printf '{"config": {"itf_unit": "chunk", "model": "%s"}, "runs": [%s, %s, %s, %s]}' \
  "$tmp" "$(run as 0 0)" "$(run impress 20 0)" "$(run h2o-lfu 20 0)" "$(run impress-itf 20 0.1)" >"$tmp/run.json"
out=$(python3 "$script" "$tmp/run.json" --model "$opt")
echo "$out"
grep -q '^| chunk | impress | 60.0 | 2000 | 15.00 | 1.42 | 0.087 | 68 | 71 | 0.069 | 0.067 | 0.100 |$' <<<"$out"
grep -q '^| chunk | h2o-lfu | 60.0 | 2000 | 15.00 | 4.27 | 0.222 | ' <<<"$out"
grep -q '^| chunk | impress-itf | 60.0 | 2000 | 15.00 | 1.85 | 0.110 | 68 | 93 | 0.088 | 0.067 | 0.100 |$' <<<"$out"
grep -q '^| opt-6.7b | chunk | impress | 790.19 | 3.04 | 0.0038 |$' <<<"$out"
grep -q '^| opt-6.7b | chunk | impress-itf | 790.19 | 6.28 | 0.0079 |$' <<<"$out"
if grep -q '| as |' <<<"$out"; then echo 'a system that probes nothing has a row' >&2; exit 1; fi
