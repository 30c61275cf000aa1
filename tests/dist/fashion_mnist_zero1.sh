#!/usr/bin/env bash
# fashion_mnist_zero1.sh EXE MPIEXEC STEPS: the example's ZeRO-1 training (--zero1: Adam's moments sharded
# over the ranks, dist/sharded_adam.hpp) against its allreduce training, with the same ranks. Checks that
#   - one process, and 2 ranks: every step's loss and the weights file are the same bit for bit (a sum of
#     two floats does not depend on their order, so the reduce-scatter's sums are the allreduce's, and the
#     update is elementwise: each element is computed as in the whole update);
#   - 3 ranks: every step's loss within 1e-6 relative (OpenMPI's reduce-scatter and allreduce may add
#     three values in different orders; with Debian's OpenMPI 4.1 they are the same bits here too);
#   - the first line says how much of the moments each rank holds.
set -euo pipefail
exe=$1 mpiexec=$2 steps=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--epochs 1 --steps "$steps")
run() { # NAME RANKS [ARGS...]
  local name=$1 ranks=$2
  shift 2
  local launch=()
  [[ $ranks == 1 ]] || launch=("$mpiexec" -n "$ranks")
  "${launch[@]}" "$exe" "${args[@]}" "$@" --out "$work/$name" --log-steps "$work/$name.csv" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; echo "FAILED: $name exited with an error"; exit 1; }
}
status=0
for ranks in 1 2 3; do
  run "all$ranks" "$ranks"
  run "zero$ranks" "$ranks" --zero1
  head -n 1 "$work/zero$ranks.log"
  if ! head -n 1 "$work/zero$ranks.log" | grep -q "moments sharded (ZeRO-1: "; then
    echo "FAILED: $ranks ranks: the first line does not name the shards"; status=1
  fi
  if [[ $ranks -le 2 ]]; then
    if cmp -s "$work/all$ranks.csv" "$work/zero$ranks.csv" && cmp -s "$work/all$ranks/weights.safetensors" "$work/zero$ranks/weights.safetensors"; then
      echo "$ranks ranks: $steps losses and the weights the same bit for bit"
    else
      diff "$work/all$ranks.csv" "$work/zero$ranks.csv" | head -n 6 || true
      echo "FAILED: $ranks ranks: ZeRO-1 and the allreduce differ"; status=1
    fi
  else
    paste -d, "$work/all$ranks.csv" "$work/zero$ranks.csv" | awk -F, -v ranks="$ranks" -v steps="$steps" '
      NR == 1 { next }
      { d = $3 - $6; if (d < 0) d = -d; r = d / $3; n++; if (r > worst) worst = r }
      END { printf "%d ranks: %d losses compared, max relative difference %.2e (limit 1e-6)\n", ranks, n, worst
            exit !(n == steps && worst <= 1e-6) }' || { echo "FAILED: $ranks ranks: the losses differ"; status=1; }
  fi
done
exit $status
