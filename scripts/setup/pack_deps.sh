#!/usr/bin/env bash
# Bundles the third-party headers and libraries impress builds against (from
# this Debian machine's -dev packages) into one folder, for building on a
# machine that has a compiler and LibTorch but not these packages:
#   scripts/setup/pack_deps.sh OUT_DIR
#   cmake -S . -B build -DIMPRESS_DEPS_DIR=OUT_DIR -DCMAKE_PREFIX_PATH=<torch cmake dir>
set -euo pipefail
out=$1
lib=/usr/lib/$(gcc -print-multiarch)
rm -rf "$out"; mkdir -p "$out/include" "$out/lib"
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/gtest /usr/include/benchmark "$out/include/"
cp /usr/include/pcre2.h "$out/include/"
cp -r /usr/include/hiredis "$out/include/"
cp "$lib/libgtest.a" "$lib/libgtest_main.a" "$out/lib/"
# Shared libraries keep their soname; the .so name links to it.
for name in libpcre2-8 libbenchmark libhiredis; do
  real=$(readlink -f "$lib/$name.so")
  soname=$(objdump -p "$real" | awk '/SONAME/ {print $2}')
  cp "$real" "$out/lib/$soname"
  ln -s "$soname" "$out/lib/$name.so"
done
du -sh "$out"
