#!/usr/bin/env python3
"""conv2d tables from bench_conv's JSON (one file per thread count).

Each benchmark keeps its best repetition (GFLOP/s = 2 N OH OW OC C KH KW / time); "% peak" is over the
FMA loop's best in the same process run, and every ratio is between implementations of that same run.
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
    peak = rates.pop("conv/peak/fma")
    cases = collections.OrderedDict()
    for name, rate in rates.items():
        _, impl, case = name.split("/", 2)
        cases.setdefault(case, {})[impl] = rate
    lines = [f"Measured peak (FMA loop, {threads} thread{'s' if threads > 1 else ''}): **{peak:.1f} GFLOP/s**", "",
             "| layer | layout | batch | tenfold GFLOP/s | % peak | im2col+OpenBLAS GFLOP/s | % peak | tenfold/OpenBLAS | naive GFLOP/s | tenfold/naive |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]

    def order(case):
        layer, layout, batch = case.rsplit("_", 2)
        return (int(batch[1:]), layout, layer)

    for case, m in sorted(cases.items(), key=lambda cm: order(cm[0])):
        layer, layout, batch = case.rsplit("_", 2)
        t, o = m["tenfold"], m["openblas"]
        nv = m.get("naive")
        naive = "– | –" if nv is None else f"{nv:.2f} | {t / nv:.0f}x"
        lines.append(f"| {layer} | {layout.upper()} | {batch[1:]} | {t:.1f} | {100 * t / peak:.0f}% | {o:.1f} | "
                     f"{100 * o / peak:.0f}% | {t / o:.2f} | {naive} |")
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
