#!/usr/bin/env bash
# Set-up, build, and the whole test suite: CTest on the release build (unit, MPI and
# integration tests), then the unit tests again under AddressSanitizer + UBSan.
# Exit status non-zero if anything failed. Usage: ./test.sh [extra ctest args, e.g. -R tfrecord]
set -uo pipefail
cd "$(dirname "$0")"
jobs=$(nproc)

scripts/setup.sh || exit 1

echo "== build (release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >build-configure.log 2>&1 \
  || { cat build-configure.log; exit 1; }
cmake --build build -j "$jobs" || exit 1

echo "== tests (release)"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 300 "$@"
release_rc=$?

echo "== build (address + undefined sanitizers, unit tests)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
  -DSHARDFLOW_SANITIZE=address -DSHARDFLOW_UNIT_TESTS_ONLY=ON -DSHARDFLOW_CUDA=OFF \
  >build-asan-configure.log 2>&1 || { cat build-asan-configure.log; exit 1; }
cmake --build build-asan -j "$jobs" || exit 1

echo "== tests (address + undefined sanitizers)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j "$jobs" -L unit --output-on-failure --timeout 600 "$@"
asan_rc=$?

echo "== fuzzing (libFuzzer, address + undefined sanitizers, bounded time per target)"
tests/fuzz/run_fuzzers.sh 20
fuzz_rc=$?

if [ $release_rc -ne 0 ] || [ $asan_rc -ne 0 ] || [ $fuzz_rc -ne 0 ]; then
  echo "test.sh: FAILED (release ctest exit $release_rc, sanitizer ctest exit $asan_rc, fuzzing exit $fuzz_rc)"
  exit 1
fi
echo "test.sh: all tests passed"
