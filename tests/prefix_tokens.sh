#!/usr/bin/env bash
# eval --prefix-tokens N: per task, the few-shot prefix holds as many examples
# as fit in N tokens: its prefix is at most N tokens, and the same sample with
# one example more (--shots, counted by eval itself) is longer than N.
# Usage: prefix_tokens.sh IMPRESS_BINARY FIXTURES_DIR DATA_DIR
set -euo pipefail
bin=$1; fixtures=$2; data=$3
model=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models']['tiny-llama-gqa'])" "$fixtures/fixtures.json")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
n=300
"$bin" eval --model "$model" --data "$data" --task all --prefix-tokens $n --limit 1 --json "$tmp/fit.json" >/dev/null
python3 - "$tmp/fit.json" $n >"$tmp/shots" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert j["max_prefix_tokens"] == n, j["max_prefix_tokens"]
for r in j["results"]:
    assert 0 < r["prefix_tokens"] <= n, r
    print(r["task"], r["shots"], r["prefix_tokens"])
PY
while read -r task shots tokens; do
  "$bin" eval --model "$model" --data "$data" --task "$task" --shots $((shots + 1)) --limit 1 --json "$tmp/more.json" >/dev/null
  more=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['results'][0]['prefix_tokens'])" "$tmp/more.json")
  [ "$more" -gt $n ] || { echo "FAIL $task: $((shots + 1)) shots make $more tokens, which fits in $n"; exit 1; }
  echo "$task: $shots shots, $tokens tokens; $((shots + 1)) shots, $more"
done <"$tmp/shots"
if "$bin" eval --model "$model" --data "$data" --task copa --shots 2 --prefix-tokens $n 2>"$tmp/err"; then
  echo "FAIL: --shots with --prefix-tokens accepted"; exit 1
fi
grep -q "excludes" "$tmp/err"
echo "prefix_tokens: ok"
