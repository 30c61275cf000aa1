#!/usr/bin/env python3
"""Coefficients of the AVX2 fast exp's polynomial (include/tenfold/ops/simd_exp.hpp, exp_f32_fast::q).

exp(r) = 1 + r + r^2 q(r) on |r| <= ln2 / 2, q of degree DEG (default 4), fitted for the smallest
largest relative error of exp by Lawson's iteratively reweighted least squares on Chebyshev points,
then rounded to float. Prints the largest relative error with the rounded coefficients (exact
arithmetic: the float evaluation adds its own rounding, which tests/exp_test.cpp measures).
Needs numpy:  python3 scripts/fit_exp_poly.py [DEG]
"""
import sys

import numpy as np

deg = int(sys.argv[1]) if len(sys.argv) > 1 else 4
h = np.log(2) / 2
x = np.cos(np.linspace(0, np.pi, 4001)) * h
f = np.exp(x)
small = np.abs(x) < 1e-12
target = np.where(small, 0.5, (f - 1 - x) / np.where(small, 1, x) ** 2)
V = np.vander(x, deg + 1, increasing=True)
w = np.ones_like(x)
for _ in range(200):
    W = w * x**2 / f  # the error of q weighs x^2 in exp's, relative to exp
    c, *_ = np.linalg.lstsq(V * W[:, None], target * W, rcond=None)
    err = np.abs(1 + x + x**2 * (V @ c) - f) / f
    w = w * err / err.max() + 1e-12
    w /= w.sum()
c32 = c.astype(np.float32)
err = np.abs(1 + x + x**2 * (V @ c32.astype(np.float64)) - f) / f
print(f"largest relative error {err.max():.3g} ({err.max() / 2**-23:.3f} ulp at 1)")
print("q, lowest degree first:", ", ".join(f"{v:.10e}f" for v in c32))
