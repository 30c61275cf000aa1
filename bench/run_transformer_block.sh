#!/usr/bin/env bash
# examples/transformer_block against PyTorch eager on this CPU, same weights and input (tenfold writes
# them, bench/transformer_block_peers.py reads them and checks the outputs agree), with 1 and 2 threads,
# each side run ROUNDS times alternately; prints a Markdown table of the best medians and the ratio.
#   bench/run_transformer_block.sh      BUILD_DIR (default build-bench), PYTHON (python3 with torch and
#                                       safetensors), ROUNDS (default 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
python=${PYTHON:-python3}
rounds=${ROUNDS:-3}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON >&2
fi
ninja -C "$build" tenfold_bench_transformer_block >&2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(uptime | sed 's/.*load/load/')"
for threads in 1 2; do
  for round in $(seq "$rounds"); do
    TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_transformer_block" "$dir" | sed "s/^/$threads /"
    OMP_NUM_THREADS=$threads "$python" "$root/bench/transformer_block_peers.py" "$dir" --threads "$threads" | sed "s/^/$threads /"
  done
done | tee "$dir/log" >&2
echo "after: $(uptime | sed 's/.*load/load/')"
awk '
  $2 ~ /^(tenfold|pytorch)$/ && $3 == "median" { k = $1 SUBSEP $2; if (!(k in best) || $4 < best[k]) best[k] = $4 }
  $2 == "pytorch" && $3 == "largest" { diff = $NF }
  END {
    print "\n| threads | tenfold ms | PyTorch ms | tenfold speed / PyTorch |"
    print "|---|--:|--:|--:|"
    for (t = 1; t <= 2; ++t) printf "| %d | %.3f | %.3f | %.2fx |\n", t, best[t, "tenfold"], best[t, "pytorch"], best[t, "pytorch"] / best[t, "tenfold"]
    print "\nlargest |y_pytorch - y_tenfold| = " diff
  }' "$dir/log"
