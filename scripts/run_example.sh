#!/usr/bin/env bash
# Installs the dependencies (if missing), builds one example in Release and runs it.
#   scripts/run_example.sh [example, default: fashion_mnist (the flagship: trains a CNN)] [arguments for the example...]
# Uses the Release build directory TENFOLD_BUILD_DIR (default: build); scripts/test.sh builds the tests apart, sanitized, in build-test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --if-missing lib test # not the bench group: the benchmarks are not built here

example=${1:-fashion_mnist}
shift || true
build=${TENFOLD_BUILD_DIR:-build}
first_time=()
if [[ ! -f $build/CMakeCache.txt ]]; then
  first_time=(-DCMAKE_BUILD_TYPE=Release)
  if command -v ninja >/dev/null; then first_time+=(-G Ninja); fi
fi
cmake -S . -B "$build" "${first_time[@]}" -DTENFOLD_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build" --target "$example" --parallel "${TENFOLD_JOBS:-$(nproc)}"
exe=$(find "$build/examples" -type f -name "$example" -perm -u+x | head -n 1)
if [[ -z $exe ]]; then
  echo "run_example.sh: no executable '$example' under $build/examples" >&2
  exit 1
fi
echo "+ $exe $*"
"$exe" "$@"
