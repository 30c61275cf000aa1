#!/usr/bin/env bash
# Builds the benchmarks (if needed), runs them, and regenerates bench/RESULTS.md from the JSON.
#
#   bench/run.sh                 # everything: peers and op benchmarks, 1 thread and the default pool
#   BENCH_QUICK=1 bench/run.sh   # peers only (skips the op-table benchmarks)
#
# Environment: BUILD_DIR (default build-bench), OUT_DIR (default $BUILD_DIR/bench-results),
# BENCH_REPS (repetitions per benchmark, default 3; the report takes the median),
# BENCH_FILTER (a --benchmark_filter regex for the peers binary).
# tenfold's thread pool reads TENFOLD_NUM_THREADS once per process, so each binary runs twice: with
# TENFOLD_NUM_THREADS=1 (the fair single-thread comparison: Eigen and xtensor run single-threaded) and
# with the default (one thread per hardware thread).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_DIR:-$build/bench-results}
reps=${BENCH_REPS:-3}
filter=${BENCH_FILTER:-.}

# The state of the tree that gets built (others may be editing it while this runs).
mkdir -p "$out"
{
  git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?"
  git -C "$root" status --porcelain -- include 2>/dev/null | wc -l
} >"$out/tree.txt"

"$root/scripts/install_deps.sh" --if-missing all # the bench group (peers, Google Benchmark) too
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON \
    -DTENFOLD_BUILD_TESTS=OFF -DTENFOLD_BUILD_EXAMPLES=OFF
fi
cmake --build "$build" --target tenfold_bench_peers tenfold_bench_ops

rm -f "$out"/*.json
# Repetitions are interleaved at random so that a burst of load from elsewhere spreads over every
# implementation instead of landing on one; the report uses each benchmark's median.
common=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
        --benchmark_out_format=json)

uptime >"$out/load_before.txt"
echo "== peers, TENFOLD_NUM_THREADS=1"
TENFOLD_NUM_THREADS=1 "$build/bench/tenfold_bench_peers" "${common[@]}" --benchmark_filter="$filter" \
  --benchmark_out="$out/peers_t1.json" >/dev/null
echo "== peers, default threads"
env -u TENFOLD_NUM_THREADS "$build/bench/tenfold_bench_peers" "${common[@]}" --benchmark_filter="$filter" \
  --benchmark_out="$out/peers_tN.json" >/dev/null
if [[ -z "${BENCH_QUICK:-}" ]]; then
  echo "== op table, TENFOLD_NUM_THREADS=1"
  TENFOLD_NUM_THREADS=1 "$build/bench/tenfold_bench_ops" "${common[@]}" --benchmark_out="$out/ops_t1.json" >/dev/null
  echo "== op table, default threads"
  env -u TENFOLD_NUM_THREADS "$build/bench/tenfold_bench_ops" "${common[@]}" --benchmark_out="$out/ops_tN.json" >/dev/null
fi
uptime >"$out/load_after.txt"

# The command as typed, with the settings that change what runs.
cmd="bench/run.sh"
for v in BENCH_QUICK BENCH_REPS BENCH_FILTER; do
  if [[ -n "${!v:-}" ]]; then cmd="$v=${!v} $cmd"; fi
done
python3 "$root/bench/report.py" --results "$out" --build "$build" --output "$root/bench/RESULTS.md" --command "$cmd"
echo "wrote $root/bench/RESULTS.md (raw JSON in $out)"
