#!/usr/bin/env bash
# Builds and runs the convolution benchmark (bench/bench_conv.cpp) with 1 and 2 threads and prints a
# Markdown table from the JSON (bench/conv_report.py).
#
#   bench/run_conv.sh            # BUILD_DIR (default build-bench), BENCH_REPS (default 5), BENCH_FILTER,
#                                # PYTHON (a python3 with torch: then PyTorch's conv2d on the same layers too)
#
# As bench/run_gemm.sh: one process per thread count (the pool reads TENFOLD_NUM_THREADS once), OpenBLAS
# at the same count, repetitions interleaved at random and each benchmark's best kept.
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
cmake --build "$build" --target tenfold_bench_conv
source "$root/bench/openblas_core.sh" && openblas_core "$build/bench/tenfold_bench_conv"
mkdir -p "$out"

loads=()
for threads in 1 2; do
  loads+=("$(uptime)")
  TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_conv" --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 --benchmark_filter="$filter" \
    --benchmark_out_format=json --benchmark_out="$out/conv_t$threads.json" >/dev/null
done
loads+=("$(uptime)")
# PyTorch (oneDNN) on the same layers where PYTHON has torch, right after (same thread counts).
torch_args=()
if "${PYTHON:-python3}" -c "import torch" 2>/dev/null; then
  for threads in 1 2; do
    "${PYTHON:-python3}" "$root/bench/conv_torch.py" --threads "$threads" --reps "$reps" --out "$out/conv_torch_t$threads.json"
  done
  torch_args=(--torch "$out/conv_torch_t1.json" "$out/conv_torch_t2.json")
  loads+=("$(uptime)")
fi
python3 "$root/bench/conv_report.py" "$out/conv_t1.json" "$out/conv_t2.json" "${torch_args[@]}" --load "${loads[@]}" \
  --commit "$(git -C "$root" rev-parse --short HEAD)"
