#!/usr/bin/env python3
"""Fits the rational tanh of kernels/include/canopy/kernels/tanh_rational.hpp: tanh(x) ~ x * P(x^2) / Q(x^2) on
[0, 9] with NP coefficients in P and NQ in Q (Q's constant term 1), by linearised least squares on
the relative error, reweighted towards the largest errors (Lawson) for a near-minimax fit. Prints
the error in f64 and of the f32 evaluation (Horner without FMA) and the f32 coefficients, lowest
power first. Usage: fit_tanh_rational.py [NP NQ] (default 7 4, the header's). Needs numpy."""
import sys

import numpy as np

C = 9.0  # beyond 9, tanh rounds to 1 in f32
NP, NQ = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (7, 4)
x = np.unique(np.concatenate([np.linspace(1e-4, 1, 3000), np.linspace(1, C, 6000), np.geomspace(1e-6, 1e-4, 50)]))
f = np.tanh(x); t = x * x; u = t / (C * C)
def fitit():
    w = np.ones_like(x); qden = np.ones_like(x); best = None
    for it in range(300):
        A = [x * u**k for k in range(NP)] + [-f * u**k for k in range(1, NQ)]
        A = np.array(A).T; b = f.copy()
        s = w / (f * qden)
        c, *_ = np.linalg.lstsq(A * s[:, None], b * s, rcond=None)
        p = c[:NP]; q = np.concatenate([[1.0], c[NP:]])
        Q = np.polyval(q[::-1], u); P = np.polyval(p[::-1], u)
        if np.any(Q <= 0): qden = np.abs(Q) + 1e-3; continue
        err = (x * P / Q - f) / f; m = np.abs(err).max()
        if best is None or m < best[0]: best = (m, p, q)
        qden = Q
        if it >= 20: w = w * np.abs(err) ** 0.3; w /= w.max()
    return best
m, p, q = fitit()
# convert back to t-monomials: coefficient of t^k = c_k / C^(2k)
pt = np.array([p[k] / (C*C)**k for k in range(NP)]); qt = np.array([q[k] / (C*C)**k for k in range(NQ)])
p32 = pt.astype(np.float32); q32 = qt.astype(np.float32)
def eval32(xv):
    xc = np.clip(xv, np.float32(-C), np.float32(C)).astype(np.float32)
    tt = (xc * xc).astype(np.float32)
    P = np.full_like(tt, p32[-1])
    for k in range(NP - 2, -1, -1): P = (P * tt + p32[k]).astype(np.float32)
    Q = np.full_like(tt, q32[-1])
    for k in range(NQ - 2, -1, -1): Q = (Q * tt + q32[k]).astype(np.float32)
    return np.clip((xc * P / Q).astype(np.float32), np.float32(-1), np.float32(1))
xs = np.float32(np.concatenate([np.linspace(-12, 12, 4000001), np.geomspace(1e-9, 1, 400001), -np.geomspace(1e-9, 1, 400001)]))
ys = eval32(xs); ref = np.tanh(xs.astype(np.float64))
d = np.abs(ys.astype(np.float64) - ref)
ulp = d / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
print(NP, NQ, "f64 rel", m, "| f32: max abs", d.max(), "max ulp", ulp.max(), "at", xs[np.argmax(ulp)], "odd-symmetric", np.all(eval32(-xs) == -ys))
print("p_t =", ", ".join("%.9ef" % v for v in p32)); print("q_t =", ", ".join("%.9ef" % v for v in q32))
