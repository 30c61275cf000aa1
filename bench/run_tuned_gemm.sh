#!/usr/bin/env bash
# The GEMM with this machine's tuned table (include/tenfold/tuned/gemm_cpu.hpp) against the same
# benchmark built without it (TENFOLD_NO_TUNED_TABLES: the kernels' defaults), and OpenBLAS, with 1 and
# 2 threads. The two binaries run alternately, ROUNDS times each, and each case keeps its best run, so
# that a burst of load on a shared machine falls on both. Prints the Markdown table of bench/RESULTS.md.
#
#   bench/run_tuned_gemm.sh        # BUILD_DIR (default build-bench), ROUNDS (default 3), BENCH_FILTER
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_DIR:-$build/bench-results}
rounds=${ROUNDS:-3}
filter=${BENCH_FILTER:-gemm/(tenfold|openblas)/}

"$root/scripts/install_deps.sh" --if-missing all
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON \
    -DTENFOLD_BUILD_TESTS=OFF -DTENFOLD_BUILD_EXAMPLES=OFF
fi
cmake --build "$build" --target tenfold_bench_gemm tenfold_bench_gemm_untuned
source "$root/bench/openblas_core.sh" && openblas_core "$build/bench/tenfold_bench_gemm"
mkdir -p "$out"
lscpu | grep -E "^Model name|^CPU family|^Model:" | tr -s ' '
uptime
files=()
for threads in 1 2; do
  for round in $(seq "$rounds"); do
    for kind in tuned untuned; do
      bin=$build/bench/tenfold_bench_gemm; [[ $kind == untuned ]] && bin=${bin}_untuned
      f=$out/tuned_gemm_${kind}_t${threads}_r$round.json
      TENFOLD_NUM_THREADS=$threads "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.2 \
        --benchmark_out_format=json --benchmark_out="$f" >/dev/null
      files+=("$threads:$kind:$f")
    done
  done
done
uptime
python3 "$root/bench/tuned_gemm_report.py" "${files[@]}"
