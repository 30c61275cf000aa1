#!/usr/bin/env python3
"""bench_conv's layers through PyTorch (torch.nn.functional.conv2d: oneDNN on x86 CPUs), for run_conv.sh.

The same cases as bench/bench_conv.cpp (3x3, padding 1, stride 1, f32; 1->32 and 32->64 at 28x28,
32->64 at 14x14; batch 1 and 32), NCHW tensors and channels_last ones for the NHWC rows, with no bias.
Each case is run for at least --min-time seconds per repetition, --reps repetitions interleaved in a
random order (as Google Benchmark's --benchmark_enable_random_interleaving), after a warm-up, under
torch.inference_mode; the JSON written has bench_conv's layout ("run_name" conv/pytorch/<case>, "flops"
in flop/s per repetition), so bench/conv_report.py reads it beside tenfold's.

  python3 bench/conv_torch.py --threads 2 --out conv_torch_t2.json
"""
import argparse
import json
import random
import time

import torch

LAYERS = [("c1_1to32_28x28", 1, 32, 28), ("c2_32to64_28x28", 32, 64, 28), ("c3_32to64_14x14", 32, 64, 14)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cases = []
    for batch in (1, 32):
        for nhwc in (False, True):
            for name, c, oc, hw in LAYERS:
                x = torch.rand(batch, c, hw, hw) * 2 - 1
                w = torch.rand(oc, c, 3, 3) * 2 - 1
                if nhwc:
                    x = x.contiguous(memory_format=torch.channels_last)
                    w = w.contiguous(memory_format=torch.channels_last)
                label = f"conv/pytorch/{name}_{'nhwc' if nhwc else 'nchw'}_b{batch}"
                cases.append((label, x, w, 2.0 * batch * hw * hw * oc * c * 9))
    runs = []
    with torch.inference_mode():
        for _, x, w, _ in cases:  # warm-up: oneDNN picks and caches its kernels on the first calls
            for _ in range(5):
                torch.nn.functional.conv2d(x, w, padding=1)
        order = [i for i in range(len(cases)) for _ in range(args.reps)]
        random.Random(1).shuffle(order)
        for i in order:
            label, x, w, flops = cases[i]
            n, t0 = 0, time.perf_counter()
            while True:
                torch.nn.functional.conv2d(x, w, padding=1)
                n += 1
                t = time.perf_counter() - t0
                if t >= args.min_time:
                    break
            runs.append({"run_name": label, "run_type": "iteration", "flops": flops * n / t})
    with open(args.out, "w") as f:
        json.dump({"context": {"torch": torch.__version__, "threads": args.threads}, "benchmarks": runs}, f)


if __name__ == "__main__":
    main()
