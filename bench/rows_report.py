#!/usr/bin/env python3
"""Markdown table from bench_rows' JSON: per op and shape, tenfold's CPU time and its speedup over each
peer (peer time / tenfold time), and the share of the copy bound it reaches (copy time / tenfold time)."""
import json
import sys
from collections import defaultdict

runs = json.load(open(sys.argv[1]))["benchmarks"]
t = defaultdict(dict)
for b in runs:
    if b.get("aggregate_name") != "median":
        continue
    op, impl, shape = b["run_name"].split("/")
    t[(op, shape)][impl] = b["cpu_time"]  # microseconds
ops = ["softmax", "layer_norm", "rms_norm"]
keys = sorted(t, key=lambda k: (ops.index(k[0]) if k[0] in ops else len(ops), k[1] != "4096x1024", k[1]))
print("| op | shape | tenfold (ms) | vs materialised | vs Eigen | vs xtensor | % of copy bound |")
print("|---|---|---|---|---|---|---|")
for op, shape in keys:
    v = t[(op, shape)]
    f = v["tenfold"]
    print(f"| {op} | {shape} | {f / 1000:.2f} | {v['materialized'] / f:.2f}x | {v['eigen'] / f:.1f}x | "
          f"{v['xtensor'] / f:.1f}x | {100 * v['copy'] / f:.0f}% |")
