#!/usr/bin/env bash
# tsan_tests.sh [JOBS]: the concurrency checks. Builds the unit-test binaries that hold the
# pipeline, gradient-reducer, watchdog, trace and lock tests with clang in build-tsa/, with the
# lock annotations checked at compile time (-Wthread-safety -Werror) and ThreadSanitizer
# (Debug -O1, line tables only: enough for TSan's stack traces, and a third less compile time
# than full -g), runs them with halt_on_error=1, and prints one summary line. Exit 0 only when
# the build is clean and no test failed or raced. JOBS (default: nproc) is the build and test
# parallelism.
#
# Threads: SHARDFLOW_THREADS=1 and OMP_NUM_THREADS=1 keep Eigen's OpenMP runtime (not built
# with ThreadSanitizer, so its barriers look like races) to one thread; the pipeline's own
# worker threads, the reducer's communication thread and the watchdog's thread are ours and
# all run. MPI runs as a singleton (no mpiexec) in the reducer/watchdog tests.
set -uo pipefail
jobs=${1:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-tsa
start=$(date +%s)
summary() {
  echo "tsan_tests: $1 ($(($(date +%s) - start)) s)"
}

if ! command -v clang++ >/dev/null; then
  summary "FAILED: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)"
  exit 1
fi

echo "== configure $build (clang, -Wthread-safety, ThreadSanitizer)"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-gline-tables-only -O1" \
  -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only -O1" \
  -DSHARDFLOW_SANITIZE=thread -DSHARDFLOW_THREAD_SAFETY_ANALYSIS=ON \
  -DSHARDFLOW_UNIT_TESTS_ONLY=ON -DSHARDFLOW_CUDA=OFF -DSHARDFLOW_ONEDNN=OFF \
  -DSHARDFLOW_TEST_CXX_FLAGS=-O0 \
  >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; summary "FAILED: configure"; exit 1; }

# io_unit_tests: the pipeline (parallel map, map+batch, prefetch, interleave, autotune, cache,
# sources); comm_unit_tests: GradientReducer and Watchdog threads; core_unit_tests: the
# annotated Mutex/CondVar and the tracer; serve_unit_tests: shardflow-serve's batch queue,
# model replicas under reload, the HTTP connection poller and its worker threads.
targets=(io_unit_tests comm_unit_tests core_unit_tests serve_unit_tests apps_thread_tests)
echo "== build ${targets[*]} (-j $jobs)"
cmake --build "$build" -j "$jobs" --target "${targets[@]}" ||
  { summary "FAILED: build (a -Wthread-safety error names the unguarded access)"; exit 1; }

# Which tests run: the binaries' suites that start threads (the rest of io_unit_tests and
# core_unit_tests is single-threaded parsing and arithmetic, already run under ASan/UBSan).
declare -A filters=(
  [io_unit_tests]='*'
  [comm_unit_tests]='GradientReducerThreads.*:WatchdogThreads.*'
  # (the thread build compiles only these suites' files: tests/CMakeLists.txt names them)
  [core_unit_tests]='ThreadAnnotations.*:Trace*:PoolTest.*:ConvChunk.ThreadsDoNotChangeResults:AttentionKernel.*'
  [serve_unit_tests]='BatchQueueThreads.*:ModelPoolThreads.*:ConnectionPollerThreads.*:WorkerPoolThreads.*'
  [apps_thread_tests]='*'
)
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 suppressions=$root/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export SHARDFLOW_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
failed=()
for t in "${targets[@]}"; do
  echo "== $t --gtest_filter=${filters[$t]}"
  log=$build/$t.tsan.log
  if "$build/bin/$t" --gtest_filter="${filters[$t]}" >"$log" 2>&1; then
    grep -E '^\[==========\] .* ran|^\[  (PASSED|SKIPPED) ' "$log"
    # A filter that matches nothing passes silently: that is a failure here (a renamed suite,
    # or a file left out of the thread build by tests/CMakeLists.txt).
    if grep -q '^\[==========\] 0 tests from' "$log"; then
      echo "$t: the filter '${filters[$t]}' matched no test"
      failed+=("$t")
    fi
  else
    tail -n 80 "$log"
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  summary "FAILED: ${failed[*]} (logs: build-tsa/<binary>.tsan.log)"
  exit 1
fi
summary "passed: ${targets[*]} under ThreadSanitizer, built with -Wthread-safety -Werror"
