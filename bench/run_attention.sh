#!/usr/bin/env bash
# Builds and runs the attention benchmark (bench/bench_attention.cpp) with 1 and 2 threads and prints
# Markdown tables: GFLOP/s of each implementation, % of the FMA peak measured in the same run, and the
# tiled kernel's speed-up over the materialised formula in tenfold and on OpenBLAS; then the backward
# pass, flash-style against the formula's.
#
#   bench/run_attention.sh       # BUILD_DIR (default build-bench), BENCH_REPS (default 3), BENCH_FILTER
#
# tenfold's pool reads TENFOLD_NUM_THREADS once per process, so the binary runs once per thread count;
# OpenBLAS gets the same count. Repetitions are interleaved at random and the report keeps each
# benchmark's best, so that bursts of load from other users of the machine fall on every implementation.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_DIR:-$build/bench-results}
reps=${BENCH_REPS:-3}
filter=${BENCH_FILTER:-.}

"$root/scripts/install_deps.sh" --if-missing all # the bench group (peers, Google Benchmark) too
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON \
    -DTENFOLD_BUILD_TESTS=OFF -DTENFOLD_BUILD_EXAMPLES=OFF
fi
cmake --build "$build" --target tenfold_bench_attention -j2
source "$root/bench/openblas_core.sh" && openblas_core "$build/bench/tenfold_bench_attention"
mkdir -p "$out"

loads=()
if [[ -z "${REPORT_ONLY:-}" ]]; then # REPORT_ONLY=1: print the table of the last run's JSON again
  for threads in 1 2; do
    loads+=("$(uptime)")
    TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_attention" --benchmark_repetitions="$reps" \
      --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 --benchmark_filter="$filter" \
      --benchmark_out_format=json --benchmark_out="$out/attention_t$threads.json" >/dev/null
  done
fi
loads+=("$(uptime)")

python3 - "$out/attention_t1.json" "$out/attention_t2.json" "$(git -C "$root" rev-parse --short HEAD)" "${loads[@]}" <<'PY'
import json, re, sys
files, commit, loads = sys.argv[1:3], sys.argv[3], sys.argv[4:]
print(f"commit {commit}; load (uptime) before, between and after the runs:")
for l in loads:
    print("    " + l.strip())
for threads, path in zip((1, 2), files):
    best = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = re.sub(r"/real_time$", "", b.get("run_name", b["name"]))
        best[name] = max(best.get(name, 0.0), b["flops"])
    peak = best.get("attention/peak/fma", float("nan"))
    cases = [m.group(1) for m in (re.match(r"attention/tiled/(.*)", n) for n in best) if m]
    def order(c):
        bh, s, d = (int(x) for x in re.match(r"bh(\d+)_s(\d+)_d(\d+)", c).groups())
        return (s, d, bh, c.endswith("causal"))
    cases.sort(key=order)
    impls = ["tiled", "formula", "openblas", "naive"]
    print(f"\n{threads} thread(s), FMA peak {peak / 1e9:.0f} GFLOP/s (f32)\n")
    print("| case (B·H, S, D) | " + " | ".join(f"{i} GFLOP/s" for i in impls) + " | tiled % of peak | tiled / formula | tiled / openblas |")
    print("|---" * (len(impls) + 4) + "|")
    for c in cases:
        r = {i: best.get(f"attention/{i}/{c}") for i in impls}
        cells = [f"{r[i] / 1e9:.1f}" if r[i] else "-" for i in impls]
        t = r["tiled"]
        ratio = lambda x: f"{t / x:.2f}x" if x else "-"
        print(f"| {c} | " + " | ".join(cells) + f" | {100 * t / peak:.0f}% | {ratio(r['formula'])} | {ratio(r['openblas'])} |")
    print(f"\nbackward, {threads} thread(s): GFLOP/s counting 10·B·H·S²·D (half for causal); time ratio formula / flash\n")
    print("| case (B·H, S, D) | flash GFLOP/s | formula GFLOP/s | flash % of peak | flash speed-up |")
    print("|---|---|---|---|---|")
    for c in cases:
        f, m = best.get(f"attention/backward_flash/{c}"), best.get(f"attention/backward_formula/{c}")
        if f:
            formula, speedup = (f"{m / 1e9:.3f}", f"{f / m:.0f}x") if m else ("-", "-")
            print(f"| {c} | {f / 1e9:.1f} | {formula} | {100 * f / peak:.0f}% | {speedup} |")
PY
