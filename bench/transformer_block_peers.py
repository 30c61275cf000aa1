#!/usr/bin/env python3
"""examples/transformer_block in PyTorch eager on the CPU, on tenfold's weights and input.

Reads DIR/block.safetensors and DIR/io.safetensors (written by tenfold_bench_transformer_block), checks
that PyTorch's output matches tenfold's (largest absolute difference printed; it must stay below 1e-4),
then prints the median and minimum milliseconds of REPS forward passes after warm-up, with THREADS
intra-op threads, under inference_mode. The block: pre-norm, fused QKV projection, 4 heads through
scaled_dot_product_attention (no mask), exact (erf) GELU MLP, residuals; layer_norm eps 1e-5.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file


def forward(p, x, heads):
    S, D = x.shape
    h = F.layer_norm(x, (D,), p["ln1.weight"], p["ln1.bias"], eps=1e-5)
    qkv = F.linear(h, p["qkv.weight"], p["qkv.bias"])
    q, k, v = (t.reshape(S, heads, D // heads).transpose(0, 1) for t in qkv.split(D, dim=-1))
    a = F.scaled_dot_product_attention(q, k, v).transpose(0, 1).reshape(S, D)
    x1 = x + F.linear(a, p["out.weight"], p["out.bias"])
    h2 = F.layer_norm(x1, (D,), p["ln2.weight"], p["ln2.bias"], eps=1e-5)
    return x1 + F.linear(F.gelu(F.linear(h2, p["fc1.weight"], p["fc1.bias"])), p["fc2.weight"], p["fc2.bias"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    p = load_file(f"{a.dir}/block.safetensors")
    io = load_file(f"{a.dir}/io.safetensors")
    with torch.inference_mode():
        y = forward(p, io["x"], 4)
        diff = (y - io["y"]).abs().max().item()
        print(f"pytorch     largest |y - tenfold's y| = {diff:.3g}")
        if not diff < 1e-4:
            print("pytorch     outputs differ: not the same block", file=sys.stderr)
            return 1
        ms = []
        for r in range(-5, a.reps):
            t0 = time.perf_counter()
            forward(p, io["x"], 4)
            if r >= 0:
                ms.append((time.perf_counter() - t0) * 1e3)
    print(f"pytorch     median {statistics.median(ms):8.3f} ms  min {min(ms):8.3f} ms  ({a.reps} passes, torch {torch.__version__}, {a.threads} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
