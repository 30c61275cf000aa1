#!/usr/bin/env bash
# Runs the CUDA tests, compute-sanitizer and the GPU benchmarks on a machine with a GPU, from an
# already built tree (built here or elsewhere with -DTENFOLD_CUDA=ON; see notes/cuda_status.md):
#   scripts/gpu_check.sh [BUILD_DIR] [LOG_DIR]
# Logs go to LOG_DIR (default: $OUT when set, else /tmp/tenfold-gpu); the summary is printed last.
set -u
build=${1:-build-cuda}
logs=${2:-${OUT:-/tmp/tenfold-gpu}}
work=$(mktemp -d)
mkdir -p "$logs"
tests=(cuda_host_test cuda_ops_test cuda_rows_test cuda_rows_vector_test cuda_composites_test cuda_same_reductions_test
       cuda_gemm_test cuda_model_test cuda_rng_test cuda_pool_test cuda_grad_test cuda_conv_test cuda_attention_test cuda_decoder_test
       cuda_nccl_test)
device_tests=("${tests[@]:1}")
summary=()

# cuBLAS (the GEMM bench's peer) may live in the toolkit or in PyTorch's wheels.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         "$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null)"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$work/bench_0_device.log"

for t in "${tests[@]}"; do
  [ -x "$build/tests/cuda/$t" ] || { summary+=("test $t: NOT BUILT"); continue; }
  if timeout "${TEST_TIMEOUT:-300}" "$build/tests/cuda/$t" --reporter compact >"$work/test_$t.log" 2>&1; then r=passed; else r=FAILED; fi
  grep -q "skipped: no CUDA device" "$work/test_$t.log" && r="$r (but SKIPPED: no device seen)"
  summary+=("test $t: $r ($(tail -1 "$work/test_$t.log"))")
done

for b in tenfold_cuda_bench_rows tenfold_cuda_bench_gemm tenfold_cuda_bench_attention; do
  [ -x "$build/bench/cuda/$b" ] && timeout "${TEST_TIMEOUT:-300}" "$build/bench/cuda/$b" 2>&1 | tee "$work/bench_$b.log"
done
PYTHONUNBUFFERED=1 python3 bench/cuda/torch_compare.py 2>&1 | tee "$work/bench_torch.log"

# Issue 18's decode: examples/generate --device cuda (the step as a CUDA graph) and on the CPU, greedy,
# the tokens that fill the 64-position context after the prompt (5 runs each; then one long run, whose
# window shifts every 32 tokens with a prefill on the CPU), and PyTorch eager with a static cache on the
# same GPU (bench/generate_torch.py --device cuda, 20 runs). Needs CHECKPOINT=examples/decoder's file.
if [ -x "$build/examples/generate" ] && [ -n "${CHECKPOINT:-}" ]; then
  prompt="The meaning of life is "
  ids=$(python3 bench/generate_torch.py "$CHECKPOINT" 0 1 1 --ids "$prompt")
  tokens=$((64 - $(tr ',' '\n' <<<"$ids" | wc -l)))
  for dev in cuda cpu; do
    for i in 1 2 3 4 5 long; do
      n=$tokens; [ $i = long ] && n=2000
      echo "== generate --device $dev --tokens $n"
      timeout 120 "$build/examples/generate" --checkpoint "$CHECKPOINT" --prompt "$prompt" --tokens $n --temperature 0 \
        --device $dev --threads 1 | tail -3
    done
  done
  echo "== PyTorch eager, static cache, --device cuda"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/generate_torch.py "$CHECKPOINT" "$ids" $tokens 20 --device cuda
fi 2>&1 | tee "$work/bench_generate.log"

# compute-sanitizer: every device test under memcheck and racecheck, all at once (correctness only, so
# sharing the GPU does not matter); each run is capped so the whole check fits one call.
cap=${SANITIZER_TIMEOUT:-300}
for tool in memcheck racecheck; do
  for t in "${device_tests[@]}"; do
    [ -x "$build/tests/cuda/$t" ] || continue
    # libnccl probes for kernel images it does not ship (cudaFuncGetAttributes -> error 209, handled
    # inside NCCL): API errors are not reported for that test.
    api=(); [ "$t" = cuda_nccl_test ] && api=(--report-api-errors no)
    timeout "$cap" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 1 "$build/tests/cuda/$t" --reporter compact \
      >"$work/san_${tool}_$t.log" 2>&1 &
  done
done
wait
for tool in memcheck racecheck; do
  for t in "${device_tests[@]}"; do
    f="$work/san_${tool}_$t.log"
    summary+=("$tool $t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1) | $(tail -1 "$f")")
  done
done
# Three files of logs (the device tool returns at most 8 files).
for kind in test bench san; do
  for f in "$work/${kind}"_*.log; do printf '==== %s\n' "$(basename "$f")"; cat "$f"; done >"$logs/$kind.txt"
done
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
