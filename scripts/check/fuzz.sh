#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz with clang's libFuzzer (plus
# AddressSanitizer and UBSan) and runs each for SECONDS seconds, starting
# from the committed corpus. New inputs go to BUILD/corpus/<target>, crashes
# to BUILD/crashes/<target>/; a crash fails the run. Copy a crash's input into
# tests/fuzz/corpus/<target>/ once it is fixed: `make test` replays that
# corpus with the normal build.
# Usage: scripts/check/fuzz.sh [SECONDS] [TARGET...]   (targets: tests/fuzz/fuzz_TARGET.cc; default all)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.cc; do t=${f#tests/fuzz/fuzz_}; TARGETS+=("${t%.cc}"); done
fi
BUILD=${FUZZ_BUILD:-build-fuzz}
CXX=${FUZZ_CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (Debian: apt-get install clang libclang-rt-14-dev)"; exit 1; }

SRC=(src/model/config.cc src/model/safetensors.cc src/model/tokenizer.cc src/common/utf8.cc src/data/task.cc
     src/store/chunk_layout.cc src/store/chunk_store.cc src/common/crc32c.cc src/store/env.cc src/store/log_format.cc
     src/store/manifest.cc src/store/posix_env.cc src/common/thread_pool.cc src/kvstore/store_log.cc src/kvstore/compaction.cc
     src/kvstore/store_repair.cc
     src/cache/radix_tree.cc)
FLAGS=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc -Itests/fuzz)
mkdir -p "$BUILD/obj"
objs=()
for f in "${SRC[@]}"; do  # the code under test, compiled once for every target
  o="$BUILD/obj/$(basename "${f%.cc}").o"
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ]; then
    echo "fuzz: compiling $f"
    "$CXX" "${FLAGS[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$f" -o "$o"
  fi
  objs+=("$o")
done
for t in "${TARGETS[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.cc" ] || { echo "fuzz: no target '$t' (tests/fuzz/fuzz_$t.cc)"; exit 1; }
  echo "fuzz: building $t"
  "$CXX" "${FLAGS[@]}" "tests/fuzz/fuzz_$t.cc" "${objs[@]}" -lpcre2-8 -pthread -o "$BUILD/fuzz_$t"
done
status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
  echo "fuzz: running $t for ${SECONDS_EACH}s"
  if ! ASAN_OPTIONS=detect_leaks=0 "$BUILD/fuzz_$t" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 \
       -artifact_prefix="$BUILD/crashes/$t/" "$BUILD/corpus/$t" "tests/fuzz/corpus/$t" 2>"$BUILD/fuzz_$t.log"; then
    echo "fuzz: $t crashed; input in $BUILD/crashes/$t/, log $BUILD/fuzz_$t.log"
    status=1
  fi
  tail -1 "$BUILD/fuzz_$t.log"
done
exit $status
