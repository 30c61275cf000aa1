#!/usr/bin/env python3
"""Coefficients of the two tanh forms bench/tanh_forms.cpp compares with the op table's tanh.

Default: tanh(x) = x P(z) / Q(z), z = x^2, P(0) = Q(0) = 1, degrees DP and DQ (default 4 and 5) on
[0, 9], fitted for the smallest largest relative error by Lawson's iteratively reweighted linearised
least squares, then rounded to float one coefficient at a time from the highest degree down (each
rounding followed by a refit of those left), which halves the error that rounding them all at once adds.
--odd-poly [DEG]: tanh(x) = x + x z P(z) on [0, 0.625], P of degree DEG (default 4), the same way.
Prints the largest relative error (in units of 2^-24) with the rounded coefficients (exact arithmetic:
the float evaluation adds its own rounding, which bench/tanh_forms.cpp measures).
Needs numpy:  python3 scripts/fit_tanh_rational.py [DP DQ | --odd-poly [DEG]]
"""
import sys

import numpy as np


def lawson(A, b, weight, iters=300):
    """min over c of max |A c - b| * weight, by reweighted least squares."""
    w = np.ones(len(b))
    for _ in range(iters):
        W = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(A * W[:, None], b * W, rcond=None)
        err = np.abs(A @ c - b) * weight
        w = w * err / err.max() + 1e-14
        w /= w.sum()
    return c


def odd_poly(deg):
    x = (1 - np.cos(np.linspace(0, np.pi, 8001)))[1:] / 2 * 0.625
    z, f = x * x, np.tanh(x)
    V = np.vander(z, deg + 1, increasing=True)
    c = lawson(V, (f - x) / (x * z), x * z / f)  # the error of P weighs x z in tanh's, relative to tanh
    c32 = c.astype(np.float32)
    err = np.abs(x + x * z * (V @ c32.astype(np.float64)) - f) / f
    print(f"x + x z P(z) on [0, 0.625]: largest relative error {err.max() / 2**-24:.3f} x 2^-24")
    print("P, lowest degree first:", ", ".join(f"{v:.10e}f" for v in c32))


def rational(dp, dq, top=9.0):
    x = (1 - np.cos(np.linspace(0, np.pi, 20001)))[1:] / 2 * top
    g = np.tanh(x) / x
    S = top * top
    t = x * x / S  # fitted in t = z / S on [0, 1], then scaled
    Vp, Vq = np.vander(t, dp + 1, increasing=True), np.vander(t, dq + 1, increasing=True)
    A = np.hstack([Vp[:, 1:], -g[:, None] * Vq[:, 1:]])  # P(t) - g Q(t) = 0 with P(0) = Q(0) = 1
    scale = np.concatenate([S ** np.arange(1, dp + 1), S ** np.arange(1, dq + 1)])
    n = dp + dq
    fixed = {}

    def fit():
        free = [k for k in range(n) if k not in fixed]
        rhs = g - 1.0 - sum(A[:, k] * v for k, v in fixed.items())
        q_prev = np.ones_like(t)
        c = None
        for _ in range(30):  # (the linearised error divided by the last Q: relative to tanh)
            c = lawson(A[:, free], rhs, 1 / (g * q_prev), 60)
            full = np.array([fixed.get(k, 0.0) for k in range(n)])
            full[free] = c
            q_prev = Vq @ np.concatenate([[1.0], full[dp:]])
        return full

    full = fit()
    for k in sorted(range(n), key=lambda k: -(k % dp if k < dp else k - dp)):  # highest degrees first
        fixed[k] = float(np.float32(full[k] / scale[k])) * scale[k]
        if len(fixed) < n:
            full = fit()
    full = np.array([fixed[k] for k in range(n)])
    P = Vp @ np.concatenate([[1.0], full[:dp]])
    Q = Vq @ np.concatenate([[1.0], full[dp:]])
    err = np.abs(P / Q - g) / g
    print(f"x P(z) / Q(z) on [0, {top}], degrees {dp} and {dq}: largest relative error {err.max() / 2**-24:.3f} x 2^-24")
    pz = np.concatenate([[1.0], full[:dp] / scale[:dp]]).astype(np.float32)
    qz = np.concatenate([[1.0], full[dp:] / scale[dp:]]).astype(np.float32)
    print("P, lowest degree first:", ", ".join(f"{v:.10e}f" for v in pz))
    print("Q, lowest degree first:", ", ".join(f"{v:.10e}f" for v in qz))


if len(sys.argv) > 1 and sys.argv[1] == "--odd-poly":
    odd_poly(int(sys.argv[2]) if len(sys.argv) > 2 else 4)
else:
    rational(int(sys.argv[1]) if len(sys.argv) > 1 else 4, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
