#!/usr/bin/env bash
# Fuzzes tenfold::io's safetensors and .npy readers and the WordPiece tokenizer: builds
# tests/fuzz/<target>_fuzz.cpp with clang's libFuzzer, ASan and UBSan (not part of the CMake build: the project
# compiles with GCC) and runs it, seeded with the reference files in tests/data/io (wordpiece: the texts in
# tests/fuzz/wordpiece_corpus) and guided by tests/fuzz/<target>.dict.
#   scripts/fuzz_io.sh safetensors                 # 10^6 inputs
#   scripts/fuzz_io.sh npy -runs=20000             # what the "fuzz" ctests run; other libFuzzer flags pass through
#   scripts/fuzz_io.sh wordpiece                   # needs utf8proc (libutf8proc-dev)
# The grown corpus stays in $TENFOLD_BUILD_DIR/fuzz/<target>_corpus (build/ by default); crashes land there too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-}
case $target in
  safetensors | npy | wordpiece) shift ;;
  *)
    echo "usage: $0 safetensors|npy|wordpiece [libFuzzer flags...]" >&2
    exit 2
    ;;
esac
out=${TENFOLD_BUILD_DIR:-$root/build}/fuzz
cxx=${CLANGXX:-clang++}
mkdir -p "$out/${target}_corpus"
bin=$out/${target}_fuzz
io=$root/include/tenfold/io
deps=("$root/tests/fuzz/${target}_fuzz.cpp" "$io/$target.hpp" "$io/file.hpp")
seeds=$root/tests/data/io
extra=()
case $target in
  safetensors | npy) deps+=("$io/file_dtype.hpp") ;;
  wordpiece)
    deps+=("$io/bert_text.hpp")
    seeds=$root/tests/fuzz/wordpiece_corpus
    extra=("-DTENFOLD_WORDPIECE_VOCAB=\"$root/tests/data/wordpiece/vocab.txt\"" -lutf8proc)
    ;;
esac
stale=0
for dep in "${deps[@]}"; do
  if [[ ! -x $bin || $bin -ot $dep ]]; then stale=1; fi
done
if ((stale)); then
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" "$root/tests/fuzz/${target}_fuzz.cpp" -o "$bin" "${extra[@]}"
fi
cd "$out"
# New inputs go to the first corpus directory; the seeds in the source tree are only read.
exec "$bin" -artifact_prefix="$out/${target}-" -dict="$root/tests/fuzz/$target.dict" -print_final_stats=1 \
  "${@:--runs=1000000}" "$out/${target}_corpus" "$seeds"
