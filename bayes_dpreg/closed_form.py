"""Closed-form posteriors and estimators (pure JAX functions on arrays).

* :func:`theta_conditional` -- the Gaussian full conditional of ``theta`` (eq. 12),
  shared by Bayes-fixedS-fast and the Gibbs steps of the samplers;
* :func:`fast_posterior` -- Bayes-fixedS-fast (Algorithm 3);
* :func:`nig_posterior` -- the exact non-private normal-inverse-gamma posterior;
* :func:`adassp_estimate` -- the distributed adaSSP point estimate (App. C.2).

Arrays for ``J`` parties are stacked on a leading axis: ``S`` is ``(J, d, d)``,
``z`` is ``(J, d)``, ``sigma_z2`` is ``(J,)``. All functions are jit- and
vmap-compatible.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array
from jax.scipy.linalg import solve_triangular

from .linalg import chol_solve, nearest_psd, spd_inverse

__all__ = [
    "GaussianPosterior",
    "theta_conditional",
    "fast_posterior",
    "NIGPosterior",
    "nig_posterior",
    "adassp_ridge",
    "adassp_estimate",
]


class GaussianPosterior(NamedTuple):
    """``N(mean, cov)``; ``prec_chol`` is the lower Cholesky factor of ``cov^{-1}``."""

    mean: Array
    cov: Array
    prec_chol: Array

    def sample(self, key: Array, shape: tuple[int, ...] = ()) -> Array:
        """Exact draws ``mean + L^{-T} eps`` with ``L L^T = cov^{-1}``."""
        eps = jax.random.normal(key, shape + self.mean.shape, dtype=self.mean.dtype)
        x = solve_triangular(self.prec_chol.T, eps[..., None], lower=False)[..., 0]
        return self.mean + x


def _gaussian_from_natural(precision: Array, h: Array) -> GaussianPosterior:
    L = jnp.linalg.cholesky(precision)
    mean = chol_solve(L, h)
    cov = chol_solve(L, jnp.eye(h.shape[-1], dtype=h.dtype))
    return GaussianPosterior(mean, 0.5 * (cov + cov.T), L)


def theta_conditional(
    S: Array, z: Array, sigma2: Array, sigma_z2: Array, m: Array, C_inv: Array
) -> GaussianPosterior:
    """Full conditional of ``theta`` given ``S_{1:J}``, ``z~_{1:J}``, ``sigma_y^2`` (eq. 12).

    .. math::
        \\Sigma_{post}^{-1} = \\sum_j S_j (\\sigma_y^2 S_j + \\sigma_{z,j}^2 I)^{-1} S_j + C^{-1},
        \\quad
        m_{post} = \\Sigma_{post}\\Big(\\sum_j S_j (\\sigma_y^2 S_j + \\sigma_{z,j}^2 I)^{-1} \\tilde z_j
        + C^{-1} m\\Big).

    With ``A_j = L_j L_j^T`` and ``W_j = L_j^{-1} S_j`` the precision terms are
    ``W_j^T W_j`` and ``W_j^T L_j^{-1} z_j``: no explicit inverses.
    """
    d = S.shape[-1]
    eye = jnp.eye(d, dtype=S.dtype)
    A = sigma2 * S + sigma_z2[:, None, None] * eye
    L = jnp.linalg.cholesky(A)
    W = solve_triangular(L, S, lower=True)
    w = solve_triangular(L, z[..., None], lower=True)[..., 0]
    precision = jnp.einsum("jki,jkl->il", W, W) + C_inv
    h = jnp.einsum("jki,jk->i", W, w) + C_inv @ m
    return _gaussian_from_natural(0.5 * (precision + precision.T), h)


def fast_posterior(
    S_tilde: Array, z_tilde: Array, sigma_z2: Array, sigma2: Array, m: Array, C: Array
) -> GaussianPosterior:
    """Bayes-fixedS-fast (Algorithm 3): ``theta``'s posterior at ``S_j = nearestPSD(S~_j)``
    and ``sigma_y^2`` fixed to a point estimate ``sigma2``."""
    S_hat = nearest_psd(S_tilde)
    return theta_conditional(S_hat, z_tilde, sigma2, sigma_z2, m, spd_inverse(C))


class NIGPosterior(NamedTuple):
    """``sigma^2 ~ IG(a, b)``, ``theta | sigma^2 ~ N(mean, sigma^2 precision^{-1})``."""

    mean: Array
    precision: Array
    a: Array
    b: Array

    @property
    def theta_cov(self) -> Array:
        """Marginal covariance of ``theta`` (a multivariate t), ``b/(a-1) precision^{-1}``."""
        return self.b / (self.a - 1.0) * spd_inverse(self.precision)

    def sample(self, key: Array, num: int) -> tuple[Array, Array]:
        """``num`` exact joint draws ``(theta, sigma2)``."""
        k1, k2 = jax.random.split(key)
        sigma2 = self.b / jax.random.gamma(k1, self.a, (num,), dtype=self.mean.dtype)
        L = jnp.linalg.cholesky(self.precision)
        eps = jax.random.normal(k2, (num,) + self.mean.shape, dtype=self.mean.dtype)
        x = solve_triangular(L.T, eps.T, lower=False).T
        return self.mean + jnp.sqrt(sigma2)[:, None] * x, sigma2


def nig_posterior(
    S: Array, z: Array, yty: Array, n: Array, m: Array, Lambda0: Array, a0: Array, b0: Array
) -> NIGPosterior:
    """Exact non-private posterior from exact ``S = X^T X``, ``z = X^T y``, ``y^T y``.

    Prior ``sigma^2 ~ IG(a0, b0)``, ``theta | sigma^2 ~ N(m, sigma^2 Lambda0^{-1})``:
    ``Lambda_n = S + Lambda0``, ``mu_n = Lambda_n^{-1}(z + Lambda0 m)``,
    ``a_n = a0 + n/2``, ``b_n = b0 + (y^T y + m^T Lambda0 m - mu_n^T Lambda_n mu_n)/2``.
    ``S`` and ``z`` may be stacked over parties (summed here).
    """
    if S.ndim == 3:
        S, z = S.sum(0), z.sum(0)
    Lam_n = S + Lambda0
    rhs = z + Lambda0 @ m
    mu_n = chol_solve(jnp.linalg.cholesky(Lam_n), rhs)
    a_n = a0 + 0.5 * n
    b_n = b0 + 0.5 * (yty + m @ Lambda0 @ m - rhs @ mu_n)
    return NIGPosterior(mu_n, Lam_n, a_n, b_n)


def adassp_ridge(lambda_min_tilde: Array, epsilon: Array, delta: Array, x_bound: Array, d: int, p: float = 0.05) -> Array:
    """Per-party ridge ``lambda_j`` of distributed adaSSP (App. C.2, Wang 2018):
    ``max(0, sqrt(d ln(6/delta) ln(2 d^2/p)) ||X||^2/(eps/3) - lambda~_min,j)``."""
    scale = jnp.sqrt(d * jnp.log(6.0 / delta) * jnp.log(2.0 * d**2 / p)) * x_bound**2 / (epsilon / 3.0)
    return jnp.maximum(0.0, scale - lambda_min_tilde)


def adassp_estimate(S_tilde: Array, z_tilde: Array, ridge: Array) -> Array:
    """``theta = (sum_j S~_j + sum_j lambda_j I)^{-1} sum_j z~_j`` (App. C.2, eq. 15)."""
    d = S_tilde.shape[-1]
    A = S_tilde.sum(0) + ridge.sum() * jnp.eye(d, dtype=S_tilde.dtype)
    return jnp.linalg.solve(A, z_tilde.sum(0))
