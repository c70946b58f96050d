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
    "theta_conditional_from_terms",
    "PartyTerms",
    "party_terms",
    "EigenParties",
    "eigen_parties",
    "party_terms_eigen",
    "log_lik_z_eigen",
    "collapsed_log_lik",
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


class PartyTerms(NamedTuple):
    """Per-party pieces of the z-likelihood, ``A_j = sigma_y^2 S_j + sigma_{z,j}^2 I``:
    ``U_j = S_j A_j^{-1} S_j``, ``u_j = S_j A_j^{-1} z_j``, ``c_j = log|A_j| + z_j^T A_j^{-1} z_j``."""

    U: Array  # (J, d, d)
    u: Array  # (J, d)
    c: Array  # (J,)


def party_terms(S: Array, z: Array, sigma2: Array, sigma_z2: Array) -> PartyTerms:
    """With ``A_j = L_j L_j^T``, ``W_j = L_j^{-1} S_j`` and ``w_j = L_j^{-1} z_j``:
    ``U_j = W_j^T W_j``, ``u_j = W_j^T w_j``, ``c_j = 2 sum log diag L_j + w_j^T w_j``."""
    d = S.shape[-1]
    A = sigma2 * S + sigma_z2[..., None, None] * jnp.eye(d, dtype=S.dtype)
    L = jnp.linalg.cholesky(A)
    W = solve_triangular(L, S, lower=True)
    w = solve_triangular(L, z[..., None], lower=True)[..., 0]
    U = jnp.einsum("...ki,...kl->...il", W, W)
    u = jnp.einsum("...ki,...k->...i", W, w)
    c = 2.0 * jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)).sum(-1) + (w * w).sum(-1)
    return PartyTerms(U, u, c)


class EigenParties(NamedTuple):
    """Fixed Gram matrices through their eigendecompositions, ``S_j = V_j diag(lam_j) V_j^T``,
    with the released ``z~_j`` in each eigenbasis, ``y_j = V_j^T z~_j`` (MCMC-fixedS's ``S_j``
    never change, so the factorisation is done once instead of every iteration)."""

    V: Array  # (J, d, d)
    lam: Array  # (J, d)
    y: Array  # (J, d)


def eigen_parties(S: Array, z: Array) -> EigenParties:
    """:class:`EigenParties` of symmetric ``S_j`` and ``z_j``."""
    lam, V = jnp.linalg.eigh(S)
    return EigenParties(V, lam, jnp.einsum("...ki,...k->...i", V, z))


def party_terms_eigen(E: EigenParties, sigma2: Array, sigma_z2: Array) -> PartyTerms:
    """:func:`party_terms` from :class:`EigenParties`, without a factorisation: ``A_j = sigma_y^2 S_j
    + sigma_z,j^2 I`` has eigenvalues ``a_j = sigma_y^2 lam_j + sigma_z,j^2`` in the basis ``V_j``, so
    ``U_j = V_j diag(lam_j^2 / a_j) V_j^T``, ``u_j = V_j (lam_j y_j / a_j)`` and
    ``c_j = sum log a_j + sum y_j^2 / a_j``."""
    a = sigma2 * E.lam + sigma_z2[..., None]
    U = jnp.einsum("...ik,...k,...lk->...il", E.V, E.lam**2 / a, E.V)
    u = jnp.einsum("...ik,...k->...i", E.V, E.lam * E.y / a)
    c = jnp.log(a).sum(-1) + (E.y**2 / a).sum(-1)
    return PartyTerms(U, u, c)


def log_lik_z_eigen(E: EigenParties, theta: Array, sigma2: Array, sigma_z2: Array) -> Array:
    """``sum_j log N(z~_j; S_j theta, sigma_y^2 S_j + sigma_z,j^2 I)``
    (:func:`bayes_dpreg.model.densities.log_lik_z`) from :class:`EigenParties`: in the basis ``V_j`` the
    residual is ``y_j - lam_j (V_j^T theta)`` and the covariance ``diag(a_j)``."""
    a = sigma2 * E.lam + sigma_z2[..., None]
    r = E.y - E.lam * jnp.einsum("...ik,i->...k", E.V, theta)
    return -0.5 * (a.size * jnp.log(2.0 * jnp.pi) + jnp.log(a).sum() + (r**2 / a).sum())


