"""Small dense linear-algebra helpers shared by the closed forms and the samplers (JAX)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.scipy.linalg import cho_solve, solve_triangular
from jax.typing import ArrayLike

__all__ = [
    "nearest_psd",
    "nearest_psd_and_min_eig",
    "symmetrize",
    "spd_inverse",
    "small_spd_inverse",
    "chol_solve",
    "log_cholesky",
    "from_log_cholesky",
    "log_cholesky_log_jacobian",
    "pooled_covariance",
]


def symmetrize(A: Array) -> Array:
    """``(A + A^T) / 2`` over the last two axes."""
    return 0.5 * (A + jnp.swapaxes(A, -1, -2))


def nearest_psd(A: ArrayLike) -> Array:
    """Nearest symmetric positive semi-definite matrix in Frobenius norm (Higham 1988).

    For symmetric ``A = E D E^T``, the minimiser is ``E max(D, 0) E^T``
    (paper Sec. 4.2). Works on a batch ``(..., d, d)``; ``A`` is symmetrised first.
    """
    return nearest_psd_and_min_eig(A)[0]


@jax.jit  # one program where it is called eagerly (a fit's predictive groups), not ten
def nearest_psd_and_min_eig(A: ArrayLike) -> tuple[Array, Array]:
    """:func:`nearest_psd` and the smallest eigenvalue of the symmetrised ``A`` (negative
    where the projection changed it), from one eigendecomposition."""
    w, E = jnp.linalg.eigh(symmetrize(jnp.asarray(A)))
    return symmetrize((E * jnp.maximum(w, 0.0)[..., None, :]) @ jnp.swapaxes(E, -1, -2)), w[..., 0]


def chol_solve(L: Array, B: Array) -> Array:
    """Solve ``(L L^T) X = B`` given the lower Cholesky factor ``L``."""
    return cho_solve((L, True), B)


def spd_inverse(A: Array) -> Array:
    """Inverse of a symmetric positive-definite matrix through its Cholesky factor."""
    L = jnp.linalg.cholesky(A)
    Linv = solve_triangular(L, jnp.eye(A.shape[-1], dtype=A.dtype), lower=True)
    return Linv.T @ Linv


def small_spd_inverse(A: Array) -> tuple[Array, Array]:
    """``(A^{-1}, log|A|)`` for a batch ``(..., d, d)`` of small symmetric positive-definite
    matrices: the Cholesky factor and its inverse written out entry by entry, ``O(d^3)``
    elementwise operations on the batch that XLA fuses, where LAPACK would make one call per matrix
    (in ``normalx_clt.clt_log_lik_exact``, a batch of parties' ``d x d`` systems at d <= 5, this cost
    less: ``docs/samplers.md``). Not for large d: the program grows as ``d^3``. No check: a matrix
    that is not positive definite gives NaN (a singular one, infinities), as ``jnp.linalg.cholesky``."""
    d = A.shape[-1]
    zero = jnp.zeros_like(A[..., 0, 0])
    L: list[list[Array]] = [[zero] * d for _ in range(d)]
    for i in range(d):
        for k in range(i + 1):
            s = A[..., i, k] - sum((L[i][m] * L[k][m] for m in range(k)), zero)
            L[i][k] = jnp.sqrt(s) if i == k else s / L[k][k]
    Li: list[list[Array]] = [[zero] * d for _ in range(d)]  # L^{-1} by forward substitution
    for i in range(d):
        Li[i][i] = 1.0 / L[i][i]
        for k in range(i):
            Li[i][k] = -sum((L[i][m] * Li[m][k] for m in range(k, i)), zero) / L[i][i]
    Linv = jnp.stack([jnp.stack(row, -1) for row in Li], -2)
    log_det = 2.0 * sum((jnp.log(L[i][i]) for i in range(d)), zero)
    return jnp.swapaxes(Linv, -1, -2) @ Linv, log_det


def _tril(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, cols = np.tril_indices(d)
    return rows, cols, np.flatnonzero(rows == cols)


def log_cholesky(A: Array) -> Array:
    """Log-Cholesky vector of a positive-definite ``A``: the lower triangle of ``chol(A)``,
    row-major, with the diagonal on the log scale; ``(..., d, d) -> (..., d(d+1)/2)``."""
    rows, cols, diag = _tril(A.shape[-1])
    v = jnp.linalg.cholesky(A)[..., rows, cols]
    return v.at[..., diag].set(jnp.log(v[..., diag]))


def from_log_cholesky(v: Array, d: int) -> Array:
    """The lower-triangular factor ``L`` from its :func:`log_cholesky` vector (``A = L L^T``)."""
    rows, cols, diag = _tril(d)
    return jnp.zeros(v.shape[:-1] + (d, d), v.dtype).at[..., rows, cols].set(v.at[..., diag].set(jnp.exp(v[..., diag])))


def log_cholesky_log_jacobian(v: Array, d: int) -> Array:
    r"""``log |d upper(A) / d v|`` of ``A = L L^T`` with ``L = from_log_cholesky(v)``:

    .. math::
        d \log 2 + \sum_{i=0}^{d-1} (d - i + 1) \log L_{ii},

    ``2^d prod_i L_ii^{d-i}`` from ``L -> L L^T`` (upper-triangle coordinates) times
    ``L_ii`` for the log-diagonal. Tested against automatic differentiation."""
    _, _, diag = _tril(d)
    return d * jnp.log(2.0) + (v[..., diag] * (d + 1.0 - np.arange(d))).sum(-1)


def pooled_covariance(scatter: Array, dof: Array, noise_sd: Array) -> Array:
    """A positive definite covariance from a noisy pooled scatter matrix (for starting values):
    ``nearestPSD(scatter)/dof + (1e-3 tr/d + noise_sd/dof) I``, the ridge a small fraction of the
    scale plus the noise's own size."""
    d = scatter.shape[-1]
    pooled = nearest_psd(scatter) / dof
    ridge = 1e-3 * jnp.trace(pooled) / d + noise_sd / dof
    return pooled + ridge * jnp.eye(d, dtype=pooled.dtype)
