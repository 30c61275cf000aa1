#!/usr/bin/env bash
# A perceptron's gradient step (784 -> 256 -> 10, batch 128; bench/bench_mlp_step.cpp) in tenfold with and
# without save_forward, and in PyTorch (bench/mlp_step_torch.py), one after the other on this machine;
# prints a Markdown table of the median step times (wall) and PyTorch's time over each.
#   bench/run_mlp_step.sh            BUILD_DIR (default build-bench), PYTHON (default python3), THREADS (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
python=${PYTHON:-python3}
threads=${THREADS:-2}
if [[ ! -x $build/bench/tenfold_bench_mlp_step ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON >&2
  cmake --build "$build" --target tenfold_bench_mlp_step >&2
fi
tenfold=$(TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_mlp_step" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null | grep '_median')
torch_us=$("$python" "$root/bench/mlp_step_torch.py" --threads "$threads" | awk '{print $2}')
echo "$(lscpu | sed -n 's/^Model name: *//p'), $threads threads, $(date -u '+%Y-%m-%d %H:%M') UTC, main $(git -C "$root" rev-parse --short HEAD)"
echo
echo "| step | median wall us | PyTorch / this |"
echo "|---|---|---|"
while IFS=, read -r name _ real _; do
  name=${name//\"/}
  us=$(awk -v t="$real" 'BEGIN { printf "%.0f", t }')
  echo "| tenfold ${name%_median} | $us | $(awk -v a="$torch_us" -v b="$real" 'BEGIN { printf "%.2f", a / b }') |"
done <<< "$tenfold"
echo "| PyTorch $("$python" -c 'import torch; print(torch.__version__)') | $(printf '%.0f' "$torch_us") | 1.00 |"