def collapsed_log_lik(U_sum: Array, u_sum: Array, c_sum: Array, m: Array, C_inv: Array, num_obs: int | Array) -> Array:
    r"""``log p(z_{1:J} | S_{1:J}, sigma_y^2)`` with ``theta ~ N(m, C)`` integrated out.

    .. math::
        -\tfrac12 \sum_j c_j + \tfrac12 \log|C^{-1}| - \tfrac12 m^T C^{-1} m
        + \tfrac12 h^T P^{-1} h - \tfrac12 \log|P| - \tfrac{Jd}{2}\log 2\pi,

    ``P = C^{-1} + sum_j U_j`` (eq. 12's precision), ``h = C^{-1} m + sum_j u_j``;
    ``num_obs = J d``. Inputs are the sums over parties of :class:`PartyTerms`.
    """
    P = C_inv + U_sum
    h = C_inv @ m + u_sum
    L = jnp.linalg.cholesky(0.5 * (P + P.T))
    v = solve_triangular(L, h[..., None], lower=True)[..., 0]
    logdet_Cinv = 2.0 * jnp.log(jnp.diagonal(jnp.linalg.cholesky(C_inv))).sum()
    return (
        -0.5 * c_sum
        + 0.5 * logdet_Cinv
        - 0.5 * m @ C_inv @ m
        + 0.5 * v @ v
        - jnp.log(jnp.diagonal(L)).sum()
        - 0.5 * num_obs * jnp.log(2.0 * jnp.pi)
    )


def theta_conditional(S: Array, z: Array, sigma2: Array, sigma_z2: Array, m: Array, C_inv: Array) -> GaussianPosterior:
    """Full conditional of ``theta`` given ``S_{1:J}``, ``z~_{1:J}``, ``sigma_y^2`` (eq. 12).

    .. math::
        \\Sigma_{post}^{-1} = \\sum_j S_j (\\sigma_y^2 S_j + \\sigma_{z,j}^2 I)^{-1} S_j + C^{-1},
        \\quad
        m_{post} = \\Sigma_{post}\\Big(\\sum_j S_j (\\sigma_y^2 S_j + \\sigma_{z,j}^2 I)^{-1} \\tilde z_j
        + C^{-1} m\\Big).

    The sums run over :func:`party_terms` (Cholesky solves, no explicit inverses).
    """
    return theta_conditional_from_terms(party_terms(S, z, sigma2, sigma_z2), m, C_inv)


def theta_conditional_from_terms(terms: PartyTerms, m: Array, C_inv: Array) -> GaussianPosterior:
    """eq. (12) from precomputed :class:`PartyTerms`."""
    precision = terms.U.sum(0) + C_inv
    return _gaussian_from_natural(0.5 * (precision + precision.T), terms.u.sum(0) + C_inv @ m)


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
    S: Array, z: Array, yty: Array, n: Array, m: Array, Lambda0: Array, a0: Array | float, b0: Array | float
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


def adassp_ridge(
    lambda_min_tilde: Array, epsilon: Array, delta: Array, x_bound: Array, d: int, p: float = 0.05
) -> Array:
    """Per-party ridge ``lambda_j`` of distributed adaSSP (App. C.2, Wang 2018):
    ``max(0, sqrt(d ln(6/delta) ln(2 d^2/p)) ||X||^2/(eps/3) - lambda~_min,j)``."""
    scale = jnp.sqrt(d * jnp.log(6.0 / delta) * jnp.log(2.0 * d**2 / p)) * x_bound**2 / (epsilon / 3.0)
    return jnp.maximum(0.0, scale - lambda_min_tilde)


def adassp_estimate(S_tilde: Array, z_tilde: Array, ridge: Array) -> Array:
    """``theta = (sum_j S~_j + sum_j lambda_j I)^{-1} sum_j z~_j`` (App. C.2, eq. 15)."""
    d = S_tilde.shape[-1]
    A = S_tilde.sum(0) + ridge.sum() * jnp.eye(d, dtype=S_tilde.dtype)
    return jnp.linalg.solve(A, z_tilde.sum(0))
