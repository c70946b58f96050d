r"""``normalx-intercept``: MCMC-normalX with an intercept and non-centred normal features (App. B.2).

The model is :func:`bayes_dpreg.model.densities.normalx_intercept_model`: ``x_i ~ N(mu_x, Sigma_x)``,
per party the row mean ``b_j ~ N(mu_x, Sigma_x / n_j)`` and the centred scatter
``Sx_j ~ W(Sigma_x, n_j - 1)``; the Gram matrix of ``[1, x_i]`` is
``S0_j = intercept_design(b_j, Sx_j)`` and replaces ``S_j`` in eq. (10). It is sampled as
``normalx-nuts`` samples eq. (10) (see :mod:`bayes_dpreg.samplers.normalx_nuts`): NUTS with
``theta`` (intercept first) integrated out and drawn from eq. (12) at every kept draw, through
the one chain driver (:func:`~bayes_dpreg.samplers.base.run_chains`). Coordinates:

* ``v``, ``c_j``: ``Sigma_x = L L^T`` and ``Sx_j = L W_j L^T`` exactly as ``normalx-nuts``'s
  ``Sigma_x`` and ``S_j`` (with ``n_j - 1`` degrees of freedom and the centred scatter
  ``S~_j[1:, 1:] - n_j b~_j b~_j^T``, ``b~_j = S~_j[0, 1:] / n_j``, as the data's estimate);
* ``u``: ``mu_x = mu~ + L u / sqrt(N)``, ``mu~ = sum_j S~_j[0, 1:] / N``, ``N = sum_j n_j``;
* ``e_j``: ``b_j = mu_x + L a_j / sqrt(n_j)`` with ``a_j = e_j + omega_j * sqrt(n_j) L^{-1}(b~_j - mu_x)``
  (elementwise ``omega_j,k = 1 / (1 + q_k sigma_S,j^2 / n_j)``, ``q_k`` the squared row norms of
  the pooled ``L^{-1}``): non-centred where the release noise of ``b_j`` swamps its spread
  ``Sigma_x / n_j``, centred at ``b~_j`` where the release pins it. Unit Jacobian (as ``c_j``).

With ``N(b_j; mu_x, Sigma_x / n_j) |db_j / da_j| = N(a_j; 0, I)`` and
``|dmu_x / du| \propto |L|``, the log-density of the coordinates is

.. math::
    \log IW(\Sigma_x)|J_v| + \sum_j \log W(W_j; I, n_j - 1)|J_{R_j}| + \log N(\mu_x; \mu_0, M_0)
    + \log|L| - \tfrac12 \sum_j \|a_j\|^2 + \log p(\tilde S \mid S0) + \log p(\sigma_y^2)
    + \log\sigma_y^2 + \log p(\tilde z \mid S0, \sigma_y^2),

the last factor with ``theta`` integrated out (:func:`~bayes_dpreg.model.closed_form.collapsed_log_lik`).
It is tested equal to the NumPyro model's density (theta marginalised through its conditional)
plus a numerically computed log-Jacobian. Needs ``release(..., intercept=True)`` statistics.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ..model.closed_form import theta_conditional
from ..model.densities import ModelData, intercept_design, model_data, sigma2_of
from ..model.linalg import from_log_cholesky, spd_inverse
from ..model.prior import ResolvedPrior
from ..stats import StackedStats
from . import normalx_nuts as nn
from .base import ChainKernel, MethodResult, Sampler

__all__ = ["IReference", "centred_data", "reference", "unpack", "log_density", "to_unconstrained", "KERNEL", "SAMPLER"]


class IReference(NamedTuple):
    """Data-based constants of the coordinates (a fixed affine map: no Jacobian)."""

    scatter: nn.Reference  # the coordinates of Sigma_x and Sx_j (normalx-nuts's, on centred_data)
    mu0: Array  # (d,) pooled row mean of the release
    b0: Array  # (J, d) each party's row mean from the release
    omega: Array  # (J, d) how far each a_j is centred


def centred_data(data: ModelData) -> ModelData:
    """The release seen as centred scatters: ``S~_j[1:, 1:] - n_j b~_j b~_j^T`` with ``n_j - 1``
    degrees of freedom (the data ``normalx-nuts``'s reference and coordinates take)."""
    b = data.S_tilde[:, 0, 1:] / data.n[:, None]
    scatter = data.S_tilde[:, 1:, 1:] - data.n[:, None, None] * b[:, :, None] * b[:, None, :]
    return data._replace(S_tilde=scatter, z_tilde=data.z_tilde[:, 1:], n=data.n - 1.0)


def reference(data: ModelData) -> IReference:
    """See the module docstring; ``omega`` uses the pooled ``Sigma_x`` estimate of the scatter reference."""
    cd = centred_data(data)
    scatter = nn.reference(cd, rotate=False)
    d = cd.z_tilde.shape[-1]
    b0 = data.S_tilde[:, 0, 1:] / data.n[:, None]
    mu0 = (data.n[:, None] * b0).sum(0) / data.n.sum()
    L0 = from_log_cholesky(scatter.v0, d)
    q = (jax.scipy.linalg.solve_triangular(L0, jnp.eye(d, dtype=L0.dtype), lower=True) ** 2).sum(-1)
    omega = 1.0 / (1.0 + q * data.sigma_S[:, None] ** 2 / data.n[:, None])
    return IReference(scatter, mu0, b0, omega)


def unpack(z: dict, data: ModelData, ref: IReference, pr: ResolvedPrior) -> dict[str, Array]:
    """``Sigma_x``'s factor ``L``, ``Sx``, ``mu_x``, ``b``, ``a`` (the standardised ``b``),
    ``S0`` and ``sigma2`` from the coordinates."""
    cd = centred_data(data)
    L, R, Sx, sigma2 = nn.unpack(z, cd, ref.scatter, pr)
    sqrt_n = jnp.sqrt(data.n)[:, None]
    mu = ref.mu0 + L @ z["u"] / jnp.sqrt(data.n.sum())
    h = sqrt_n * jax.scipy.linalg.solve_triangular(L, (ref.b0 - mu).T, lower=True).T
    a = z["e"] + ref.omega * h
    b = mu + (a @ L.T) / sqrt_n
    S0 = intercept_design(b, Sx, data.n)
    return {"L": L, "R": R, "Sx": Sx, "mu_x": mu, "a": a, "b": b, "S0": S0, "sigma2": sigma2}


def log_density(z: dict, data: ModelData, pr: ResolvedPrior, ref: IReference) -> Array:
    """Log-density of the coordinates (theta integrated out), up to a constant (module docstring)."""
    q = unpack(z, data, ref, pr)
    mu_prior = jax.scipy.stats.multivariate_normal.logpdf(q["mu_x"], jnp.asarray(pr.mu_x), jnp.asarray(pr.mu_x_cov))
    return (
        nn.sigma_x_log_density(q["L"], pr)
        + nn.wishart_log_density(q["R"], data.n - 1.0)
        + mu_prior
        + jnp.log(jnp.diagonal(q["L"])).sum()
        - 0.5 * (q["a"] ** 2).sum()
        + nn.observed_log_density(q["S0"], q["sigma2"], sigma2_of(z["ls2"], pr)[1], data, pr)
    )


def to_unconstrained(
    Sigma_x: Array,
    Sx: Array,
    mu_x: Array,
    b: Array,
    sigma2: Array,
    data: ModelData,
    ref: IReference,
    pr: ResolvedPrior,
) -> dict:
    """The inverse of :func:`unpack` (for tests and starting values)."""
    cd = centred_data(data)
    z = nn.to_unconstrained(Sigma_x, Sx, sigma2, cd, ref.scatter, pr)
    L = jnp.linalg.cholesky(Sigma_x)
    solve = lambda r: jax.scipy.linalg.solve_triangular(L, r.T, lower=True).T
    sqrt_n = jnp.sqrt(data.n)[:, None]
    u = solve((mu_x - ref.mu0)[None])[0] * jnp.sqrt(data.n.sum())
    a = sqrt_n * solve(b - mu_x)
    return {**z, "u": u, "e": a - ref.omega * sqrt_n * solve(ref.b0 - mu_x)}


LEVEL_SITES = ("v", "u", "ls2")


def init(key: Array, data: ModelData, pr: ResolvedPrior, settings: nn.NutsSettings) -> nn.NCState:
    """Dispersed starting values: standard normal coordinates (about one posterior or prior sd
    from the data's estimates), ``sigma_y^2`` from :func:`~bayes_dpreg.samplers.normalx_nuts.dispersed_sigma2_start`."""
    J, D = data.z_tilde.shape
    d = D - 1
    p = d * (d + 1) // 2
    k_v, k_c, k_u, k_e, k_s, k_nuts = jax.random.split(key, 6)
    ref = reference(data)
    dtype = data.S_tilde.dtype
    z0 = {
        "v": jax.random.normal(k_v, (p,), dtype),
        "c": jax.random.normal(k_c, (J, p), dtype),
        "u": jax.random.normal(k_u, (d,), dtype),
        "e": jax.random.normal(k_e, (J, d), dtype),
        "ls2": nn.dispersed_sigma2_start(k_s, pr, dtype),
    }
    init_kernel, _ = nn.nuts_kernels(settings, log_density)
    state = init_kernel(
        z0,
        settings.num_warmup,
        target_accept_prob=settings.target_accept_prob,
        max_tree_depth=settings.max_tree_depth,
        dense_mass=nn.mass_matrix(settings.dense_mass, (p + d) * (J + 1) + 1, p + d + 1, LEVEL_SITES),
        model_args=(data, pr, ref),
        rng_key=k_nuts,
    )
    return nn.NCState(state, ref)


def step(state: nn.NCState, data: ModelData, pr: ResolvedPrior, settings: nn.NutsSettings) -> nn.NCState:
    """One NUTS transition (adapting step size and mass matrix during warm-up)."""
    sample = nn.sample_kernel(settings, log_density, init, data, pr)
    return nn.NCState(sample(state.hmc, model_args=(data, pr, state.ref)), state.ref)


def draws(state: nn.NCState, data: ModelData, pr: ResolvedPrior, key: Array) -> dict:
    """The state's ``Sigma_x``, ``mu_x``, ``b``, ``Sx``, ``sigma2`` and ``theta`` from eq. (12) given ``S0``."""
    q = unpack(state.hmc.z, data, state.ref, pr)
    post = theta_conditional(
        q["S0"], data.z_tilde, q["sigma2"], data.sigma_z**2, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C))
    )
    L = q["L"]
    return {
        "theta": post.sample(key),
        "sigma2": q["sigma2"],
        "Sigma_x": L @ L.T,
        "mu_x": q["mu_x"],
        "b": q["b"],
        "Sx": q["Sx"],
    }


