#!/usr/bin/env python3
"""PyTorch eager on the same shapes as bench_rows.cu and bench_gemm.cu, for the ratios in bench/RESULTS.md.

Run on the GPU machine next to the tenfold benchmarks:
    python3 bench/cuda/torch_compare.py
Times are medians of CUDA-event-timed runs after a warm-up, as in bench/cuda/bench_timing.hpp.
"""
import torch


def median_ms(f, reps=50):
    for _ in range(3):
        f()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    for rows, cols in [(4096, 1024), (8192, 4096), (1024, 32768), (65536, 128)]:
        x = torch.randn(rows, cols, device=dev)
        y = torch.randn(rows, cols, device=dev)
        g = torch.rand(cols, device=dev) + 0.5
        b = torch.rand(cols, device=dev) - 0.5
        chain = median_ms(lambda: torch.relu(x * 1.5 + y) - torch.exp(-torch.abs(x)))
        sm = median_ms(lambda: torch.softmax(x, dim=-1))
        ln = median_ms(lambda: torch.nn.functional.layer_norm(x, (cols,), g, b))
        print(f"[{rows:6d} x {cols:6d}] chain {chain:.3f} ms | softmax {sm:.3f} ms | layer_norm {ln:.3f} ms")
    for n in (4096, 8192):
        a = torch.rand(n, n, device=dev, dtype=torch.bfloat16)
        bb = torch.rand(n, n, device=dev, dtype=torch.bfloat16)
        t = median_ms(lambda: torch.matmul(a, bb), reps=20)
        print(f"bf16 GEMM {n}^3: {2 * n**3 / t / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
