#!/usr/bin/env bash
# Configures, builds and runs tenfold's tests: the README's test command, and what CI runs.
#   scripts/test.sh [extra cmake configure arguments]
# The tests build under AddressSanitizer + UndefinedBehaviorSanitizer (every test must run clean under
# them; without -DNDEBUG, asserts are on): -Og -g1 as the base level (stack traces with line numbers),
# and tests/CMakeLists.txt sets each test's own (-O0 for most, -Og for those that differentiate and
# those whose run time counts). Every label runs, the compile-fail, consumer and fuzz tests included.
# The optimised code users get is what the examples run (built at -O3 and checked against references in
# CI) and what the benchmarks time; TENFOLD_TEST_SANITIZE=0 builds the tests plainly in Release instead.
# TENFOLD_TEST_BUILD_DIR (default: build-test) is the build directory, configured on first use with Ninja
# when it is installed; TENFOLD_JOBS (default: all cores) is the build and test parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --if-missing lib test # not the bench group: the benchmarks are not built here

build=${TENFOLD_TEST_BUILD_DIR:-build-test}
jobs=${TENFOLD_JOBS:-$(nproc)}
sanitize=${TENFOLD_TEST_SANITIZE:-1}
first_time=()
if [[ ! -f $build/CMakeCache.txt ]]; then
  first_time=(-DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_EXAMPLES=OFF)
  if [[ $sanitize != 0 ]]; then first_time+=("-DCMAKE_CXX_FLAGS_RELEASE=-Og -g1" -DTENFOLD_SANITIZE=ON); fi
  if command -v ninja >/dev/null; then first_time+=(-G Ninja); fi
fi
cmake -S . -B "$build" "${first_time[@]}" -DTENFOLD_BUILD_TESTS=ON "$@"
start=$(date +%s)
cmake --build "$build" --parallel "$jobs"
built=$(date +%s)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_init_order=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
# (--timeout: a hung test, say a parallel region that never ends, fails after 10 minutes, not CTest's 25)
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600 || rc=$?
echo "scripts/test.sh: build $((built - start)) s, ctest $(($(date +%s) - built)) s"
exit $rc
