#!/usr/bin/env bash
# Configures, builds and runs tenfold's tests: the README's test command, and what CI runs.
#   scripts/test.sh [extra cmake configure arguments, e.g. -DTENFOLD_NATIVE=OFF]
# TENFOLD_BUILD_DIR (default: build) is the build directory, configured on first use as Release with
# Ninja when it is installed; TENFOLD_JOBS (default: all cores) is the build and test parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --if-missing lib test # not the bench group: the benchmarks are not built here

build=${TENFOLD_BUILD_DIR:-build}
jobs=${TENFOLD_JOBS:-$(nproc)}
first_time=()
if [[ ! -f $build/CMakeCache.txt ]]; then
  first_time=(-DCMAKE_BUILD_TYPE=Release)
  if command -v ninja >/dev/null; then first_time+=(-G Ninja); fi
fi
cmake -S . -B "$build" "${first_time[@]}" -DTENFOLD_BUILD_TESTS=ON "$@"
cmake --build "$build" --parallel "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
