#!/usr/bin/env bash
# Fuzzes tenfold::io::read_idx_from_bytes: builds tests/fuzz/idx_fuzz.cpp with clang's libFuzzer, ASan and
# UBSan (not part of the CMake build: the project compiles with GCC) and runs it from the seed corpus.
#   scripts/fuzz_idx.sh                  # 10^6 inputs
#   scripts/fuzz_idx.sh -runs=20000      # what the "fuzz" ctest runs; other libFuzzer flags pass through
# The grown corpus stays in $TENFOLD_BUILD_DIR/fuzz/idx_corpus (build/ by default); crashes land there too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${TENFOLD_BUILD_DIR:-$root/build}/fuzz
cxx=${CLANGXX:-clang++}
mkdir -p "$out/idx_corpus"
bin=$out/idx_fuzz
if [[ ! -x $bin || $bin -ot $root/tests/fuzz/idx_fuzz.cpp || $bin -ot $root/include/tenfold/io/idx.hpp ]]; then
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" "$root/tests/fuzz/idx_fuzz.cpp" -o "$bin" -lz
fi
cd "$out"
# New inputs go to the first corpus directory; the seeds in the source tree are only read.
exec "$bin" -artifact_prefix="$out/" -print_final_stats=1 "${@:--runs=1000000}" "$out/idx_corpus" "$root/tests/fuzz/idx_corpus"
