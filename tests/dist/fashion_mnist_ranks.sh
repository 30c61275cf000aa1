#!/usr/bin/env bash
# fashion_mnist_ranks.sh EXE MPIEXEC STEPS RANKS...: the example's data-parallel training against one
# process. Trains STEPS steps (global batch 64) in one process, then under MPIEXEC with each count of
# RANKS, logging every step's loss (--log-steps), and checks that
#   - the first 2 steps' losses match within 1e-5 relative: summation-order noise is ~2e-7 there, while
#     per-rank batch-norm statistics (unsynchronised) or another rank's dropout rows change step 0's loss
#     and a gradient not summed over the ranks step 1's (Adam's first step moves every weight by lr times
#     its gradient's sign), by 1e-3 and more;
#   - every step's loss matches within 5e-2 relative: Adam amplifies the noise from its second step on (it
#     turns the few gradient elements near zero, ~1e-8, into steps of up to lr whose sign is noise), and
#     the runs drift apart by up to a few 1e-3 after ~5-10 steps. (Step 2 was checked at 1e-5 too until
#     the weight gradients' summation order changed: with the default seed on 2 ranks it then differed by
#     3.9e-4, on 1 of 10 seed and rank combinations tried, the others within 2.2e-7.)
#   - rank 0 alone printed the summary line and wrote the files.
set -euo pipefail
exe=$1 mpiexec=$2 steps=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--epochs 1 --steps "$steps")

"$exe" "${args[@]}" --out "$work/one" --log-steps "$work/one.csv" >"$work/one.log"
tail -n 1 "$work/one.log"
status=0
for ranks in "$@"; do
  "$mpiexec" -n "$ranks" "$exe" "${args[@]}" --out "$work/r$ranks" --log-steps "$work/r$ranks.csv" >"$work/r$ranks.log" 2>&1 ||
    { cat "$work/r$ranks.log"; echo "FAILED: $ranks ranks exited with an error"; exit 1; }
  summaries=$(grep -c '^final test accuracy' "$work/r$ranks.log" || true)
  printf '%d ranks: %s\n' "$ranks" "$(grep '^final test accuracy' "$work/r$ranks.log" | head -n 1)"
  if [[ $summaries != 1 ]] || [[ ! -s $work/r$ranks/weights.safetensors ]] || [[ ! -s $work/r$ranks/curves.png ]]; then
    cat "$work/r$ranks.log"
    echo "FAILED: $ranks ranks: expected one summary line (got $summaries) and the files from rank 0"
    status=1
  fi
  paste -d, "$work/one.csv" "$work/r$ranks.csv" | awk -F, -v ranks="$ranks" -v steps="$steps" '
    NR == 1 { next }
    { d = $3 - $6; if (d < 0) d = -d; r = d / $3; n++
      if ($2 < 2 && r > early) early = r
      if (r > worst) { worst = r; at = $2 } }
    END {
      printf "%d ranks: %d steps compared; first 2 steps: max relative difference %.2e (limit 1e-5); all: %.2e at step %d (limit 5e-2)\n", ranks, n, early, worst, at
      exit !(n == steps && early <= 1e-5 && worst <= 5e-2) }' || { echo "FAILED: $ranks ranks: the losses differ"; status=1; }
done
exit $status
