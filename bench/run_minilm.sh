#!/usr/bin/env bash
# all-MiniLM-L6-v2 on this CPU: tenfold (bench/bench_minilm.cpp), PyTorch and ONNX Runtime
# (bench/minilm_peers.py) one after the other in one invocation, with the same threads, then a
# Markdown table of median milliseconds and tenfold's speed-up over each (peer ms / tenfold ms).
#   bench/run_minilm.sh            THREADS (default 2), BUILD_DIR (default build-bench), PYTHON (python3)
# Needs the model (scripts/fetch_minilm.sh), the bench group (scripts/install_deps.sh bench) and, in
# PYTHON, torch, transformers, onnxruntime, onnx and onnxscript (pip). Run it on an idle machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
python=${PYTHON:-python3}
threads=${THREADS:-2}
"$root/scripts/fetch_minilm.sh" >&2
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON >&2
fi
ninja -C "$build" tenfold_bench_minilm >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $threads threads" | tee -a "$out" >&2
TENFOLD_NUM_THREADS=$threads "$build/bench/tenfold_bench_minilm" | tee -a "$out" >&2
# Each peer in a process of its own, so that each peak resident memory is that peer's alone.
for peer in pytorch onnxruntime; do
  OMP_NUM_THREADS=$threads "$python" "$root/bench/minilm_peers.py" --threads "$threads" --peer $peer 2>/dev/null | tee -a "$out" >&2
done
awk '
  /^CPU:/ { cpu = $0 }
  $1 ~ /^(tenfold|pytorch|onnxruntime)$/ && $2 ~ /^B=/ { ms[$1, $2 " " $3] = $5; sizes[$2 " " $3] = 1 }
  $1 ~ /^(tenfold|pytorch|onnxruntime)$/ && $2 == "peak" { rss[$1] = $4; loaded[$1] = $10 }
  END {
    print cpu "\n"
    print "| batch x tokens | tenfold ms | PyTorch ms | ONNX Runtime ms | vs PyTorch | vs ONNX Runtime |"
    print "|---|---|---|---|---|---|"
    n = split("B=1 S=16|B=1 S=128|B=32 S=128", order, "|")
    for (i = 1; i <= n; ++i) {
      k = order[i]; t = ms["tenfold", k]; p = ms["pytorch", k]; o = ms["onnxruntime", k]
      label = k; gsub(/B=/, "", label); gsub(/ S=/, " x ", label)
      printf "| %s | %.2f | %.2f | %.2f | %.2fx | %.2fx |\n", label, t, p, o, (t > 0 ? p / t : 0), (t > 0 ? o / t : 0)
    }
    print "\n| peak resident memory (MiB) | tenfold | PyTorch | ONNX Runtime |"
    print "|---|---|---|---|"
    printf "| after loading the model | %.0f | %.0f | %.0f |\n", loaded["tenfold"] / 1024, loaded["pytorch"] / 1024, loaded["onnxruntime"] / 1024
    printf "| after all the runs | %.0f | %.0f | %.0f |\n", rss["tenfold"] / 1024, rss["pytorch"] / 1024, rss["onnxruntime"] / 1024
  }' "$out"
