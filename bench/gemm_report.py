#!/usr/bin/env python3
"""GEMM tables for bench/RESULTS.md from bench_gemm's JSON (one file per thread count).

Each benchmark keeps its best repetition (GFLOP/s = 2 M N K / time); "% peak" is over the FMA loop's
best in the same process run, and every ratio is between implementations measured in that same run.
"""
import argparse
import collections
import json


def best_rates(path):
    best = collections.OrderedDict()
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].replace("/real_time", "")
        best[name] = max(best.get(name, 0.0), b["flops"] / 1e9)
    return best


def table(path, threads):
    rates = best_rates(path)
    peak = rates.pop("gemm/peak/fma")
    cases = collections.OrderedDict()
    for name, rate in rates.items():
        _, impl, case = name.split("/", 2)
        cases.setdefault(case, {})[impl] = rate
    eigen = threads == 1
    head = "| case | tenfold GFLOP/s | % peak | OpenBLAS GFLOP/s | % peak | tenfold/OpenBLAS |"
    rule = "|---|--:|--:|--:|--:|--:|"
    if eigen:
        head += " Eigen GFLOP/s | tenfold/Eigen |"
        rule += "--:|--:|"
    lines = [f"Measured peak (FMA loop, {threads} thread{'s' if threads > 1 else ''}): **{peak:.1f} GFLOP/s**", "", head, rule]
    def order(case):  # squares by n, then M x 4096 x 4096 by M, then the layers
        kind = 0 if case.startswith("n") else 1 if case.startswith("m") else 2
        digits = "".join(ch for ch in case.split("_")[0] if ch.isdigit())
        return (kind, int(digits))

    for case, m in sorted(cases.items(), key=lambda cm: order(cm[0])):
        if case.startswith("layer"):
            n = case[len("layer"):]
            label = f"layer relu(x wᵀ + b), n = {n} (OpenBLAS: sgemm + a bias/relu pass)"
        elif case.startswith("n"):
            label = case.replace("n", "n = ", 1)
        else:
            m_, k_, n_, *rest = case.split("_")
            label = ", ".join([m_.replace("m", "M = ", 1), k_.replace("k", "K = ", 1), n_.replace("n", "N = ", 1)] + rest)
        t, o = m["tenfold"], m["openblas"]
        if "eigen" not in m:
            m["eigen"] = float("nan")
        row = f"| {label} | {t:.1f} | {100 * t / peak:.0f}% | {o:.1f} | {100 * o / peak:.0f}% | {t / o:.2f} |"
        if eigen:
            e = m["eigen"]
            row += " – | – |" if e != e else f" {e:.1f} | {t / e:.2f} |"
        lines.append(row)
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("t1")
    ap.add_argument("t2")
    ap.add_argument("--load", nargs="*", default=[])
    ap.add_argument("--commit", default="?")
    args = ap.parse_args()
    print(f"Commit {args.commit}. Load (`uptime`) before the 1-thread run, before the 2-thread run, after:")
    for l in args.load:
        print(f"- `{l.strip()}`")
    print()
    print("#### Single thread (`TENFOLD_NUM_THREADS=1`, OpenBLAS 1 thread; CPU time)\n")
    print(table(args.t1, 1))
    print()
    print("#### Two threads (`TENFOLD_NUM_THREADS=2`, OpenBLAS 2 threads; wall time)\n")
    print(table(args.t2, 2))


if __name__ == "__main__":
    main()
