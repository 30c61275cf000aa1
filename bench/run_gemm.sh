#!/usr/bin/env bash
# Builds and runs the GEMM benchmark (bench/bench_gemm.cpp) with 1 and 2 threads and prints the GEMM
# tables of bench/RESULTS.md (Markdown) from the JSON.
#
#   bench/run_gemm.sh            # BUILD_DIR (default build-bench), BENCH_REPS (default 5), BENCH_FILTER
#
# tenfold's pool reads TENFOLD_NUM_THREADS once per process, so the binary runs once per thread count;
# OpenBLAS gets the same count. Repetitions are interleaved at random and the report keeps each
# benchmark's best, so that bursts of load from other users of the machine fall on every implementation.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_DIR:-$build/bench-results}
reps=${BENCH_REPS:-5}
filter=${BENCH_FILTER:-.}

"$root/scripts/install_deps.sh" --if-missing all # the bench group (peers, Google Benchmark) too
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON \
    -DTENFOLD_BUILD_TESTS=OFF -DTENFOLD_BUILD_EXAMPLES=OFF
fi
cmake --build "$build" --target tenfold_bench_gemm
source "$root/bench/openblas_core.sh" && openblas_core "$build/bench/tenfold_bench_gemm"
mkdir -p "$out"

loads=()
for threads in 1 2; do
  loads+=("$(uptime)")
  TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_gemm" --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 --benchmark_filter="$filter" \
    --benchmark_out_format=json --benchmark_out="$out/gemm_t$threads.json" >/dev/null
done
loads+=("$(uptime)")
python3 "$root/bench/gemm_report.py" "$out/gemm_t1.json" "$out/gemm_t2.json" --load "${loads[@]}" \
  --commit "$(git -C "$root" rev-parse --short HEAD)"
