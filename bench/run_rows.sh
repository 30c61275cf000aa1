#!/usr/bin/env bash
# Row-fused composites (softmax, layer_norm, rms_norm) against the materialised definition, Eigen,
# xtensor and the copy bound; prints the markdown table of bench/RESULTS.md.
#   bench/run_rows.sh            # single thread (TENFOLD_NUM_THREADS=1: the peers run single-threaded too)
# Environment: BUILD_DIR (default build-bench), BENCH_REPS (default 10; the table takes medians).
# Repetitions of all benchmarks are interleaved in random order, so that the copy bound and each
# implementation are sampled across the same minutes (this shared VM's speed drifts by 10-20%).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
"$root/scripts/install_deps.sh" --if-missing all # the bench group (peers, Google Benchmark) too
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON \
    -DTENFOLD_BUILD_TESTS=OFF -DTENFOLD_BUILD_EXAMPLES=OFF
fi
cmake --build "$build" --target tenfold_bench_rows
out=$build/bench-results
mkdir -p "$out"
uptime
TENFOLD_NUM_THREADS=1 "$build/bench/tenfold_bench_rows" --benchmark_min_time=0.2 \
  --benchmark_repetitions="${BENCH_REPS:-10}" --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/rows.json" --benchmark_out_format=json >/dev/null
uptime
python3 "$root/bench/rows_report.py" "$out/rows.json"
