#!/usr/bin/env bash
# Issue 16's decoding benchmark on this CPU: examples/decoder's checkpoint decoded greedily with a KV cache
# by tenfold (bench/bench_generate.cpp: examples/decoder/generator.hpp), by PyTorch eager with a static
# KV cache (bench/generate_torch.py, 2 threads) and by a plain single-threaded C loop (bench/generate_c.c),
# the same protocol each: RUNS times, the prompt prefilled, then the tokens that fill the context (64), one
# decode step each. Checks that the three produce the same tokens, then prints a Markdown table of tokens/s
# and tenfold's ratios.
#   bench/run_generate.sh [CHECKPOINT, default decoder_out/checkpoint.safetensors]
#   BUILD_DIR (default build-bench), PYTHON (python3 with torch and numpy), RUNS (default 100)
# The checkpoint comes from `scripts/run_example.sh decoder`. Run it on an idle machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
python=${PYTHON:-python3}
runs=${RUNS:-100}
checkpoint=${1:-decoder_out/checkpoint.safetensors}
prompt="The meaning of life is "
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENFOLD_BUILD_BENCH=ON >&2
fi
ninja -C "$build" bench/tenfold_bench_generate >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O3 -march=native -o "$out/generate_c" "$root/bench/generate_c.c" -lm
"$python" "$root/bench/generate_torch.py" "$checkpoint" 0 1 1 --export "$out/weights.f32"
ids=$("$python" "$root/bench/generate_torch.py" "$checkpoint" 0 1 1 --ids "$prompt")
tokens=$((64 - $(tr ',' '\n' <<<"$ids" | wc -l)))
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; prompt \"$prompt\", $tokens tokens, $runs runs"
TENFOLD_NUM_THREADS=1 "$build/bench/tenfold_bench_generate" "$checkpoint" "$ids" "$tokens" "$runs" > "$out/tenfold1.log"
TENFOLD_NUM_THREADS=2 "$build/bench/tenfold_bench_generate" "$checkpoint" "$ids" "$tokens" "$runs" > "$out/tenfold2.log"
"$out/generate_c" "$out/weights.f32" "$ids" "$tokens" "$runs" > "$out/c.log"
"$python" "$root/bench/generate_torch.py" "$checkpoint" "$ids" "$tokens" "$runs" --threads 2 > "$out/torch.log"
same=yes
for f in tenfold2 c torch; do cmp -s <(head -n 1 "$out/tenfold1.log") <(head -n 1 "$out/$f.log") || same=no; done
rate() { sed -n "s/^$2: .*(\([0-9]*\) tokens\/s)$/\1/p" "$1"; }
echo
echo "| | decode tokens/s | prefill tokens/s |"
echo "|---|---|---|"
echo "| tenfold, 1 thread | $(rate "$out/tenfold1.log" decode) | $(rate "$out/tenfold1.log" prefill) |"
echo "| tenfold, 2 threads | $(rate "$out/tenfold2.log" decode) | $(rate "$out/tenfold2.log" prefill) |"
echo "| PyTorch $("$python" -c 'import torch; print(torch.__version__)') eager, static cache, 2 threads | $(rate "$out/torch.log" decode) | $(rate "$out/torch.log" prefill) |"
echo "| plain C loop, 1 thread | $(rate "$out/c.log" decode) | $(rate "$out/c.log" prefill) |"
best=$(printf '%s\n' "$(rate "$out/tenfold1.log" decode)" "$(rate "$out/tenfold2.log" decode)" | sort -n | tail -n 1)
awk -v t="$best" -v p="$(rate "$out/torch.log" decode)" -v c="$(rate "$out/c.log" decode)" -v s="$same" \
  'BEGIN { printf "\nthe same tokens from all three: %s; tenfold (best) / PyTorch: %.2fx; tenfold / C loop: %.2fx\n", s, t / p, t / c }'
