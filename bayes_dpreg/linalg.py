"""Small dense linear-algebra helpers shared by the closed forms and the samplers (JAX)."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array
from jax.scipy.linalg import cho_solve, solve_triangular

__all__ = ["nearest_psd", "nearest_psd_and_min_eig", "symmetrize", "spd_inverse", "chol_solve"]


def symmetrize(A: Array) -> Array:
    """``(A + A^T) / 2`` over the last two axes."""
    return 0.5 * (A + jnp.swapaxes(A, -1, -2))


def nearest_psd(A: Array) -> Array:
    """Nearest symmetric positive semi-definite matrix in Frobenius norm (Higham 1988).

    For symmetric ``A = E D E^T``, the minimiser is ``E max(D, 0) E^T``
    (paper Sec. 4.2). Works on a batch ``(..., d, d)``; ``A`` is symmetrised first.
    """
    return nearest_psd_and_min_eig(A)[0]


def nearest_psd_and_min_eig(A: Array) -> tuple[Array, Array]:
    """:func:`nearest_psd` and the smallest eigenvalue of the symmetrised ``A`` (negative
    where the projection changed it), from one eigendecomposition."""
    w, E = jnp.linalg.eigh(symmetrize(A))
    return symmetrize((E * jnp.maximum(w, 0.0)[..., None, :]) @ jnp.swapaxes(E, -1, -2)), w[..., 0]


def chol_solve(L: Array, B: Array) -> Array:
    """Solve ``(L L^T) X = B`` given the lower Cholesky factor ``L``."""
    return cho_solve((L, True), B)


def spd_inverse(A: Array) -> Array:
    """Inverse of a symmetric positive-definite matrix through its Cholesky factor."""
    L = jnp.linalg.cholesky(A)
    Linv = solve_triangular(L, jnp.eye(A.shape[-1], dtype=A.dtype), lower=True)
    return Linv.T @ Linv
