"""Simulation-based calibration (Talts et al. 2018) of the samplers, vectorised over replications.

For each replication: draw ``(theta, sigma2, Sigma_x)`` from the prior, ``S_j ~ W(Sigma_x, n_j)``,
``z_j | S_j ~ N(S_j theta, sigma2 S_j)`` (exact, Prop. 3.1), release
``S~_j = S_j + sigma_S M_j``, ``z~_j = z_j + sigma_z v_j`` (eq. 8); run the sampler; record the
rank of each true value among ``L`` thinned posterior draws. If the sampler is
correct, every rank is uniform on ``{0, ..., L}``; uniformity is tested with a
chi-square test on equal-width bins.

For MCMC-fixedS the model is the one it targets: ``S_j`` known (``data.S_tilde = S_j``).
For ``normalx-intercept`` the simulation is the intercept model's (App. B.2,
:func:`simulate_intercept_from_prior`). Any registered sampler with a chain kernel can be
calibrated (``bayes_dpreg.samplers``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import Array
from scipy.stats import chi2

from ..model.closed_form import eigen_parties
from ..model.densities import ModelData, intercept_design, prior_dists
from ..model.prior import ResolvedPrior, theta_feature_scale
from ..runtime.entry import public
from ..samplers import get as get_sampler
from ..samplers.base import run_batched

__all__ = ["SBCResult", "simulate_from_prior", "simulate_intercept_from_prior", "sbc", "uniformity_pvalue"]

# replications per compiled call on CPU, where a vmapped batch of NUTS chains steps in lockstep. 100
# replications of normalx-nuts (d = 2, J = 2, n_j = 30, 200 + 99 iterations; tests/test_samplers.py's SBC):
# 41.6 s in batches of 20 and 35.2 s of 5 on 2 cores; 36.2, 31.5, 28.3 and 33.2 s in batches of 20, 10, 5
# and 1 on one thread with the test suite's XLA options. 120 of normalx-clt (d = 4, J = 2), one thread:
# 31.5, 27.5 and 27.0 s in batches of 20, 10 and 5
CPU_BATCH = 5


class SBCResult(NamedTuple):
    ranks: dict[str, np.ndarray]  # name -> (R,) ranks in 0..L
    num_draws: int  # L
    pvalues: dict[str, float]


def _sym_noise(key: Array, J: int, d: int, dtype) -> Array:
    iu = jnp.triu_indices(d)
    M = jnp.zeros((J, d, d), dtype).at[:, iu[0], iu[1]].set(jax.random.normal(key, (J, iu[0].size), dtype))
    return M + jnp.swapaxes(jnp.triu(M, 1), -1, -2)


def simulate_from_prior(
    key: Array,
    pr: ResolvedPrior,
    n: Array,
    sigma_S: Array,
    sigma_z: Array,
    fixed_S: bool = False,
    sigma_u: Array | None = None,
) -> tuple[dict[str, Array], ModelData]:
    """One draw of the parameters from the prior and of the released statistics given them; with
    ``sigma_u`` the release has ``u~_j = y_j^T y_j + sigma_u w_j`` too, ``y_j^T y_j = z_j^T S_j^{-1} z_j +
    sigma_y^2 chi2_{n_j - d}`` (the projection of ``y_j`` on the columns of ``X_j`` and the residual's,
    independent of ``(S_j, z_j)``)."""
    J = n.shape[0]
    d = pr.m.shape[0]
    k = jax.random.split(key, 7)
    pd = prior_dists(pr)
    theta, sigma2, Sigma_x = pd["theta"].sample(k[0]), pd["sigma2"].sample(k[1]), pd["Sigma_x"].sample(k[2])
    theta = _scaled_by_features(theta, pr, Sigma_x)
    S = dist.Wishart(n, scale_matrix=Sigma_x).sample(k[3])
    z = dist.MultivariateNormal(S @ theta, covariance_matrix=sigma2 * S).sample(k[4])
    S_tilde = S if fixed_S else S + sigma_S[:, None, None] * _sym_noise(k[5], J, d, S.dtype)
    z_tilde = z + sigma_z[:, None] * jax.random.normal(k[6], (J, d), S.dtype)
    params = {"theta": theta, "sigma2": sigma2, "Sigma_x": Sigma_x, "S": S}
    eig = eigen_parties(S, z_tilde) if fixed_S else None  # what fixeds_data gives MCMC-fixedS
    data = ModelData(S_tilde, z_tilde, n.astype(S.dtype), sigma_S, sigma_z, jnp.asarray(3.0, S.dtype), eig)
    if sigma_u is not None:
        k_chi, k_u = jax.random.split(jax.random.fold_in(key, 1))  # the other draws as without y^T y
        fit = (z * jnp.linalg.solve(S, z[..., None])[..., 0]).sum(-1)
        yty = fit + sigma2 * 2.0 * jax.random.gamma(k_chi, (n - d) / 2.0, dtype=S.dtype)
        data = data._replace(u_tilde=yty + sigma_u * jax.random.normal(k_u, (J,), S.dtype), sigma_u=sigma_u)
    return params, data


def _scaled_by_features(theta: Array, pr: ResolvedPrior, Sigma_x: Array) -> Array:
    """A draw of ``N(m, C)`` carried to ``theta | Sigma_x ~ N(m, D^{-1} C D^{-1})`` where the prior scales
    ``theta`` by the features (:func:`~bayes_dpreg.model.prior.theta_feature_scale`)."""
    s = theta_feature_scale(pr, jnp.diagonal(Sigma_x, axis1=-2, axis2=-1))
    return theta if s is None else jnp.asarray(pr.m) + (theta - jnp.asarray(pr.m)) / s


def simulate_intercept_from_prior(
    key: Array, pr: ResolvedPrior, n: Array, sigma_S: Array, sigma_z: Array
) -> tuple[dict[str, Array], ModelData]:
    """One draw from the intercept model (App. B.2): ``theta`` (intercept first), ``sigma2``,
    ``Sigma_x``, ``mu_x`` from the prior, ``b_j ~ N(mu_x, Sigma_x / n_j)``,
    ``Sx_j ~ W(Sigma_x, n_j - 1)``, ``S0_j = intercept_design(b_j, Sx_j)`` (the Gram matrix of
    ``[1, x_i]`` for normal rows), ``z_j ~ N(S0_j theta, sigma2 S0_j)``, then the release."""
    J = n.shape[0]
    D = pr.m.shape[0]
    k = jax.random.split(key, 8)
    pd = prior_dists(pr)
    theta, sigma2, Sigma_x = pd["theta"].sample(k[0]), pd["sigma2"].sample(k[1]), pd["Sigma_x"].sample(k[2])
    mu_x = dist.MultivariateNormal(jnp.asarray(pr.mu_x), jnp.asarray(pr.mu_x_cov)).sample(k[3])
    b = dist.MultivariateNormal(mu_x, Sigma_x / n[:, None, None]).sample(k[4])
    Sx = dist.Wishart(n - 1.0, scale_matrix=Sigma_x).sample(k[5])
    S0 = intercept_design(b, Sx, n.astype(Sx.dtype))
    z = dist.MultivariateNormal(S0 @ theta, covariance_matrix=sigma2 * S0).sample(k[6])
    kS, kz = jax.random.split(k[7])
    S_tilde = S0 + sigma_S[:, None, None] * _sym_noise(kS, J, D, S0.dtype)
    z_tilde = z + sigma_z[:, None] * jax.random.normal(kz, (J, D), S0.dtype)
    params = {"theta": theta, "sigma2": sigma2, "Sigma_x": Sigma_x, "mu_x": mu_x}
    data = ModelData(S_tilde, z_tilde, n.astype(S0.dtype), sigma_S, sigma_z, jnp.asarray(3.0, S0.dtype))
    return params, data


@functools.partial(jax.jit, static_argnums=(5, 6))
def _simulate(
    keys: Array,
    pr: ResolvedPrior,
    n: Array,
    sigma_S: Array,
    sigma_z: Array,
    intercept: bool,
    fixed_S: bool,
    sigma_u: Array | None = None,
) -> tuple[dict, ModelData]:
    """One replication a key, from the prior: a program compiled once per shape, not once per call."""
    if intercept:
        one = lambda k: simulate_intercept_from_prior(k, pr, n, sigma_S, sigma_z)
    else:
        one = lambda k: simulate_from_prior(k, pr, n, sigma_S, sigma_z, fixed_S=fixed_S, sigma_u=sigma_u)
    return jax.vmap(one)(keys)


def summaries(z: dict) -> dict[str, Array]:
    """The scalar quantities whose ranks are tested, by name (``theta[0]``, ``sigma2``, ...), from parameters
    with any leading axes (replications, chains, draws)."""
    out = {f"theta[{i}]": z["theta"][..., i] for i in range(z["theta"].shape[-1])}
    out["sigma2"] = z["sigma2"]
    if "Sigma_x" in z:
        k = min(1, z["Sigma_x"].shape[-1] - 1)  # an off-diagonal entry, the variance when d = 1
        out[f"Sigma_x[0,{k}]"] = z["Sigma_x"][..., 0, k]
    if "S" in z:
        out["S[0][0,0]"] = z["S"][..., 0, 0, 0]
    if "mu_x" in z:
        out["mu_x[0]"] = z["mu_x"][..., 0]
    return out


def uniformity_pvalue(ranks: np.ndarray, num_draws: int, bins: int = 10) -> float:
    """Chi-square test that ranks in ``{0..L}`` are uniform, on ``bins`` equal bins (``L + 1`` divisible by bins)."""
    if (num_draws + 1) % bins:
        raise ValueError(f"num_draws + 1 = {num_draws + 1} must be divisible by bins = {bins}")
    counts = np.bincount(ranks * bins // (num_draws + 1), minlength=bins)
    expected = len(ranks) / bins
    stat = ((counts - expected) ** 2 / expected).sum()
    return float(chi2.sf(stat, bins - 1))


@public
def sbc(
    key: Array,
    method: str,
    pr: ResolvedPrior,
    n: np.ndarray,
    sigma_S: float,
    sigma_z: float,
    *,
    replications: int = 200,
    num_draws: int = 99,
    thin: int = 5,
    num_warmup: int = 500,
    options: dict | None = None,
    batch: int | None = None,
    sigma_u: float | None = None,
) -> SBCResult:
    """Run SBC for a registered MCMC ``method`` (``bayes_dpreg.samplers.SAMPLERS``) with kernel
    ``options`` (e.g. ``{"level_moves": False}``); one chain per replication, replications
    vmapped in batches of ``batch`` through :func:`bayes_dpreg.samplers.run_batched`. Default:
    :data:`CPU_BATCH` on a CPU backend, where vmapped NUTS chains step in lockstep and a batch waits
    for its longest trajectory, else all replications at once. The draws do not depend on it beyond
    rounding (programs of two batch shapes may round differently, and a chain carries the difference on).
    ``sigma_u``: the parties release ``y^T y`` too, with noise of that sd (``release(..., yty=True)``)."""
    sampler = get_sampler(method)
    if sampler.kernel is None or sampler.settings is None:
        raise ValueError(f"method {method!r} has no chain kernel to calibrate")
    if pr.eta is not None and "lkj" not in sampler.sigma_x_priors:
        raise ValueError(
            f"method {method!r} takes Sigma_x_prior in {sampler.sigma_x_priors}, not the separation prior 'lkj': "
            "resolve the prior from Prior(Sigma_x_prior='iw', ...)"
        )
    J = len(n)
    d = pr.m.shape[0]
    settings, rest = sampler.settings(dict(options or {}), d, num_warmup)
    if rest:
        raise TypeError(f"unexpected options {sorted(rest)}")
    n_arr = jnp.asarray(n, dtype=jnp.float64)
    sS = jnp.full(J, sigma_S, jnp.float64)
    sz = jnp.full(J, sigma_z, jnp.float64)
    k_sim, k_run = jax.random.split(key)
    if sampler.needs_intercept:
        keep: tuple[str, ...] = ("theta", "sigma2", "Sigma_x", "mu_x")
    else:
        keep = ("theta", "sigma2") if sampler.sbc_exact_S else ("theta", "sigma2", "Sigma_x")
        keep += () if sampler.sbc_exact_S or sampler.integrates_S else ("S",)
    keys = jax.random.split(k_sim, replications)
    su = None if sigma_u is None else jnp.full(J, sigma_u, jnp.float64)
    params, data = _simulate(keys, pr, n_arr, sS, sz, sampler.needs_intercept, sampler.sbc_exact_S, su)
    if sampler.reduce_data is not None:
        data = sampler.reduce_data(data)
    prs = jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (replications,) + jnp.shape(a)), pr)
    if batch is None:
        batch = CPU_BATCH if jax.default_backend() == "cpu" else replications
    draws, _, _ = run_batched(
        sampler.kernel,
        data,
        prs,
        settings,
        k_run,
        num_chains=1,
        num_warmup=num_warmup,
        num_samples=num_draws,
        thin=thin,
        keep=keep,
        batch=batch,
    )
    draws = jax.tree.map(lambda a: a[:, 0], draws)  # (R, L, ...)
    summ = summaries(draws)
    truth = summaries({k: params[k] for k in keep})
    ranks = {k: np.asarray((summ[k] < truth[k][:, None]).sum(1)) for k in truth}
    pvalues = {k: uniformity_pvalue(v, num_draws) for k, v in ranks.items()}
    return SBCResult(ranks, num_draws, pvalues)
