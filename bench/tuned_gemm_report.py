#!/usr/bin/env python3
"""Tuned against untuned GEMM tables from bench/run_tuned_gemm.sh's JSON files.

Arguments: THREADS:KIND:FILE (KIND tuned or untuned). Each case keeps its best GFLOP/s (2 M N K / time)
over the files of its thread count and kind; OpenBLAS's best is taken over both binaries' runs.
"""
import collections
import json
import sys


def main():
    best = collections.defaultdict(dict)  # (threads, case) -> {impl: GFLOP/s}
    order = []
    for arg in sys.argv[1:]:
        threads, kind, path = arg.split(":", 2)
        for b in json.load(open(path))["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            _, impl, case = b["run_name"].replace("/real_time", "").split("/", 2)
            key = (int(threads), case)
            if key not in best:
                order.append(key)
            col = impl if impl == "openblas" else f"{impl}_{kind}"
            best[key][col] = max(best[key].get(col, 0.0), b["flops"] / 1e9)
    for threads in sorted({t for t, _ in order}):
        print(f"\n#### {threads} thread{'s' if threads > 1 else ''}\n")
        print("| case | defaults GFLOP/s | tuned GFLOP/s | tuned/defaults | OpenBLAS GFLOP/s | defaults/OpenBLAS | tuned/OpenBLAS |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for t, case in order:
            if t != threads:
                continue
            r = best[(t, case)]
            d, u, o = r.get("tenfold_untuned"), r.get("tenfold_tuned"), r.get("openblas")
            if d is None or u is None:
                continue
            ob = f"{o:.1f} | {d / o:.2f} | {u / o:.2f}" if o else "– | – | –"
            print(f"| {case} | {d:.1f} | {u:.1f} | {u / d:.2f} | {ob} |")


if __name__ == "__main__":
    main()
