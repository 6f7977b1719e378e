#!/usr/bin/env bash
# scripts/check/compare_runs.py on constructed run results: B/A of mean and p99 TTFT
# and of bytes from all tiers, a system only one file has left out, the
# control labelled; an odd file count and a sweep are one-line errors.
set -euo pipefail
script=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {  # system mean p99 io gpu cpu disk
  printf '{"system":"%s","ttft_ms":{"mean":%s,"p50":0,"p99":%s},"io_ms":{"mean":%s},"bytes_read":{"gpu":%s,"cpu":%s,"disk":%s}}' "$@"
}
echo "{\"config\":{\"task\":\"piqa\"},\"runs\":[$(run h2o 100 200 10 1 1 2),$(run itf 80 120 30 100 200 700)]}" >"$tmp/a.json"
echo "{\"config\":{\"task\":\"piqa\"},\"runs\":[$(run h2o 110 200 11 1 1 2),$(run itf 120 180 60 500 500 1000),$(run only_b 1 1 1 1 1 1)]}" >"$tmp/b.json"
out=$(python3 "$script" --control h2o "$tmp/a.json" "$tmp/b.json")
echo "$out"
grep -q '^| piqa | a.json | b.json | h2o (control) | 100 / 200 | 110 / 200 | 1.10 | 1.00 | 10 / 11 | 1.00 |$' <<<"$out"
grep -q '^| piqa | a.json | b.json | itf | 80 / 120 | 120 / 180 | 1.50 | 1.50 | 30 / 60 | 2.00 |$' <<<"$out"
! grep -q only_b <<<"$out"
if python3 "$script" "$tmp/a.json" 2>"$tmp/err"; then echo "odd count accepted"; exit 1; fi
[ "$(wc -l <"$tmp/err")" -eq 1 ]
echo '{"sweep":[]}' >"$tmp/s.json"
if python3 "$script" "$tmp/s.json" "$tmp/a.json" 2>"$tmp/err"; then echo "sweep accepted"; exit 1; fi
grep -q "s.json: a sweep" "$tmp/err"
echo "compare_runs: ok"
