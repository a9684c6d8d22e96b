"""Element-wise kernels numpy lacks: an accurate erf, the exact GELU and a fused LayerNorm.

They work in place on float32 rows, in chunks small enough that temporaries stay in cache,
because between the matrix products these loops are most of the encoder's remaining time.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]
CHUNK_ROWS = 128  # rows per chunk of element-wise work
_EPS = np.float32(1e-12)  # BERT's LayerNorm epsilon

# erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (Eigen's float erf); max error 6.5e-8 in exact
# arithmetic. Beyond |x| = 4, erf is +-1 to float32 precision. Highest power first.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# GELU(x) = x * (0.5 + 0.5 * erf(x / sqrt 2)). With u = clip(x, +-4 sqrt 2) and s = u^2 the
# 1/sqrt 2 and the 0.5 fold into the coefficients: GELU(x) = x * (0.5 + u * P'(s) / Q'(s)).
# Q' is made monic (its leading coefficient divided out of both), which saves one pass.
_GELU_P = tuple(
    np.float32(c * 0.5 ** (len(_ERF_P) - 1 - i) * 0.5 / math.sqrt(2) / (_ERF_Q[0] / 16))
    for i, c in enumerate(_ERF_P)
)
_GELU_Q = tuple(
    np.float32(c * 0.5 ** (len(_ERF_Q) - 1 - i) / (_ERF_Q[0] / 16)) for i, c in enumerate(_ERF_Q)
)
_GELU_CLIP = np.float32(4.0 * math.sqrt(2.0))


def erf(x: NDArray[np.floating]) -> NDArray[np.float64]:
    """Vectorised erf (numpy has none), to 1e-7 absolute: for checks and callers, not the hot path."""
    z = np.clip(np.asarray(x, dtype=np.float64), -4.0, 4.0)
    s = z * z
    p = np.full_like(s, _ERF_P[0])
    for c in _ERF_P[1:]:
        p = p * s + c
    q = np.full_like(s, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q = q * s + c
    result: NDArray[np.float64] = z * p / q
    return result


def gelu_(h: F32, bias: F32 | None = None) -> F32:
    """`h = GELU(h + bias)` in place, exact (erf), in row chunks whose temporaries stay in cache."""
    rows, width = h.shape
    buf = np.empty((4, min(rows, CHUNK_ROWS), width), dtype=np.float32)
    for start in range(0, rows, CHUNK_ROWS):
        x = h[start : start + CHUNK_ROWS]
        n = x.shape[0]
        u, s, p, q = buf[0, :n], buf[1, :n], buf[2, :n], buf[3, :n]
        if bias is not None:
            x += bias
        np.clip(x, -_GELU_CLIP, _GELU_CLIP, out=u)  # one pass, and faster than max + min
        np.multiply(u, u, out=s)
        np.multiply(s, _GELU_P[0], out=p)
        for c in _GELU_P[1:-1]:
            p += c
            p *= s
        p += _GELU_P[-1]
        np.add(s, _GELU_Q[1], out=q)  # _GELU_Q[0] is 1
        for c in _GELU_Q[2:]:
            q *= s
            q += c
        p *= u
        p /= q
        p += np.float32(0.5)
        x *= p
    return h


def add_layer_norm_(x: F32, bias: F32 | None, residual: F32 | None, gamma: F32, beta: F32) -> F32:
    """`x = LayerNorm(x + bias + residual)` in place, in cache-sized row chunks."""
    width = x.shape[1]
    for start in range(0, x.shape[0], CHUNK_ROWS):
        c = x[start : start + CHUNK_ROWS]
        if bias is not None:
            c += bias
        if residual is not None:
            c += residual[start : start + CHUNK_ROWS]
        mean = c.sum(axis=1, keepdims=True)
        mean *= np.float32(1.0 / width)
        c -= mean
        var = np.einsum("ij,ij->i", c, c)[:, None]
        var *= np.float32(1.0 / width)
        var += _EPS
        np.sqrt(var, out=var)
        c /= var
        c *= gamma
        c += beta
    return x
