#!/usr/bin/env bash
# The CUDA tests on a device machine with debug information, and a crash's
# return address and loaded libraries from cuda-gdb (the machine has no gdb):
#   scripts/gpu/gpu_debug.sh CARRY_DIR OUT_DIR [GTEST_FILTER]
# CARRY_DIR holds deps/ (scripts/gpu/gpu_prepare.sh's call1 folder, or a copy of
# its deps/ alone). Builds build-gpu/ RelWithDebInfo, makes the tiny
# checkpoints' fixtures, runs the tests FILTER names (default: the device
# check's CUDA tests) and, when they crash, runs the last test started again
# under cuda-gdb: the symbol of the address on top of the stack (the caller of
# a jump to 0), the instructions before it, the stack's words with their
# symbols, and which library each comes from. About 2 minutes on 16 cores.
set -u
carry=$(readlink -f "${1:?usage: gpu_debug.sh CARRY_DIR OUT_DIR [FILTER]}"); mkdir -p "${2:?}"; o=$(readlink -f "$2")
filter=${3:-'*CudaPath*:*ModelVsTransformers*:*ReuseTest*'}
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIMPRESS_DEPS_DIR="$carry/deps" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 > "$o/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target impress_tests >> "$o/build.log" 2>&1 || { tail -40 "$o/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
python3 scripts/setup/make_fixtures.py --tiny-only --out build-gpu/fixtures > "$o/fixtures.log" 2>&1 || tail -5 "$o/fixtures.log"
export IMPRESS_FIXTURES=$PWD/build-gpu/fixtures IMPRESS_TEST_DEVICE=cuda IMPRESS_CUDA_TEST_DEVICE=cuda
ldd build-gpu/impress_tests > "$o/ldd.txt"
timeout 200 build-gpu/impress_tests --gtest_filter="$filter" > "$o/tests.log" 2>&1; rc=$?
echo "tests rc $rc"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|TempDir" "$o/tests.log" | head -30
[ $rc -eq 0 ] && exit 0
t=$(grep "^\[ RUN" "$o/tests.log" | tail -1 | awk '{print $4}'); echo "last test started: $t"
timeout 100 cuda-gdb -batch -ex "set pagination off" -ex run -ex "info symbol *(long*)\$sp" -ex "x/12i *(long*)\$sp-40" \
  -ex "x/24a \$sp" -ex "info sharedlibrary" --args build-gpu/impress_tests --gtest_filter="$t" > "$o/gdb.log" 2>&1
grep -v -E "New Thread|exited|^\[Thread|Inferior" "$o/gdb.log" | grep -A60 -E "SIGSEGV|SIGABRT" | head -80
exit $rc
