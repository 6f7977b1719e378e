#!/usr/bin/env bash
# The data splits and tokenizer fixtures in the repository match their recorded
# sha256 (data/SHA256SUMS, tests/tokenizers/SHA256SUMS), and a changed split is
# refused with one line naming it.
#   tests/data_checksums.sh SOURCE_DIR
set -euo pipefail
src=$1
check="$src/scripts/check/check_checksums.sh"
bash "$check" "$src/data" "$src/tests/tokenizers"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$src/data" "$tmp/data"
printf 'x' | dd of="$tmp/data/copa/validation.jsonl" bs=1 seek=100 conv=notrunc status=none
if bash "$check" "$tmp/data" 2>"$tmp/err"; then
  echo "data_checksums: a changed split passed the check" >&2; exit 1
fi
lines=$(wc -l < "$tmp/err")
[ "$lines" -eq 1 ] || { echo "data_checksums: expected one line, got $lines:" >&2; cat "$tmp/err" >&2; exit 1; }
grep -q "copa/validation.jsonl: sha256 .* differs" "$tmp/err" ||
  { echo "data_checksums: the line does not name the file:" >&2; cat "$tmp/err" >&2; exit 1; }
rm "$tmp/data/rte/train.jsonl"
bash "$check" "$tmp/data" 2>"$tmp/err" && { echo "data_checksums: a missing split passed" >&2; exit 1; }
grep -q "rte/train.jsonl: missing" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "data_checksums: a changed split and a missing one are each named in one line"