KERNEL = ChainKernel(init, step, draws, nn.info, vectorize=False, threads=True)  # chains one a core


def run(
    st: StackedStats, pr: ResolvedPrior, key: Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    """``fit``'s entry point; options as :func:`~bayes_dpreg.samplers.normalx_nuts.run_nuts`."""
    description = "NUTS (NumPyro), non-centred Sx_j = L W_j L^T and b_j, theta integrated out and drawn from eq. (12)"
    res = nn.run_nuts(KERNEL, description, st, pr, key, num_chains, num_samples, num_warmup, **options)
    res.attrs["model"] = "intercept with non-centred normal features (App. B.2); theta[0] is the intercept"
    return res


SAMPLER = Sampler(
    name="normalx-intercept",
    label="MCMC-normalX (intercept)",
    summary="normalX with an intercept and non-centred features (App. B.2) by NUTS, theta integrated out; "
    "needs intercept=True",
    run=run,
    kind="mcmc",
    needs_wishart=True,
    sigma_x_priors=("iw", "lkj"),
    sigma2_bound=True,
    needs_intercept=True,
    models_release_noise=True,
    num_warmup=500,
    num_samples=500,
    kernel=KERNEL,
    data=model_data,
    settings=nn.settings,
    options=nn.NUTS_OPTIONS,
)
