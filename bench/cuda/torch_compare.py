#!/usr/bin/env python3
"""PyTorch eager on the same shapes as bench_rows.cu, bench_gemm.cu and bench_attention.cu, for the ratios in bench/RESULTS.md.

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
    # scaled_dot_product_attention, f32 (PyTorch picks its kernel: the memory-efficient one for f32),
    # forward, and backward as the gradients of sum(out * r) w.r.t. q, k, v.
    for b, h, s_, d, causal in [(12, 4, 64, 32, True), (8, 12, 128, 32, False), (4, 8, 512, 64, False), (4, 8, 512, 64, True),
                                (2, 8, 2048, 64, True)]:
        q, k, v, r = (torch.randn(b, h, s_, d, device=dev) for _ in range(4))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        fwd = median_ms(lambda: sdpa(q, k, v, is_causal=causal))
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        out = sdpa(qg, kg, vg, is_causal=causal)
        bwd = median_ms(lambda: torch.autograd.grad(out, (qg, kg, vg), r, retain_graph=True), reps=20)
        flops = 4.0 * b * h * s_ * s_ * d * (0.5 if causal else 1.0)
        print(f"[B {b} H {h} S {s_:5d} D {d:3d}{' causal' if causal else '       '}] sdpa forward {fwd:.3f} ms "
              f"({flops / fwd / 1e9:.2f} TFLOP/s) | backward {bwd:.3f} ms ({2.5 * flops / bwd / 1e9:.2f} TFLOP/s)")
    for n in (4096, 8192):
        a = torch.rand(n, n, device=dev, dtype=torch.bfloat16)
        bb = torch.rand(n, n, device=dev, dtype=torch.bfloat16)
        t = median_ms(lambda: torch.matmul(a, bb), reps=20)
        print(f"bf16 GEMM {n}^3: {2 * n**3 / t / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
