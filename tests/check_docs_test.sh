#!/usr/bin/env bash
# scripts/check/check_docs.py passes on the repository and names what breaks a copy of it.
set -euo pipefail
repo=$1 impress=$2
python3 "$repo/scripts/check/check_docs.py" "$repo" "$impress"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/README.md" "$repo/Makefile" "$repo/docs" "$tmp/"
mkdir -p "$tmp/results/unlisted"
cp "$repo/results/README.md" "$tmp/results/"
touch "$tmp/results/unlisted/prototype.cc"
printf '\nSee [the missing page](docs/missing.md).\n' >> "$tmp/docs/design.md"
sed -i 's/^make demo /make demonstrate /' "$tmp/README.md"
if python3 "$repo/scripts/check/check_docs.py" "$tmp" "$impress" > "$tmp/out"; then
  echo "check_docs passed a broken copy"; exit 1
fi
grep -q "docs/design.md: link to docs/missing.md: no such file" "$tmp/out" || { cat "$tmp/out"; exit 1; }
grep -q "'make demonstrate' is not a make target" "$tmp/out" || { cat "$tmp/out"; exit 1; }
grep -q "results/README.md: folder results/unlisted/ is not listed" "$tmp/out" || { cat "$tmp/out"; exit 1; }
grep -q "results/unlisted/prototype.cc: code under results/" "$tmp/out" || { cat "$tmp/out"; exit 1; }
echo "check_docs_test: 5 passed, 0 failed"
