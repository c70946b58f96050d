"""Simulation-based calibration (Talts et al. 2018) of the samplers, vectorised over replications.

For each replication: draw ``(theta, sigma2, Sigma_x)`` from the prior, ``S_j ~ W(Sigma_x, n_j)``,
``z_j | S_j ~ N(S_j theta, sigma2 S_j)`` (exact, Prop. 3.1), release
``S~_j = S_j + sigma_S M_j``, ``z~_j = z_j + sigma_z v_j`` (eq. 8); run the sampler; record the
rank of each true value among ``L`` thinned posterior draws. If the sampler is
correct, every rank is uniform on ``{0, ..., L}``; uniformity is tested with a
chi-square test on equal-width bins.

For MCMC-fixedS the model is the one it targets: ``S_j`` known (``data.S_tilde = S_j``).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import Array
from scipy.stats import chi2

from . import kernels
from .models import ModelData, prior_dists
from .prior import ResolvedPrior

__all__ = ["SBCResult", "simulate_from_prior", "sbc", "uniformity_pvalue"]


class SBCResult(NamedTuple):
    ranks: dict[str, np.ndarray]  # name -> (R,) ranks in 0..L
    num_draws: int  # L
    pvalues: dict[str, float]


def _sym_noise(key: Array, J: int, d: int, dtype) -> Array:
    iu = jnp.triu_indices(d)
    M = jnp.zeros((J, d, d), dtype).at[:, iu[0], iu[1]].set(jax.random.normal(key, (J, iu[0].size), dtype))
    return M + jnp.swapaxes(jnp.triu(M, 1), -1, -2)


def simulate_from_prior(key: Array, pr: ResolvedPrior, n: Array, sigma_S: Array, sigma_z: Array,
                        fixed_S: bool = False) -> tuple[dict[str, Array], ModelData]:
    """One draw of the parameters from the prior and of the released statistics given them."""
    J = n.shape[0]
    d = pr.m.shape[0]
    k = jax.random.split(key, 7)
    pd = prior_dists(pr)
    theta, sigma2, Sigma_x = pd["theta"].sample(k[0]), pd["sigma2"].sample(k[1]), pd["Sigma_x"].sample(k[2])
    S = dist.Wishart(n, scale_matrix=Sigma_x).sample(k[3])
    z = dist.MultivariateNormal(S @ theta, covariance_matrix=sigma2 * S).sample(k[4])
    S_tilde = S if fixed_S else S + sigma_S[:, None, None] * _sym_noise(k[5], J, d, S.dtype)
    z_tilde = z + sigma_z[:, None] * jax.random.normal(k[6], (J, d), S.dtype)
    params = {"theta": theta, "sigma2": sigma2, "Sigma_x": Sigma_x, "S": S}
    data = ModelData(S_tilde, z_tilde, n.astype(S.dtype), sigma_S, sigma_z, jnp.asarray(3.0, S.dtype))
    return params, data


def _summaries(z: dict) -> dict[str, Array]:
    """The scalar quantities whose ranks are tested."""
    out = {f"theta[{i}]": z["theta"][i] for i in range(z["theta"].shape[0])}
    out["sigma2"] = z["sigma2"]
    if "Sigma_x" in z:
        out["Sigma_x[0,1]"] = z["Sigma_x"][0, 1]
        out["S[0][0,0]"] = z["S"][0, 0, 0]
    return out


def _hmc_chain_draws(settings: kernels.Settings, num_draws: int, thin: int) -> Callable:
    """normalx-hmc driven through the kernel's own ``init``/``sample`` so that it can be vmapped."""

    def run(key: Array, data: ModelData, pr: ResolvedPrior) -> dict[str, Array]:
        kern = kernels.normalx_hmc(data, pr)
        args = (data, pr)
        state = kern.init(key, settings.num_warmup, None, args, {})
        step = lambda i, s: kern.sample(s, args, {})
        state = jax.lax.fori_loop(0, settings.num_warmup, step, state)
        constrain = kern.postprocess_fn(args, {})  # the HMC sites are held unconstrained

        def one(s, _):
            s = jax.lax.fori_loop(0, thin, step, s)
            return s, _summaries(constrain(s.z))

        return jax.lax.scan(one, state, None, length=num_draws)[1]

    return run


def _chain_draws(method: str, settings: kernels.Settings, num_draws: int, thin: int) -> Callable:
    if method == "normalx-hmc":
        return _hmc_chain_draws(settings, num_draws, thin)
    init, step = {
        "normalx": (kernels.normalx_init, kernels.normalx_step),
        "fixeds": (kernels.fixeds_init, kernels.fixeds_step),
    }[method]

    def run(key: Array, data: ModelData, pr: ResolvedPrior) -> dict[str, Array]:
        state = init(key, data, pr, settings)
        state = jax.lax.fori_loop(0, settings.num_warmup, lambda i, s: step(s, data, pr, settings), state)

        def one(s, _):
            s = jax.lax.fori_loop(0, thin, lambda i, s: step(s, data, pr, settings), s)
            return s, _summaries(s.z)

        return jax.lax.scan(one, state, None, length=num_draws)[1]

    return run


def uniformity_pvalue(ranks: np.ndarray, num_draws: int, bins: int = 10) -> float:
    """Chi-square test that ranks in ``{0..L}`` are uniform, on ``bins`` equal bins (``L + 1`` divisible by bins)."""
    if (num_draws + 1) % bins:
        raise ValueError(f"num_draws + 1 = {num_draws + 1} must be divisible by bins = {bins}")
    counts = np.bincount(ranks * bins // (num_draws + 1), minlength=bins)
    expected = len(ranks) / bins
    stat = ((counts - expected) ** 2 / expected).sum()
    return float(chi2.sf(stat, bins - 1))


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
    settings: kernels.Settings = kernels.Settings(num_warmup=500),
    batch: int = 100,
) -> SBCResult:
    """Run SBC for ``method`` in ``{"normalx", "fixeds", "normalx-hmc"}``; replications vmapped in batches."""
    J = len(n)
    n_arr = jnp.asarray(n, dtype=jnp.float64)
    sS = jnp.full(J, sigma_S, jnp.float64)
    sz = jnp.full(J, sigma_z, jnp.float64)
    run = _chain_draws(method, settings, num_draws, thin)

    def one(k):
        k_sim, k_run = jax.random.split(k)
        params, data = simulate_from_prior(k_sim, pr, n_arr, sS, sz, fixed_S=(method == "fixeds"))
        draws = run(k_run, data, pr)
        truth = _summaries(params if method != "fixeds" else {"theta": params["theta"], "sigma2": params["sigma2"]})
        return {name: jnp.sum(draws[name] < truth[name]) for name in truth}

    fn = jax.jit(jax.vmap(one))
    keys = jax.random.split(key, replications)
    parts = [fn(keys[i:i + batch]) for i in range(0, replications, batch)]
    ranks = {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}
    pvalues = {k: uniformity_pvalue(v, num_draws) for k, v in ranks.items()}
    return SBCResult(ranks, num_draws, pvalues)
