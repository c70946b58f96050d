r"""Exact sums ``S = X^T X``, ``z = X^T y``, ``y^T y`` of a party's clipped rows.

Summed in floating point, ``S`` carries a rounding error that depends on the data, the order of
the rows and the BLAS: up to ``gamma_n n x_bound^2`` per entry, which no sensitivity accounts for
(Casacuberta et al. 2022 show such errors leaking through "private" sums). Here the sums are
exact. Each clipped entry is rounded to the nearest point of a grid ``2^e`` with at most
:data:`QUANT_BITS` bits, ``q = rint(v / 2^e)``, ``|q| <= 2^20`` (``2^e`` about ``2^-20`` of its
bound). So that the rounded rows still satisfy the declared bounds (and the sensitivities are
unchanged), rows are first brought within ``x_bound - sqrt(d) 2^e`` and responses within
``y_bound - 2^e`` (rounding moves a row by at most ``sqrt(d) 2^(e-1)``); the change to the data,
about ``2^-20`` of the bounds and unbiased, is far below any release noise. Products
``q_i q_j`` are integers below ``2^40``, so a
block of :data:`BLOCK_ROWS` rows has a Gram matrix whose every partial sum is an integer below
``2^53``: BLAS computes it exactly, in any order. Blocks are added as integers (``int64``, then
Python integers, which do not overflow). The result is a function of the set of rows alone.

Released values are rounded from these integers exactly (:meth:`Gram.on_grid`), so the
discrete Gaussian mechanism's grid rounding (charged to the sensitivity) is the only rounding
between the data and the noise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Gram", "QUANT_BITS", "BLOCK_ROWS", "exponent", "quantize"]

QUANT_BITS = 20
BLOCK_ROWS = 4096  # 4096 * 2^40 = 2^52: every partial sum of a block is an exact float64 integer
_FLUSH = 1024  # int64 blocks summed before moving to Python integers: 1024 * 2^52 = 2^62 < 2^63


def exponent(bound: float) -> int:
    """``e`` with ``bound <= 2^(e + QUANT_BITS)``: values within ``bound`` quantize to ``|q| <= 2^20``."""
    return math.ceil(math.log2(bound)) - QUANT_BITS


def quantize(values: np.ndarray, e: int) -> np.ndarray:
    """``rint(values / 2^e)`` as float64 integers."""
    return np.rint(np.ldexp(values, -e))


def _within(X: np.ndarray, y: np.ndarray, ex: int, ey: int, x_bound: float, y_bound: float) -> tuple:
    """Rows and responses pulled in by the most that rounding to ``2^ex``, ``2^ey`` can push them out."""
    r = x_bound - math.sqrt(X.shape[1]) * 2.0**ex
    norms = np.linalg.norm(X, axis=1)
    X = np.where((norms > r)[:, None], X * (r / np.where(norms > r, norms, 1.0))[:, None], X)
    return X, np.clip(y, -(y_bound - 2.0**ey), y_bound - 2.0**ey)


def _round_shift(v: int, shift: int) -> int:
    """``v * 2^shift`` rounded to the nearest integer, ties to even (exact, for Python integers)."""
    if shift >= 0:
        return v << shift
    q, r = divmod(v, 1 << -shift)
    half = 1 << (-shift - 1)
    return q + 1 if r > half or (r == half and q % 2) else q


class Gram:
    """``sum_i q_i q_i^T`` over quantized rows ``q_i = [x_i, (1), y_i] / 2^e`` (column ``k`` on the
    grid ``2^e[k]``), exactly, as Python integers: ``S``, ``z`` and ``y^T y`` are blocks of it."""

    def __init__(self, e: np.ndarray) -> None:
        self.e = np.asarray(e, dtype=np.int64)
        p = self.e.size
        self._total = np.zeros((p, p), dtype=object)
        self._acc = np.zeros((p, p), dtype=np.int64)
        self._blocks = 0
        self.n = 0

    @classmethod
    def of_rows(cls, X: np.ndarray, y: np.ndarray, x_bound: float, y_bound: float, intercept: bool) -> Gram:
        """The Gram of clipped rows ``X`` (``||x|| <= x_bound``) and responses ``|y| <= y_bound``."""
        ex, ey = exponent(x_bound), exponent(y_bound)
        X, y = _within(X, y, ex, ey, x_bound, y_bound)
        cols = [quantize(X, ex)]
        e = [ex] * X.shape[1]
        if intercept:
            cols.insert(0, np.full((X.shape[0], 1), 2.0**QUANT_BITS))
            e.insert(0, -QUANT_BITS)
        cols.append(quantize(y, ey)[:, None])
        g = cls(np.array(e + [ey]))
        g.add(np.hstack(cols))
        return g

    def add(self, Q: np.ndarray) -> None:
        """Add the rows of ``Q`` (float64 integers, ``|q| <= 2^QUANT_BITS``)."""
        for i in range(0, Q.shape[0], BLOCK_ROWS):
            B = Q[i : i + BLOCK_ROWS]
            self._acc += (B.T @ B).astype(np.int64)
            self._blocks += 1
            if self._blocks == _FLUSH:
                self._flush()
        self.n += Q.shape[0]

    def _flush(self) -> None:
        self._total += self._acc.astype(object)
        self._acc[:] = 0
        self._blocks = 0

    def merge(self, other: Gram) -> None:
        """Add another party-side Gram of the same columns (a Dask partition's)."""
        if not np.array_equal(self.e, other.e):
            raise ValueError(f"a batch has {other.e.size - 1} columns where earlier ones had {self.e.size - 1}")
        self._flush()
        self._total += other.integers()
        self.n += other.n

    def integers(self) -> np.ndarray:
        """The exact sums (Python integers); entry ``(i, j)`` is in units of ``2^(e_i + e_j)``."""
        self._flush()
        return self._total.copy()

    @property
    def p(self) -> int:
        return int(self.e.size)

    def values(self) -> np.ndarray:
        """The sums as float64 (each exact sum rounded once)."""
        ints = self.integers()
        return np.array(
            [[math.ldexp(float(ints[i, j]), int(self.e[i] + self.e[j])) for j in range(self.p)] for i in range(self.p)]
        )

    def on_grid(self, k: int) -> np.ndarray:
        """The sums rounded to the nearest multiple of ``2^k`` (ties to even), exactly."""
        ints = self.integers()
        out = np.empty((self.p, self.p))
        for i in range(self.p):
            for j in range(self.p):
                out[i, j] = math.ldexp(float(_round_shift(int(ints[i, j]), int(self.e[i] + self.e[j]) - k)), k)
        return out

    def split(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``(S, z, y^T y)`` from a matrix laid out like the Gram (its last column is ``y``)."""
        return m[:-1, :-1], m[:-1, -1], float(m[-1, -1])

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return self.__dict__
