#!/usr/bin/env bash
# Data-parallel training throughput (issue 19): the Fashion-MNIST CNN for one epoch with tenfold
# (examples/fashion_mnist: 1 process x 1 thread, 1 process x 2 threads, mpirun 2 ranks x 1 thread, the
# same with --zero1) and
# with PyTorch (bench/fashion_mnist_ddp.py: DistributedDataParallel over gloo, 1 and 2 ranks x 1 thread;
# bench/fashion_mnist_torch.py: 1 process x 2 threads), one after the other in one invocation, then a
# Markdown table: epoch seconds, images/s, the scaling efficiency from 1 to 2 ranks (T1 / (2 T2)),
# tenfold's 2 ranks against PyTorch DDP's, and the machine's ceiling for the scaling: two one-thread
# processes of the whole epoch at once (tenfold_1x1_twice; its images/s count one of them).
#   bench/run_ddp.sh [--steps N]     BUILD_DIR (default build), PYTHON (default python3)
# Needs MPI (the example built with it), torch in PYTHON, Debian's dataset-fashion-mnist. Run it on an
# idle machine: the ranks are pinned to nothing and share the cores with whatever else runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
python=${PYTHON:-python3}
steps=()
if [[ ${1:-} == --steps ]]; then steps=(--steps "${2:?--steps needs a value}"); fi
binary=$build/examples/fashion_mnist
[[ -x $binary ]] || cmake --build "$build" --target fashion_mnist >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# The epoch line's seconds: "epoch 1/1: ... 12.3 s (5200 images/s)".
epoch_seconds() { sed -n 's/^epoch 1\/1: .* \([0-9.]*\) s (.*/\1/p' | tail -n 1; }
run() { # label command...
  local label=$1
  shift
  echo "== $label: $*" >&2
  local s status=0
  # (a failing run must show its output: set -e would end the script here with the log deleted)
  s=$("$@" 2>&1 | tee -a "$out/log" | epoch_seconds) || status=$?
  [[ $status -eq 0 && -n $s ]] || { echo "run_ddp.sh: $label failed (exit $status) or printed no epoch line; its output:" >&2; cat "$out/log" >&2; exit 1; }
  printf '%s %s\n' "$label" "$s" >>"$out/times"
}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(uptime | sed 's/.*load/load/')" >&2
run tenfold_1x1 env TENFOLD_NUM_THREADS=1 "$binary" --epochs 1 "${steps[@]}" --out "$out/t1"
run tenfold_1x2 env TENFOLD_NUM_THREADS=2 "$binary" --epochs 1 "${steps[@]}" --out "$out/t2"
run tenfold_2x1 "${mpirun[@]}" -np 2 -x TENFOLD_NUM_THREADS=1 "$binary" --epochs 1 "${steps[@]}" --out "$out/t3"
# ZeRO-1: Adam's moments sharded (a reduce-scatter per bucket, each rank's share updated, all-gathers)
run tenfold_2x1_zero1 "${mpirun[@]}" -np 2 -x TENFOLD_NUM_THREADS=1 "$binary" --epochs 1 --zero1 "${steps[@]}" --out "$out/t4"
# The machine's own ceiling: two one-thread processes training the whole epoch each, at the same time,
# with no communication; the slower one's epoch. T1 / this is what sharing the cores, the caches and the
# memory bus leaves of perfect scaling, before any collective.
corun() {
  env TENFOLD_NUM_THREADS=1 "$binary" --epochs 1 "${steps[@]}" --out "$out/c1" >"$out/c1.log" 2>&1 &
  local first=$!
  env TENFOLD_NUM_THREADS=1 "$binary" --epochs 1 "${steps[@]}" --out "$out/c2" >"$out/c2.log" 2>&1 || return 1
  wait "$first" || return 1
  local a b
  a=$(epoch_seconds <"$out/c1.log") b=$(epoch_seconds <"$out/c2.log")
  awk -v a="$a" -v b="$b" 'BEGIN { printf "epoch 1/1: two at once %s s (slower of %s and %s)\n", (a > b ? a : b), a, b }'
}
run tenfold_1x1_twice corun
run pytorch_ddp_1x1 "$python" "$root/bench/fashion_mnist_ddp.py" --ranks 1 --threads 1 --epochs 1 "${steps[@]}"
run pytorch_1x2 env OMP_NUM_THREADS=2 "$python" "$root/bench/fashion_mnist_torch.py" --threads 2 --epochs 1 --channels-last "${steps[@]}"
run pytorch_ddp_2x1 "$python" "$root/bench/fashion_mnist_ddp.py" --ranks 2 --threads 1 --epochs 1 "${steps[@]}"
echo "after: $(uptime | sed 's/.*load/load/')" >&2

images=$((${steps[1]:-937} * 64))
awk -v images="$images" -v cpu="$(lscpu | sed -n 's/^Model name: *//p')" '
  { t[$1] = $2 }
  END {
    printf "CPU: %s, %d images per epoch\n\n", cpu, images
    print "| run | epoch s | images/s |"
    print "|---|---|---|"
    n = split("tenfold_1x1 tenfold_1x2 tenfold_2x1 tenfold_2x1_zero1 tenfold_1x1_twice pytorch_ddp_1x1 pytorch_1x2 pytorch_ddp_2x1", order, " ")
    for (i = 1; i <= n; ++i) printf "| %s | %.1f | %.0f |\n", order[i], t[order[i]], images / t[order[i]]
    printf "\nscaling efficiency 1 -> 2 ranks: tenfold %.0f%%, PyTorch DDP %.0f%%\n",
           100 * t["tenfold_1x1"] / (2 * t["tenfold_2x1"]), 100 * t["pytorch_ddp_1x1"] / (2 * t["pytorch_ddp_2x1"])
    printf "tenfold 2 ranks vs PyTorch DDP 2 ranks: %.2fx\n", t["pytorch_ddp_2x1"] / t["tenfold_2x1"]
    printf "the machine'"'"'s ceiling (tenfold_1x1 / tenfold_1x1_twice, two whole epochs at once, no communication): %.0f%%\n",
           100 * t["tenfold_1x1"] / t["tenfold_1x1_twice"]
  }' "$out/times"
