#!/usr/bin/env bash
# Fuzzes tenfold::io's safetensors and .npy readers: builds tests/fuzz/<target>_fuzz.cpp with clang's libFuzzer,
# ASan and UBSan (not part of the CMake build: the project compiles with GCC) and runs it, seeded with the
# reference files in tests/data/io and guided by tests/fuzz/<target>.dict.
#   scripts/fuzz_io.sh safetensors                 # 10^6 inputs
#   scripts/fuzz_io.sh npy -runs=20000             # what the "fuzz" ctests run; other libFuzzer flags pass through
# The grown corpus stays in $TENFOLD_BUILD_DIR/fuzz/<target>_corpus (build/ by default); crashes land there too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-}
case $target in
  safetensors | npy) shift ;;
  *)
    echo "usage: $0 safetensors|npy [libFuzzer flags...]" >&2
    exit 2
    ;;
esac
out=${TENFOLD_BUILD_DIR:-$root/build}/fuzz
cxx=${CLANGXX:-clang++}
mkdir -p "$out/${target}_corpus"
bin=$out/${target}_fuzz
stale=0
for dep in "$root/tests/fuzz/${target}_fuzz.cpp" "$root/include/tenfold/io/$target.hpp" "$root/include/tenfold/io/file.hpp" \
  "$root/include/tenfold/io/file_dtype.hpp"; do
  if [[ ! -x $bin || $bin -ot $dep ]]; then stale=1; fi
done
if ((stale)); then
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" "$root/tests/fuzz/${target}_fuzz.cpp" -o "$bin"
fi
cd "$out"
# New inputs go to the first corpus directory; the seeds in the source tree are only read.
exec "$bin" -artifact_prefix="$out/${target}-" -dict="$root/tests/fuzz/$target.dict" -print_final_stats=1 \
  "${@:--runs=1000000}" "$out/${target}_corpus" "$root/tests/data/io"
