#!/usr/bin/env python3
"""Summarises an ncu CSV (`ncu --csv --metrics gpu__time_duration.sum ...`) of tenfold's kernels.

Every tenfold kernel is one template, kernel<Body, Key, ...>, so ncu's names are the encoded expression
types (cuda/kernel.hpp): this prints, per launch, the body (flat_body, indexed_body, row_body, dot_body,
simt_body, ...), the grid and block, the destination's shape and which heavy nodes the tree holds, the
longest first, and the total. Usage: bench/cuda/ncu_top.py FILE.csv[.gz] [--top N]
"""
import argparse
import csv
import gzip
import io
import re

TAGS = ("conv", "matmul", "reduce_key<ops::sum", "reduce_key<ops::max", "ops::exp", "where", "bernoulli")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file")
    p.add_argument("--top", type=int, default=30)
    a = p.parse_args()
    raw = (gzip.open if a.file.endswith(".gz") else open)(a.file, "rt").read()
    # ncu prints the program's own output and its notes before the CSV header.
    start = raw.find('"ID","Process ID"')
    if start < 0:
        raise SystemExit(f"{a.file}: no ncu CSV header found")
    rows = list(csv.DictReader(io.StringIO(raw[start:])))
    launches = []
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = r["Kernel Name"]
        m = re.match(r"void kernel<(\w+(?:<[^>]*>)?), type_identity<type_key<kernel_args, leaf_key<[^,]+, shape<([^>]*)>", name)
        body, shape = (m.group(1), m.group(2)) if m else (name[:40], "?")
        us = float(r["Metric Value"].replace(",", "")) / 1000.0  # ns (--print-units base)
        tags = " ".join(t for t in TAGS if t in name)
        launches.append((us, int(r["ID"]), body, r["Grid Size"], r["Block Size"], shape, tags))
    total = sum(x[0] for x in launches)
    print(f"{len(launches)} launches, {total:.1f} us of kernel time (serialised by the profiler)")
    for us, i, body, grid, block, shape, tags in sorted(launches, reverse=True)[: a.top]:
        print(f"{us:9.1f} us  #{i:<4} {body:22s} grid {grid:14s} block {block:12s} [{shape}] {tags}")


if __name__ == "__main__":
    main()
