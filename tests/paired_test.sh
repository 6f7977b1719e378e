#!/usr/bin/env bash
# scripts/tables/paired_test.py on constructed samples: the exact McNemar p-values of
# textbook cases (b, c discordant pairs): (0, 6) -> 2/2^6 = 0.031,
# (1, 9) -> 2 * (1 + 10) / 2^10 = 0.021, (3, 3) -> 1, and the Wald interval of
# the difference, d +- 1.96 sqrt(((b + c)/n - d^2)/n): (0, 6) of 10: 0.6 +- 0.3036;
# (1, 9) of 20: 0.4 +- 0.2556; (3, 3) of 20: 0 +- 0.2400; with --reference, the
# same test on agreement with the reference's predictions; several files a side
# pooled as (document, file) pairs; bad input is one line.
set -euo pipefail
script=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# rec TASK DOC PRED: gold is always 0, so pred 0 is right.
rec() { printf '{"task":"%s","doc":%d,"gold":0,"pred":%d,"pred_norm":%d}\n' "$1" "$2" "$3" "$3"; }
write() {  # task, both right, only A right, only B right, both wrong -> appends to a.jsonl, b.jsonl
  local t=$1 i=0
  for _ in $(seq 1 "$2"); do rec "$t" $i 0 >>"$tmp/a.jsonl"; rec "$t" $i 0 >>"$tmp/b.jsonl"; i=$((i+1)); done
  for _ in $(seq 1 "$3"); do rec "$t" $i 0 >>"$tmp/a.jsonl"; rec "$t" $i 1 >>"$tmp/b.jsonl"; i=$((i+1)); done
  for _ in $(seq 1 "$4"); do rec "$t" $i 1 >>"$tmp/a.jsonl"; rec "$t" $i 0 >>"$tmp/b.jsonl"; i=$((i+1)); done
  for _ in $(seq 1 "$5"); do rec "$t" $i 1 >>"$tmp/a.jsonl"; rec "$t" $i 1 >>"$tmp/b.jsonl"; i=$((i+1)); done
}
write six 4 0 6 0
write ten 10 1 9 0
write even 5 3 3 9
out=$(python3 "$script" "$tmp/a.jsonl" "$tmp/b.jsonl")
echo "$out"
grep -q '^| six | 10 | 0.400 | 1.000 | +60.00 | \[+29.64, +90.36\] | 0 | 6 | 0.031 |$' <<<"$out"
grep -q '^| ten | 20 | 0.550 | 0.950 | +40.00 | \[+14.44, +65.56\] | 1 | 9 | 0.021 |$' <<<"$out"
grep -q '^| even | 20 | 0.400 | 0.400 | +0.00 | \[-24.00, +24.00\] | 3 | 3 | 1.000 |$' <<<"$out"
# Agreement with a reference that is always wrong (pred 1): A predicts 1 on
# docs 0-7, B on docs 0-1, so only A agrees on 6 documents and never only B.
for i in $(seq 0 9); do
  rec ref "$i" 1 >>"$tmp/r.jsonl"
  rec ref "$i" $((i < 8 ? 1 : 0)) >>"$tmp/ra.jsonl"
  rec ref "$i" $((i < 2 ? 1 : 0)) >>"$tmp/rb.jsonl"
done
out=$(python3 "$script" "$tmp/ra.jsonl" "$tmp/rb.jsonl" --reference "$tmp/r.jsonl")
echo "$out"
grep -q '^| ref | 10 | 0.200 | 0.800 | +60.00 | \[+29.64, +90.36\] | 0 | 6 | 0.031 |$' <<<"$out"
grep -q '^| ref | 10 | 0.800 | 0.200 | -60.00 | \[-90.36, -29.64\] | 6 | 0 | 0.031 |$' <<<"$out"
grep -q 'agrees with full KV' <<<"$out"
if err=$(python3 "$script" "$tmp/ra.jsonl" "$tmp/rb.jsonl" --reference "$tmp/a.jsonl" 2>&1); then
  echo "mismatched reference accepted"; exit 1
fi
grep -q "a.jsonl: scores other documents" <<<"$err"
head -3 "$tmp/a.jsonl" >"$tmp/short.jsonl"
if err=$(python3 "$script" "$tmp/a.jsonl" "$tmp/short.jsonl" 2>&1); then echo "mismatched documents accepted"; exit 1; fi
grep -q "short.jsonl: scores other documents" <<<"$err"
# The (0, 6) case split over two files a side, the same document numbers in
# each: pooled, the counts add up to (0, 6) again.
write_to() {  # task, both right, only B right, file prefix -> $tmp/PREFIXa.jsonl, $tmp/PREFIXb.jsonl
  local t=$1 i=0
  for _ in $(seq 1 "$2"); do rec "$t" $i 0 >>"$tmp/$4a.jsonl"; rec "$t" $i 0 >>"$tmp/$4b.jsonl"; i=$((i+1)); done
  for _ in $(seq 1 "$3"); do rec "$t" $i 1 >>"$tmp/$4a.jsonl"; rec "$t" $i 0 >>"$tmp/$4b.jsonl"; i=$((i+1)); done
}
write_to pool 2 3 p1
write_to pool 2 3 p2
out=$(python3 "$script" "$tmp/p1a.jsonl,$tmp/p2a.jsonl" "$tmp/p1b.jsonl,$tmp/p2b.jsonl")
echo "$out"
grep -q '^| pool | 10 | 0.400 | 1.000 | +60.00 | \[+29.64, +90.36\] | 0 | 6 | 0.031 |$' <<<"$out"
if err=$(python3 "$script" "$tmp/p1a.jsonl,$tmp/p2a.jsonl" "$tmp/p1b.jsonl" 2>&1); then echo "unequal file lists accepted"; exit 1; fi
grep -q "p1b.jsonl: not as many files as" <<<"$err"
# Generation records (a task file's): right when every answer occurs (`all`),
# keyed by line; the (1, 9) case again, and agreement by output text.
gen() { printf '{"task":"f","line":%d,"output":"%s","all":%s}\n' "$1" "$2" "$3"; }
for i in $(seq 1 20); do
  if [ "$i" -le 10 ]; then gen "$i" 42 true; else gen "$i" x false; fi >>"$tmp/ga.jsonl"
  if [ "$i" -eq 1 ] || [ "$i" -gt 19 ]; then gen "$i" x false; else gen "$i" 42 true; fi >>"$tmp/gb.jsonl"
done
out=$(python3 "$script" "$tmp/ga.jsonl" "$tmp/gb.jsonl" --reference "$tmp/ga.jsonl")
echo "$out"
grep -q '^| f | 20 | 0.500 | 0.900 | +40.00 | \[+14.44, +65.56\] | 1 | 9 | 0.021 |$' <<<"$out"
grep -q '^| f | 20 | 1.000 | 0.500 | -50.00 |' <<<"$out"
echo '{"task": 1}' >"$tmp/bad.jsonl"
if err=$(python3 "$script" "$tmp/bad.jsonl" "$tmp/a.jsonl" 2>&1); then echo "malformed record accepted"; exit 1; fi
grep -q "bad.jsonl:1: not an eval samples record" <<<"$err"
echo "paired_test: ok"
