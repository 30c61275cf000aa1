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
print("| op | shape | tenfold (ms) | vs materialised | vs Eigen | vs xtensor | % of copy bound |")
print("|---|---|---|---|---|---|---|")
for (op, shape), v in t.items():
    f = v["tenfold"]
    print(f"| {op} | {shape} | {f / 1000:.2f} | {v['materialized'] / f:.2f}x | {v['eigen'] / f:.1f}x | "
          f"{v['xtensor'] / f:.1f}x | {100 * v['copy'] / f:.0f}% |")
