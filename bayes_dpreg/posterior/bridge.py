r"""Marginal likelihood by bridge sampling (Meng & Wong 1996), for models without a closed form.

Given posterior draws ``theta_i ~ p(theta | y) = q(theta) / Z`` (MCMC, in unconstrained
coordinates, with ``q`` the unnormalised joint density *including* every normalising
constant and Jacobian) and a proposal ``g``, the optimal bridge function gives the
fixed-point iteration (Gronau et al. 2017, eq. 4; Meng & Wong 1996, eq. 4.1)

.. math::
    \hat Z^{(t+1)} = \frac{\frac{1}{N_2} \sum_{i=1}^{N_2} \frac{l_{2,i}}{s_1 l_{2,i} + s_2 \hat Z^{(t)}}}
                          {\frac{1}{N_1} \sum_{j=1}^{N_1} \frac{1}{s_1 l_{1,j} + s_2 \hat Z^{(t)}}},
    \qquad l = q / g,

``l_1`` at ``N_1`` posterior draws, ``l_2`` at ``N_2`` draws from ``g``,
``s_1 = N_1^{eff} / (N_1^{eff} + N_2)``, ``s_2 = 1 - s_1`` (``N_1^{eff}``: the effective
sample size of the posterior draws, as in the ``bridgesampling`` R package). The
proposal is a multivariate normal fitted to the first half of every chain; the second
half enters the iteration, so that ``g`` does not depend on the draws it is tested on.

Its error (Frühwirth-Schnatter 2004; Gronau et al. 2017, eq. 17) is the approximate
relative mean-squared error of ``Z``, which is the standard deviation of ``log Z``:

.. math::
    RE^2 = \frac{1}{N_2} \frac{V_g(f_2)}{E_g(f_2)^2} + \frac{1}{N_1^{eff}(f_1)} \frac{V_p(f_1)}{E_p(f_1)^2},
    \quad f_1 = \frac{g}{s_1 p + s_2 g},\ f_2 = \frac{p}{s_1 p + s_2 g},

with ``p = q / Z`` and ``N_1^{eff}(f_1)`` the effective sample size of ``f_1`` along the chains.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from ..runtime.precision import x64

__all__ = ["BridgeResult", "bridge_sampling"]


class BridgeResult(NamedTuple):
    """The estimate ``log Z``, its approximate standard deviation and what produced it."""

    log_evidence: float
    error: float  # approximate sd of log_evidence (relative RMSE of Z)
    iterations: int
    num_posterior: int  # N_1: posterior draws in the iteration
    num_posterior_eff: float  # their effective sample size
    num_proposal: int  # N_2


def _ess(x: np.ndarray) -> float:
    """Bulk effective sample size of ``x`` (chains, draws) by ArviZ (rank-normalised)."""
    import arviz as az

    if np.ptp(x) == 0.0:
        return float(x.size)
    return float(min(az.ess(np.asarray(x, dtype=float), method="bulk"), x.size))


def _iterate(l1: np.ndarray, l2: np.ndarray, s1: float, s2: float, tol: float, max_iter: int) -> tuple[float, int]:
    """The fixed point ``log Z`` of the iteration above, in log space."""
    log_z = float(np.median(l1))
    log_s1, log_s2 = math.log(s1), math.log(s2)
    for it in range(1, max_iter + 1):
        num = logsumexp(l2 - np.logaddexp(log_s1 + l2, log_s2 + log_z)) - math.log(l2.size)
        den = logsumexp(-np.logaddexp(log_s1 + l1, log_s2 + log_z)) - math.log(l1.size)
        new = float(num - den)
        if abs(new - log_z) < tol:
            return new, it
        log_z = new
    raise FloatingPointError(
        f"bridge sampling did not converge in {max_iter} iterations (last change "
        f"{abs(new - log_z):.2e}); the proposal is far from the posterior"
    )


def _relative_error(l1: np.ndarray, l2: np.ndarray, log_z: float, s1: float, s2: float, neff_f1: float) -> float:
    r1 = np.exp(np.clip(l1 - log_z, -700, 700))
    r2 = np.exp(np.clip(l2 - log_z, -700, 700))
    f1 = 1.0 / (s1 * r1 + s2)
    f2 = r2 / (s1 * r2 + s2)
    re2 = f2.var() / f2.mean() ** 2 / l2.size + f1.var() / f1.mean() ** 2 / neff_f1
    return float(math.sqrt(re2))


@x64
def bridge_sampling(
    log_density: Callable[[jax.Array], jax.Array],
    draws: np.ndarray,
    *,
    seed: int = 0,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> BridgeResult:
    """``log Z = log \\int q`` from posterior draws of ``q / Z`` (module docstring).

    ``log_density``: ``log q`` of one unconstrained vector ``(p,)`` (JAX, vmapped here);
    ``draws``: posterior draws ``(chains, draws, p)`` in the same coordinates, at least
    ``2 (p + 2)`` per half so that the proposal's covariance is of full rank. ``N_2 = N_1``
    proposal draws; ``seed`` seeds them."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 3:
        raise ValueError(f"draws must be (chains, draws, p), got shape {draws.shape}")
    chains, n, p = draws.shape
    half = n // 2
    if chains * half < 2 * (p + 2) or n - half < 2:
        raise ValueError(f"{chains} x {n} draws are too few to fit a {p}-dimensional proposal")
    if not np.all(np.isfinite(draws)):
        raise ValueError("draws contain non-finite values")
    fit_part, iter_part = draws[:, :half].reshape(-1, p), draws[:, half:]
    mean = fit_part.mean(0)
    cov = np.atleast_2d(np.cov(fit_part, rowvar=False))
    proposal = jax.scipy.stats.multivariate_normal
    L = np.linalg.cholesky(cov + 1e-12 * np.trace(cov) / p * np.eye(p))
    n1 = iter_part.shape[0] * iter_part.shape[1]
    rng = np.random.default_rng(seed)
    prop = mean + rng.standard_normal((n1, p)) @ L.T
    cov_j = jnp.asarray(L @ L.T)
    log_q = jax.jit(jax.vmap(log_density))
    log_g = jax.jit(jax.vmap(lambda x: proposal.logpdf(x, jnp.asarray(mean), cov_j)))
    post = jnp.asarray(iter_part.reshape(-1, p))
    l1 = np.asarray(log_q(post) - log_g(post), dtype=float)
    l2 = np.asarray(log_q(jnp.asarray(prop)) - log_g(jnp.asarray(prop)), dtype=float)
    if not np.all(np.isfinite(l1)):
        raise FloatingPointError("the log density is not finite at some posterior draws")
    l2 = np.where(np.isfinite(l2), l2, -np.inf)  # proposals outside the support weigh nothing
    neff = _ess(l1.reshape(iter_part.shape[:2]))
    s1 = neff / (neff + n1)
    log_z, iterations = _iterate(l1, l2, s1, 1.0 - s1, tol, max_iter)
    r1 = np.exp(np.clip(l1 - log_z, -700, 700))
    neff_f1 = _ess((1.0 / (s1 * r1 + 1.0 - s1)).reshape(iter_part.shape[:2]))
    error = _relative_error(l1, l2, log_z, s1, 1.0 - s1, neff_f1)
    return BridgeResult(log_z, error, iterations, n1, neff, n1)
