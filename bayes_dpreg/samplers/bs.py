"""``bs``: MCMC-B&S, Bernstein & Sheldon (2019) extended to J parties (Alparslan et al. 2023, App. C.1).

Each party releases ``ss~_j = [upper(S~_j), z~_j, u~_j] = ss_j + sigma_j N(0, I_D)``
(:func:`bayes_dpreg.release_bs`), ``D = d(d+1)/2 + d + 1``. The model: ``(theta, sigma^2) ~
NIG(a0, b0, m, Lambda0)`` (``theta | sigma^2 ~ N(m, sigma^2 Lambda0^{-1})``), ``Sigma_x ~
IW(Lambda, kappa)``, rows ``x ~ N(0, Sigma_x)``, and by the central limit theorem
``ss_j | theta, sigma^2, Sigma_x ~ N(n_j mu(.), n_j Sigma(.))`` with the one-row moments of
:func:`bayes_dpreg.model.wishart_moments.ss_moments` (fourth moments of ``N(0, Sigma_x)``; cost
``O(D^3) = O(d^6)`` per party and iteration). One Gibbs iteration:

1. for all parties at once, ``ss_j ~ N(mu_post, Sigma_post)`` with
   ``Sigma_post = (Sigma_prior^{-1} + I/sigma_j^2)^{-1}``,
   ``mu_post = Sigma_post (Sigma_prior^{-1} mu_prior + ss~_j / sigma_j^2)``, drawn by Matheron's
   rule without inverting the possibly ill-conditioned CLT covariance (:func:`_ss_draw`;
   :func:`ss_conditional` is the same law in closed form, for tests);
2. ``Sigma_x ~ IW(Lambda + sum_j S_j, kappa + n)``;
3. ``(theta, sigma^2) ~ NIG(a_n, b_n, mu_n, Lambda_n)`` with ``Lambda_n = sum_j S_j + Lambda0``,
   ``mu_n = Lambda_n^{-1}(sum_j z_j + Lambda0 m)``, ``a_n = a0 + n/2``,
   ``b_n = b0 + (sum_j u_j + m^T Lambda0 m - mu_n^T Lambda_n mu_n)/2``
   (:func:`bayes_dpreg.model.closed_form.nig_posterior`).

The CLT draw of ``ss_j`` need not be the statistics of any data set: ``S_j`` can be
indefinite and ``b_n`` can be ``<= 0``, which leaves steps 2-3 undefined. Here ``S_j`` is
replaced by ``nearestPSD(S_j)`` in steps 2-3 and ``b_n`` is floored at ``b0`` (the
prior's information on ``sigma^2``); both events are counted per draw in ``sample_stats``
(``psd_projected``, ``b_floored``) so that a user sees when the approximation is strained
(small ``n_j``, large noise). The Gibbs sampler targets the CLT model only approximately
(step 3 is the exact-data conditional), as in Bernstein & Sheldon (2019).

The kernel is :func:`bs_init`, :func:`bs_step` on a :class:`BSState` (:class:`BS` wraps them for
``numpyro.infer.MCMC``); it needs statistics from :func:`bayes_dpreg.release_bs` (noisy
``[upper(S), z, y^T y]``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..model.closed_form import nig_posterior
from ..model.densities import sigma_x_conditional
from ..model.linalg import nearest_psd_and_min_eig, pooled_covariance, symmetrize
from ..model.prior import ResolvedPrior
from ..model.wishart_moments import ss_moments, ss_vector
from ..stats import StackedStats
from .base import RUN_OPTIONS, ChainKernel, Sampler, chain_run, state_draws
from .mh import Settings, _PureKernel

__all__ = [
    "BSData",
    "BSState",
    "bs_data",
    "bs_init",
    "bs_step",
    "BS",
    "unpack_ss",
    "ss_conditional",
    "KERNEL",
    "SAMPLER",
    "run",
    "data",
    "settings",
]


class BSData(NamedTuple):
    """The released B&S statistics (a pytree)."""

    ss_tilde: Array  # (J, D) noisy [upper(S~_j), z~_j, u~_j]
    n: Array  # (J,)
    sigma: Array  # (J,) noise sd of each party's release


class BSState(NamedTuple):
    z: dict  # {"theta": (d,), "sigma2": (), "Sigma_x": (d, d)}
    psd_projected: Array  # () parties whose CLT draw of S_j was indefinite (this iteration)
    b_floored: Array  # () 1 if b_n <= b0 was floored (this iteration)
    iteration: Array
    rng_key: Array


def bs_data(S_tilde: Array, z_tilde: Array, u_tilde: Array, n: Array, sigma: Array) -> BSData:
    return BSData(
        ss_vector(jnp.asarray(S_tilde), jnp.asarray(z_tilde), jnp.asarray(u_tilde)),
        jnp.asarray(n, dtype=jnp.float64),
        jnp.asarray(sigma),
    )


def unpack_ss(ss: Array, d: int) -> tuple[Array, Array, Array]:
    """``[upper(S), z, u] -> (S, z, u)`` (inverse of :func:`~bayes_dpreg.model.wishart_moments.ss_vector`)."""
    p = d * (d + 1) // 2
    iu = np.triu_indices(d)
    S = jnp.zeros(ss.shape[:-1] + (d, d), ss.dtype).at[..., iu[0], iu[1]].set(ss[..., :p])
    S = S + jnp.swapaxes(jnp.triu(S, 1), -1, -2)
    return S, ss[..., p : p + d], ss[..., p + d]


def ss_conditional(mu_prior: Array, cov_prior: Array, ss_tilde: Array, noise_var: Array) -> tuple[Array, Array, Array]:
    """``N(mu_prior, cov_prior)`` prior and ``ss~ = ss + N(0, noise_var I)``: the conditional of ``ss``
    as ``(mean, U, scale)`` with covariance ``U diag(scale^2) U^T`` (step 1 of the module docstring)."""
    lam, U = jnp.linalg.eigh(cov_prior)
    lam = jnp.maximum(lam, 0.0)
    s = noise_var[..., None]
    proj = lambda v: jnp.einsum("...ki,...k->...i", U, v)
    back = lambda c: jnp.einsum("...ik,...k->...i", U, c)
    mean = back((s * proj(mu_prior) + lam * proj(ss_tilde)) / (lam + s))
    return mean, U, jnp.sqrt(lam * s / (lam + s))


def _clt_prior_draw(key: Array, theta: Array, sigma2: Array, Sigma_x: Array, n: Array) -> Array:
    """A draw of ``N(n mu, n Sigma)`` (the CLT prior of ``ss``) without factorising the D x D
    ``Sigma``: ``ss`` is ``upper(w w^T)`` for ``w = (x, y) ~ N(0, Omega)``,
    ``Omega = [[Sigma_x, c], [c^T, s2]]``, and ``L Z L^T`` (``Omega = L L^T``, ``Z`` symmetric with
    ``Cov(Z_ij, Z_kl) = d_ik d_jl + d_il d_jk``) has exactly ``Cov(w w^T)``. Cost ``O(J d^3)``."""
    d = theta.shape[-1]
    Lx = jnp.linalg.cholesky(Sigma_x)
    # chol(Omega) in closed form (y = theta^T x + sigma e): no factorisation of Omega, whose last
    # pivot sigma^2 is lost to rounding when theta^T Sigma_x theta >> sigma^2
    L = jnp.block([[Lx, jnp.zeros((d, 1), Lx.dtype)], [(theta @ Lx)[None, :], jnp.sqrt(sigma2)[None, None]]])
    Omega = L @ L.T
    J = n.shape[0]
    A = jax.random.normal(key, (J, d + 1, d + 1), Omega.dtype)
    Z = (A + jnp.swapaxes(A, -1, -2)) / jnp.sqrt(2.0)  # off-diagonal var 1, diagonal var 2
    G = n[:, None, None] * Omega + jnp.sqrt(n)[:, None, None] * (L @ Z @ L.T)
    return ss_vector(G[:, :d, :d], G[:, :d, d], G[:, d, d])


def _ss_draw(key: Array, theta: Array, sigma2: Array, Sigma_x: Array, data: BSData) -> Array:
    """Step 1 by Matheron's rule: with ``x ~ N(mu_prior, P)`` (:func:`_clt_prior_draw`) and
    ``e ~ N(0, s I)``, ``x + P (P + s I)^{-1} (ss~ - x - e)`` has the conditional law of
    :func:`ss_conditional`. Only ``P + s I`` is factorised, which ``s = sigma_j^2 > 0`` keeps
    well conditioned."""
    k1, k2 = jax.random.split(key)
    x = _clt_prior_draw(k1, theta, sigma2, Sigma_x, data.n)
    P = data.n[:, None, None] * ss_moments(theta, sigma2, Sigma_x).cov
    s = data.sigma**2
    e = jnp.sqrt(s)[:, None] * jax.random.normal(k2, x.shape, x.dtype)
    LA = jnp.linalg.cholesky(P + s[:, None, None] * jnp.eye(x.shape[-1], dtype=x.dtype))
    w = jax.scipy.linalg.cho_solve((LA, True), (data.ss_tilde - x - e)[..., None])[..., 0]
    return x + jnp.einsum("...ik,...k->...i", P, w)


def _conditional_draws(key: Array, ss: Array, data: BSData, pr: ResolvedPrior) -> tuple[dict, Array, Array]:
    """Steps 2-3: ``Sigma_x`` and ``(theta, sigma^2)`` given the statistics ``ss`` (J, D)."""
    d = pr.m.shape[-1]
    k_sx, k_nig = jax.random.split(key)
    S, z, u = unpack_ss(ss, d)
    S_psd, min_eig = nearest_psd_and_min_eig(S)
    projected = (min_eig < 0).sum()
    S_sum = symmetrize(S_psd.sum(0))
    Sigma_x = sigma_x_conditional(S_sum, data.n.sum(), pr).sample(k_sx)
    post = nig_posterior(
        S_sum, z.sum(0), u.sum(), data.n.sum(), jnp.asarray(pr.m), jnp.asarray(pr.nig_precision), pr.a, pr.b
    )
    floored = post.b <= pr.b
    post = post._replace(b=jnp.maximum(post.b, pr.b))
    theta, sigma2 = post.sample(k_nig, 1)
    return {"theta": theta[0], "sigma2": sigma2[0], "Sigma_x": Sigma_x}, projected, floored


def bs_init(rng_key: Array, data: BSData, pr: ResolvedPrior, settings: Settings = Settings()) -> BSState:
    """Steps 2-3 given ``ss = [upper(n_j Sigma^), z~_j, u~_j]``, ``Sigma^`` the pooled positive
    definite estimate of :func:`~bayes_dpreg.model.linalg.pooled_covariance` (as MCMC-normalX starts).
    Starting from ``S~_j`` itself fails when it is near singular: ``theta``'s conditional mean
    ``(sum S_j + Lambda0)^{-1} sum z~_j`` then runs to 1e5 and the next CLT draw is NaN
    (d = 5, J = 1, eps = 0.1)."""
    del settings
    key, k0 = jax.random.split(rng_key)
    d = pr.m.shape[-1]
    S_tilde, z_tilde, u_tilde = unpack_ss(data.ss_tilde, d)
    S0 = data.n[:, None, None] * pooled_covariance(S_tilde.sum(0), data.n.sum(), jnp.max(data.sigma))
    z, projected, floored = _conditional_draws(k0, ss_vector(S0, z_tilde, u_tilde), data, pr)
    return BSState(z, projected, floored.astype(jnp.int32), jnp.zeros((), jnp.int32), key)


def bs_step(state: BSState, data: BSData, pr: ResolvedPrior, settings: Settings = Settings()) -> BSState:
    """One Gibbs iteration of MCMC-B&S (App. C.1; module docstring)."""
    del settings
    key, k_ss, k_rest = jax.random.split(state.rng_key, 3)
    z = state.z
    ss = _ss_draw(k_ss, z["theta"], z["sigma2"], z["Sigma_x"], data)
    new, projected, floored = _conditional_draws(k_rest, ss, data, pr)
    return BSState(new, projected, floored.astype(jnp.int32), state.iteration + 1, key)


class BS(_PureKernel):
    """MCMC-B&S as a NumPyro kernel: ``MCMC(BS(prior), ...).run(key, bs_data(...))``."""

    _init_fn = staticmethod(bs_init)
    _step_fn = staticmethod(bs_step)
    extra_fields = ("psd_projected", "b_floored")


# -- the sampler ----------------------------------------------------------------------------


def info(state: BSState) -> dict:
    return {"psd_projected": state.psd_projected, "b_floored": state.b_floored}


KERNEL = ChainKernel(bs_init, bs_step, state_draws, info)


def data(st: StackedStats) -> BSData:
    """The kernel's data from :func:`~bayes_dpreg.release_bs` statistics (which carry ``u``)."""
    if st.u is None:
        raise ValueError("method 'bs' needs statistics released with bayes_dpreg.release_bs (the noisy y^T y)")
    return bs_data(*(jnp.asarray(a) for a in (st.S, st.z, st.u, st.n, st.sigma_S)))


