#!/usr/bin/env bash
# Runs on a machine with a GPU: the CNN's training there against PyTorch's in the same call, the first
# 50 steps on the GPU against the CPU (same binary, same seed), and ncu's per-kernel times of two steps.
# fashion_mnist is built elsewhere with CUDA (notes/cuda_status.md; MPI off, e.g. -DTENFOLD_MARCH=x86-64-v3
# for another host CPU) and the Fashion-MNIST files copied beside it:
#   scripts/gpu_train_check.sh FASHION_MNIST_BINARY DATA_DIR [EPOCHS, default 8]   (from the repository root)
# Writes ncu.csv.gz and train.txt to $OUT (or /tmp/tenfold-gpu-train); summarise the profile with
# bench/cuda/ncu_top.py. About 60 s on an H200.
set -u
[ $# -ge 2 ] || { echo "usage: scripts/gpu_train_check.sh FASHION_MNIST_BINARY DATA_DIR [EPOCHS]" >&2; exit 2; }
bin=$1 data=$2 epochs=${3:-8}
out=${OUT:-/tmp/tenfold-gpu-train}
mkdir -p "$out"
work=$(mktemp -d)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv
  timeout 300 "$bin" --device cuda --data "$data" --epochs "$epochs" --out "$work/gpu" 2>&1 | grep -E "^(epoch|final)"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/fashion_mnist_torch.py --device cuda --channels-last --epochs 1 --data "$data" 2>&1 |
    grep -E "step time|final"
  timeout 60 "$bin" --device cuda --data "$data" --epochs 1 --steps 50 --log-steps "$work/gpu.csv" --out "$work/g50" >/dev/null 2>&1
  timeout 120 "$bin" --data "$data" --epochs 1 --steps 50 --log-steps "$work/cpu.csv" --out "$work/c50" >/dev/null 2>&1
  python3 - "$work/gpu.csv" "$work/cpu.csv" <<'PY'
import csv, sys
g, c = ([float(r[2]) for r in csv.reader(open(f)) if r[0] != "epoch"] for f in sys.argv[1:3])
rel = [abs(a - b) / abs(b) for a, b in zip(g, c)]
print(f"GPU against CPU, {len(rel)} steps: losses of steps 1-10 within {max(rel[:10]):.2e}, all within {max(rel):.2e}")
PY
} | tee "$out/train.txt"
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-skip 600 \
  --launch-count 230 "$bin" --device cuda --data "$data" --epochs 1 --steps 12 --out "$work/ncu" >"$out/ncu.csv" 2>"$work/ncu.err" ||
  { echo "ncu failed:"; tail -5 "$work/ncu.err"; }
gzip -f -9 "$out/ncu.csv"
python3 bench/cuda/ncu_top.py "$out/ncu.csv.gz" --top 20
