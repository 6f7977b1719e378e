#!/usr/bin/env bash
# The fixed commands whose behaviour a refactor of the engine must leave
# exactly as it was: `impress run` of all seven systems on PIQA with both
# ITF units, with read-ahead, without it, and with speculation, and `impress
# eval` of the selective systems; the reusing systems again under the int4
# codec. Writes their JSON and logs under OUT and
# prints scripts/check/behaviour_table.py's table of them (timing left out).
#
# Usage: scripts/check/behaviour_snapshot.sh BUILD OUT [MODEL]
set -euo pipefail
build=${1:?usage: behaviour_snapshot.sh BUILD OUT [MODEL]}
out=${2:?usage: behaviour_snapshot.sh BUILD OUT [MODEL]}
model=${3:-models/smollm2-135m}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

all=$("$build/impress" list systems --paper 2>/dev/null || "$build/impress" run --list-paper-systems)
all=$(paste -sd, <<<"$all")  # `list` since 7f8f01f; the flag before it
common=(--model "$model" --task piqa --retention 0.25 --pool 4 --prefix-tokens 1024 --requests 12 --warmup 4
        --gpu-cache 8M --cpu-cache 16M)
run() {  # NAME STORE ARGS...
  local name=$1 dir=$2; shift 2
  "$build/impress" run "${common[@]}" --store "$dir" "$@" --json "$out/$name.json" > "$out/$name.log" 2>&1
}
run run_prefetch "$store/fp16" --system "$all" --itf-unit token,chunk
run run_no_prefetch "$store/fp16" --system "$all" --itf-unit token,chunk --no-prefetch
run run_speculate "$store/fp16" --system h2o-lfu,impress-itf,impress-itf-ro,impress --itf-unit token,chunk --speculate
# Under a codec: chunks encoded on insert and repack, the CPU tier holding them encoded.
run run_codec_int4 "$store/int4" --system as,h2o-lfu,impress-itf-ro,impress --itf-unit token,chunk --kv-codec int4

ev=(--model "$model" --task piqa --prefix-tokens 1024 --limit 30 --retention 0.5,0.25,0.1)
"$build/impress" eval "${ev[@]}" --system h2o-lru --json "$out/eval_h2o.json" > "$out/eval_h2o.log" 2>&1
"$build/impress" eval "${ev[@]}" --system impress-itf --itf-unit token,chunk --json "$out/eval_itf.json" \
  > "$out/eval_itf.log" 2>&1
"$build/impress" eval "${ev[@]}" --system impress-itf --probe-layout spread --json "$out/eval_itf_spread.json" \
  > "$out/eval_itf_spread.log" 2>&1

python3 "$here/behaviour_table.py" "$out"/run_*.json "$out"/eval_*.json