def settings(options: dict, d: int, num_warmup: int) -> tuple[Settings, dict]:
    del d
    return Settings(num_warmup=int(num_warmup)), dict(options)


def summarise(
    samples: dict, extra: dict, data: BSData, pr: ResolvedPrior, settings: Settings, num_warmup: int
) -> tuple[dict, dict]:
    """The counts of projected and floored draws as sample statistics, their fractions as attributes."""
    del samples, data, pr, settings
    attrs = {
        "num_warmup": num_warmup,
        "psd_projected_fraction": float((extra["psd_projected"] > 0).mean()),
        "b_floored_fraction": float(extra["b_floored"].mean()),
        "model": "CLT approximation of [upper(S), z, y^T y] (Bernstein & Sheldon 2019), NIG prior",
    }
    return extra, attrs


run = chain_run(KERNEL, data, settings, summarise)

SAMPLER = Sampler(
    name="bs",
    label="MCMC-B&S",
    summary="Bernstein & Sheldon's CLT model of noisy [S, z, y^T y] by Gibbs (App. C.1); needs release_bs",
    run=run,
    mechanisms=("bs",),
    centred_features=True,
    models_release_noise=True,
    uses_yty=True,
    kernel=KERNEL,
    data=data,
    settings=settings,
    options=RUN_OPTIONS,
)
