#!/usr/bin/env bash
# Issue 16's decoder on this CPU: examples/decoder (tenfold) and bench/decoder_torch.py (the same model,
# data, hyperparameters and iterations in PyTorch), one after the other in one invocation, then a
# Markdown table of the validation loss and the training time of each, and tenfold's speed-up
# (PyTorch s / tenfold s). Both use 2 threads. ROUNDS=n runs the pair n times, alternated (a shared
# guest's speed drifts by several percent within minutes): a row per run, and the speed-up of the
# medians.
#   bench/run_decoder.sh [ITERS, default 2000]      BUILD_DIR (default build), PYTHON (python3 with torch), ROUNDS (1)
# Needs fortunes (scripts/install_deps.sh) and torch in PYTHON. Run it on an idle machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
python=${PYTHON:-python3}
iters=${1:-2000}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_EXAMPLES=ON >&2
fi
ninja -C "$build" examples/decoder >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rounds=${ROUNDS:-1}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; 2 threads; $iters iterations; $rounds round(s)"
summary() { tail -n 1 "$1" | sed -n 's/^final validation loss \([0-9.]*\) after [0-9]* iterations in \([0-9]*\) s$/\1 \2/p'; }
ts_all=() ps_all=()
for ((r = 1; r <= rounds; ++r)); do
  TENFOLD_NUM_THREADS=2 "$build/examples/decoder" --iters "$iters" --out "$out/tenfold" | tee "$out/tenfold.log" >&2
  "$python" "$root/bench/decoder_torch.py" --iters "$iters" --threads 2 | tee "$out/torch.log" >&2
  read -r tl ts <<<"$(summary "$out/tenfold.log")"
  read -r pl ps <<<"$(summary "$out/torch.log")"
  ts_all+=("$ts") ps_all+=("$ps")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "| | validation loss | training s |"
echo "|---|---|---|"
echo "| tenfold | $tl | ${ts_all[*]} |"
echo "| PyTorch $("$python" -c 'import torch; print(torch.__version__)') | $pl | ${ps_all[*]} |"
ts=$(median "${ts_all[@]}") ps=$(median "${ps_all[@]}")
awk -v a="$tl" -v b="$pl" -v s="$ts" -v t="$ps" 'BEGIN { printf "\nloss difference (tenfold - PyTorch): %+.4f; tenfold speed-up: %.2fx (median PyTorch s / median tenfold s)\n", a - b, t / s }'
