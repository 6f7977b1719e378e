#!/usr/bin/env bash
# The shape of src/ (docs/design.md, Layers): scripts/check/check_layers.py (every
# #include of a layer the including file's layer links) and check_sizes.py (no
# file over 450 lines, no function over 60) pass on the repository, and each
# names what breaks a copy: the model layer including the store, a function
# of 61 lines, one whose signature takes three lines.
set -euo pipefail
repo=$1
python3 "$repo/scripts/check/check_layers.py" "$repo"
python3 "$repo/scripts/check/check_sizes.py" "$repo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/CMakeLists.txt" "$repo/src" "$tmp/"
sed -i '0,/^#include "model\//s//#include "store\/chunk_store.h"\n&/' "$tmp/src/model/attention.cc"
{ echo "int Long() {"; for i in $(seq 59); do echo "  // line $i"; done; echo "}"; } >>"$tmp/src/common/units.cc"
if python3 "$repo/scripts/check/check_layers.py" "$tmp" >"$tmp/out"; then
  echo "check_layers passed a model file that includes the store"; exit 1
fi
grep -q "src/model/attention.cc: includes store/ (layer store), which layer model does not link" "$tmp/out" ||
  { cat "$tmp/out"; exit 1; }
if python3 "$repo/scripts/check/check_sizes.py" "$tmp" >"$tmp/out"; then
  echo "check_sizes passed a function of 61 lines"; exit 1
fi
grep -q "src/common/units.cc:[0-9]*: a function of 61 lines, more than 60: int Long() {" "$tmp/out" ||
  { cat "$tmp/out"; exit 1; }
# A signature over three lines is a function all the same.
cp "$repo/src/common/units.cc" "$tmp/src/common/units.cc"
{ echo "int Wide(int a,"; echo "         int b,"; echo "         int c) {"; for i in $(seq 59); do echo "  // line $i"; done
  echo "}"; } >>"$tmp/src/common/units.cc"
if python3 "$repo/scripts/check/check_sizes.py" "$tmp" >"$tmp/out"; then
  echo "check_sizes passed a function of 63 lines, 3 of them its signature"; exit 1
fi
grep -q "src/common/units.cc:[0-9]*: a function of 63 lines, more than 60: int Wide(int a," "$tmp/out" ||
  { cat "$tmp/out"; exit 1; }
echo "code_checks_test: 5 passed, 0 failed"
