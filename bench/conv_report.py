#!/usr/bin/env python3
"""conv2d tables from bench_conv's JSON (one file per thread count).

With --torch, bench/conv_torch.py's runs of the same layers through PyTorch are a column of their own.
Each benchmark keeps its best repetition (GFLOP/s = 2 N OH OW OC C KH KW / time); "% peak" is over the
FMA loop's best in the same process run, and every ratio is between implementations of that same run.
"""
import argparse
import collections
import json


def best_rates(paths):
    best = collections.OrderedDict()
    for b in (b for path in paths for b in json.load(open(path))["benchmarks"]):
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].replace("/real_time", "")
        best[name] = max(best.get(name, 0.0), b["flops"] / 1e9)
    return best


def table(paths, threads):
    rates = best_rates(paths)
    peak = rates.pop("conv/peak/fma")
    cases = collections.OrderedDict()
    for name, rate in rates.items():
        _, impl, case = name.split("/", 2)
        cases.setdefault(case, {})[impl] = rate
    torch = any("pytorch" in m for m in cases.values())
    lines = [f"Measured peak (FMA loop, {threads} thread{'s' if threads > 1 else ''}): **{peak:.1f} GFLOP/s**", "",
             "| layer | layout | batch | tenfold GFLOP/s | % peak | im2col+OpenBLAS GFLOP/s | % peak | tenfold/OpenBLAS | "
             + ("PyTorch GFLOP/s | tenfold/PyTorch | " if torch else "") + "naive GFLOP/s | tenfold/naive |",
             "|---|---|--:|--:|--:|--:|--:|--:|" + ("--:|--:|" if torch else "") + "--:|--:|"]

    def order(case):
        layer, layout, batch = case.rsplit("_", 2)
        return (int(batch[1:]), layout, layer)

    for case, m in sorted(cases.items(), key=lambda cm: order(cm[0])):
        layer, layout, batch = case.rsplit("_", 2)
        t, o = m["tenfold"], m["openblas"]
        nv = m.get("naive")
        naive = "– | –" if nv is None else f"{nv:.2f} | {t / nv:.0f}x"
        p = m.get("pytorch")
        vs_torch = ("– | – | " if p is None else f"{p:.1f} | {t / p:.2f} | ") if torch else ""
        lines.append(f"| {layer} | {layout.upper()} | {batch[1:]} | {t:.1f} | {100 * t / peak:.0f}% | {o:.1f} | "
                     f"{100 * o / peak:.0f}% | {t / o:.2f} | {vs_torch}{naive} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("t1")
    ap.add_argument("t2")
    ap.add_argument("--torch", nargs=2, metavar=("T1", "T2"), help="conv_torch.py's JSON for 1 and 2 threads")
    ap.add_argument("--load", nargs="*", default=[])
    ap.add_argument("--commit", default="?")
    args = ap.parse_args()
    print(f"Commit {args.commit}. Load (`uptime`) before the 1-thread run, before the 2-thread run, after:")
    for l in args.load:
        print(f"- `{l.strip()}`")
    print()
    print("#### Single thread (`TENFOLD_NUM_THREADS=1`, OpenBLAS 1 thread; CPU time)\n")
    print(table([args.t1] + (args.torch[:1] if args.torch else []), 1))
    print()
    print("#### Two threads (`TENFOLD_NUM_THREADS=2`, OpenBLAS 2 threads; wall time)\n")
    print(table([args.t2] + (args.torch[1:] if args.torch else []), 2))


if __name__ == "__main__":
    main()
