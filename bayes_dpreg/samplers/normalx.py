"""``normalx``: MCMC-normalX (Algorithm 1) with Metropolis-Hastings moves of each ``S_j``.

The kernel (:func:`normalx_init`, :func:`normalx_step` on a :class:`NormalXState`; :class:`NormalX`
wraps them for ``numpyro.infer.MCMC``) and its :class:`~bayes_dpreg.samplers.base.Sampler`.
``collapse_theta=False, level_moves=False`` is Algorithm 1 exactly. Cheap per iteration, but at
large ``n_j`` and ``d > 8`` (where the level moves are off) it mixes slowly; the default
``normalx-nuts`` samples the same model. The moves it shares with MCMC-fixedS (the
``(theta, sigma_y^2)`` block, MH and adaptation) are in :mod:`bayes_dpreg.samplers.mh`.

Every log-density comes from :mod:`bayes_dpreg.model.densities` (the NumPyro
distributions of the model); ``theta``'s full conditional is
:func:`bayes_dpreg.model.closed_form.theta_conditional` (eq. 12).

One iteration of MCMC-normalX:

1. ``Sigma_x ~ IW(Lambda + sum_j S_j, kappa + n)`` (eq. 11);
2. for all parties at once, MH on ``S_j`` with the proposal
   ``S'_j ~ W(S_j/alpha_j, alpha_j)`` (mean ``S_j``) and acceptance ratio

   .. math::
      \\frac{p(S'_j|\\Sigma_x)\\,p(\\tilde S_j|S'_j)\\,p(\\tilde z_j|S'_j,\\theta,\\sigma_y^2)\\,
             W(S_j; S'_j/\\alpha_j, \\alpha_j)}
            {p(S_j|\\Sigma_x)\\,p(\\tilde S_j|S_j)\\,p(\\tilde z_j|S_j,\\theta,\\sigma_y^2)\\,
             W(S'_j; S_j/\\alpha_j, \\alpha_j)};

3. ``theta`` from its Gaussian full conditional (eq. 12);
4. MH on ``sigma_y^2``: a Gaussian random walk on ``log sigma_y^2``, whose
   target carries the Jacobian ``sigma_y^2``. On the log scale the move never
   proposes an invalid (negative) value and its step is scale-free, unlike the
   authors' random walk on ``sigma_y^2`` that rejects negative proposals.

During warm-up, ``log alpha_j`` and the log-step are adapted by Robbins-Monro,
``log alpha_j <- log alpha_j - i^{-0.6} (a_ij - target_S)`` with ``a_ij`` the
acceptance probability (Andrieu & Thoms 2008), then frozen: the kept draws come
from a fixed, valid Markov kernel. Each chain adapts on its own.
MCMC-fixedS (:mod:`bayes_dpreg.samplers.fixeds`) is steps 3-4 with ``S_j = nearestPSD(S~_j)`` fixed.

Beyond the paper (``Settings(collapse_theta=False, level_moves=False)`` gives
Algorithm 1 exactly), with the same stationary distribution:

* *theta collapsed*: the ``S_j`` and ``sigma_y^2`` moves target their conditionals
  with ``theta`` integrated out (:func:`~bayes_dpreg.model.closed_form.collapsed_log_lik`)
  and ``theta`` is then drawn exactly: a partially collapsed Gibbs sampler
  (van Dyk & Park 2008).
* *level moves* of ``(Sigma_x, S_1..S_J)`` together: with ``n_j`` large,
  ``Sigma_x | S`` and ``S_j | Sigma_x`` are very tight (relative width ~``n^-1/2``)
  while their common level is only weakly fixed by the noisy ``S~_j``, and the
  Gibbs steps crawl along it. Three MH moves act on all of them by congruence
  ``x -> G x G^T``: an isotropic ``G = expm(eps H)``, one scaling per
  eigen-direction of ``Sigma_x``, and an adaptive-Metropolis random walk on
  ``logchol(Sigma_x)`` in the non-centred parametrisation ``S_j = L W_j L^T``.
  At n = 1e5, d = J = 5, eps = 1 (paper's simulation and prior; 5 seeds), the
  smallest bulk ESS of ``theta`` over 4 x 5000 draws is 946-1498 with max R-hat
  <= 1.01, against 6-28 and R-hat up to 1.67 for Algorithm 1 on 4 of the 5 seeds
  (``studies/convergence.py``, ``docs/results/convergence/table.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import Array
from jax.scipy.linalg import solve_triangular

from ..model.closed_form import party_terms
from ..model.densities import (
    ModelData,
    S_prior_dist,
    S_tilde_dist,
    log_joint,
    model_data,
    normalx_model,
    prior_dist,
    sigma_x_conditional,
    upper,
    z_dist,
)
from ..model.linalg import from_log_cholesky, log_cholesky, pooled_covariance, spd_inverse, symmetrize
from ..model.prior import ResolvedPrior
from .base import RUN_OPTIONS, ChainKernel, Sampler, chain_run, state_draws
from .mh import (
    Settings,
    _collapsed,
    _collapsed_lik,
    _given_S,
    _mh_accept,
    _PureKernel,
    _robbins_monro,
    _running_moments,
    _theta_draw,
    _update_theta_sigma2,
    kernel_settings,
)

__all__ = [
    "NormalXState",
    "NormalXAdaptState",
    "NormalXInfo",
    "normalx_init",
    "normalx_step",
    "initial_S",
    "NormalX",
    "KERNEL",
    "SAMPLER",
    "run",
    "settings",
]


class NormalXAdaptState(NamedTuple):
    """Proposal scales adapted during warm-up (Robbins-Monro, adaptive Metropolis), then frozen."""

    log_alpha: Array  # (J,) Wishart proposal degrees of freedom, log scale
    log_step: Array  # () sd of the log sigma2 random walk, log scale
    log_group_step: Array  # () scale of the group move, log scale
    basis: Array  # (d, d) eigenvectors of Sigma_x, tracked during warm-up then frozen
    log_eigen_step: Array  # (d,) scales of the eigen-direction moves, log scale
    am_mean: Array  # (p,) running mean of the log-Cholesky vector of Sigma_x (warm-up)
    am_cov: Array  # (p, p) running covariance (warm-up), frozen afterwards
    log_am_scale: Array  # () log multiplier of the adaptive-Metropolis proposal covariance


class NormalXInfo(NamedTuple):
    """Acceptance probabilities of the last iteration's moves."""

    accept_S: Array  # (J,) the S_j moves
    accept_sigma2: Array  # () the sigma2 move
    accept_group: Array  # () the group move
    accept_eigen: Array  # (d,) the eigen-direction moves
    accept_noncentred: Array  # () the non-centred move


class NormalXState(NamedTuple):
    """A chain of MCMC-normalX: the draw ``z``, the adaptation state, the last step's info."""

    z: dict  # {"S": (J,d,d), "Sigma_x": (d,d), "theta": (d,), "sigma2": ()}
    adapt: NormalXAdaptState
    info: NormalXInfo
    iteration: Array  # () iterations done
    rng_key: Array


def _sigma_x_draw(key: Array, S: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """``Sigma_x | S_{1:J} ~ IW(Lambda + sum_j S_j, kappa + sum_j n_j)`` (eq. 11)."""
    return sigma_x_conditional(S.sum(0), data.n.sum(), pr).sample(key)


def _log_S_tilde(S: Array, data: ModelData) -> Array:
    """``log p(S~_j | S_j)`` per party (the model's ``S_tilde`` site)."""
    return S_tilde_dist(S, data).log_prob(upper(data.S_tilde))


def _log_obs(S: Array, theta: Array, sigma2: Array, data: ModelData) -> Array:
    """``log p(S~_j | S_j) + log p(z~_j | S_j, theta, sigma2)`` per party (the model's observed sites)."""
    return _log_S_tilde(S, data) + z_dist(S, theta, sigma2, data.sigma_z).log_prob(data.z_tilde)


def _logdet(L: Array) -> Array:
    return 2.0 * jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)).sum(-1)


def _wishart_proposal(key: Array, S: Array, log_alpha: Array, Sigma_x: Array, data: ModelData) -> tuple[Array, Array]:
    """``S'_j ~ W(S_j/alpha_j, alpha_j)`` for all parties, and per party

    ``log p(S'_j|Sigma_x) - log p(S_j|Sigma_x) + log W(S_j; S'_j/alpha_j, alpha_j) - log W(S'_j; S_j/alpha_j, alpha_j)``

    from the Wishart log-density ``(n-d-1)/2 log|S| - tr(Sigma^{-1} S)/2 - n/2 log|Sigma| + c(n)``:
    the prior part is ``(n_j-d-1)/2 (log|S'| - log|S|) - tr(Sigma_x^{-1}(S' - S))/2`` and the Hastings
    part ``(2 alpha - d - 1)/2 (log|S| - log|S'|) - alpha/2 (tr(S'^{-1} S) - tr(S^{-1} S'))``.
    Equal to differences of ``numpyro.distributions.Wishart.log_prob`` (tested), at a fraction of
    the cost: one Cholesky factor per matrix."""
    d = S.shape[-1]
    alpha = jnp.exp(log_alpha)
    prop = dist.Wishart(alpha, scale_matrix=S / alpha[:, None, None]).sample(key)
    L, Lp = jnp.linalg.cholesky(S), jnp.linalg.cholesky(prop)
    ld, ldp = _logdet(L), _logdet(Lp)
    tr_pinv_S = (solve_triangular(Lp, L, lower=True) ** 2).sum((-2, -1))  # tr(S'^-1 S) = ||Lp^-1 L||_F^2
    tr_Sinv_p = (solve_triangular(L, Lp, lower=True) ** 2).sum((-2, -1))
    tr_diff = jnp.einsum("kl,jlk->j", spd_inverse(Sigma_x), prop - S)  # tr(Sigma_x^-1 (S' - S))
    prior = 0.5 * (data.n - d - 1.0) * (ldp - ld) - 0.5 * tr_diff
    hastings = 0.5 * (2.0 * alpha - d - 1.0) * (ld - ldp) - 0.5 * alpha * (tr_pinv_S - tr_Sinv_p)
    return prop, prior + hastings


def _S_move(
    key: Array, S: Array, log_alpha: Array, theta: Array, sigma2: Array, Sigma_x: Array, data: ModelData
) -> tuple[Array, Array]:
    """MH for every ``S_j`` at once with the Wishart proposal ``W(S_j/alpha_j, alpha_j)`` (Alg. 1)."""
    k_prop, k_acc = jax.random.split(key)
    prop, wishart = _wishart_proposal(k_prop, S, log_alpha, Sigma_x, data)
    log_ratio = wishart + _log_obs(prop, theta, sigma2, data) - _log_obs(S, theta, sigma2, data)
    accept, prob = _mh_accept(k_acc, log_ratio)
    return jnp.where(accept[:, None, None], prop, S), prob


def initial_S(data: ModelData) -> Array:
    """A starting ``S_j`` inside the typical set: ``n_j Sigma^``, ``Sigma^`` the pooled
    ``nearestPSD(sum_j S~_j)/n`` plus a small ridge.

    The authors start at ``nearestPSD(S~_j) + I``. When ``n_j`` is large,
    ``p(S_j | Sigma_x)`` is very tight around ``n_j Sigma_x`` while each
    ``S~_j`` is off by its noise, so that point has a log-density hundreds of
    thousands of units below the typical set (a one-off check at n = 1e5, d = 5,
    J = 5, eps = 1: -4.9e5 against -1.5e3 at the truth) and the chain spends its
    warm-up climbing.
    Pooling the parties averages the noise and respects the Wishart prior."""
    return data.n[:, None, None] * pooled_covariance(data.S_tilde.sum(0), data.n.sum(), jnp.max(data.sigma_S))


def _S_move_collapsed(
    key: Array, S: Array, log_alpha: Array, sigma2: Array, Sigma_x: Array, data: ModelData, pr: ResolvedPrior
) -> tuple[Array, Array]:
    """MH for each ``S_j`` targeting ``p(S_j | S_-j, Sigma_x, sigma_y^2, data)`` with ``theta``
    integrated out (:func:`~bayes_dpreg.model.closed_form.collapsed_log_lik`).

    Proposals, the Wishart/noise factors and the per-party likelihood terms are
    computed for all parties at once; only the accept decisions, which couple
    the parties through ``theta``'s marginal, run in sequence (O(d^3) each)."""
    J, d = data.z_tilde.shape
    k_prop, k_acc = jax.random.split(key)
    prop, wishart = _wishart_proposal(k_prop, S, log_alpha, Sigma_x, data)
    local = wishart + _log_S_tilde(prop, data) - _log_S_tilde(S, data)  # NaN is rejected below
    old = party_terms(S, data.z_tilde, sigma2, data.sigma_z**2)
    new = party_terms(prop, data.z_tilde, sigma2, data.sigma_z**2)
    log_u = jnp.log(jax.random.uniform(k_acc, (J,), dtype=S.dtype))

    def body(carry, j):
        Us, us, cs, ll = carry
        Us2, us2, cs2 = Us - old.U[j] + new.U[j], us - old.u[j] + new.u[j], cs - old.c[j] + new.c[j]
        ll2 = _collapsed(Us2, us2, cs2, pr, J * d)
        log_ratio = local[j] + ll2 - ll
        log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
        acc = log_u[j] < log_ratio
        carry = jax.tree.map(lambda a, b: jnp.where(acc, a, b), (Us2, us2, cs2, ll2), (Us, us, cs, ll))
        return carry, (acc, jnp.exp(jnp.minimum(log_ratio, 0.0)))

    sums = (old.U.sum(0), old.u.sum(0), old.c.sum(0))
    _, (accept, prob) = jax.lax.scan(body, sums + (_collapsed(*sums, pr, J * d),), jnp.arange(J))
    return jnp.where(accept[:, None, None], prop, S), prob


def _level_target(S: Array, Sigma_x: Array, sigma2: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """``log p(Sigma_x) + sum_j [log p(S_j|Sigma_x) + log p(S~_j|S_j)] + log p(z~|S, sigma2)``,
    theta integrated out: the target of the level moves, up to terms constant in ``(Sigma_x, S)``.
    The moves use :func:`_level_rest` and the Wishart identity of :func:`_congruence_mh`;
    this complete form is what the tests compare them with."""
    return S_prior_dist(Sigma_x, data).log_prob(S).sum() + _level_rest(S, Sigma_x, sigma2, data, pr)


def _level_rest(S: Array, Sigma_x: Array, sigma2: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """The level target without the Wishart factors ``p(S_j | Sigma_x)``."""
    return (
        prior_dist(pr, "Sigma_x").log_prob(Sigma_x) + _log_S_tilde(S, data).sum() + _collapsed_lik(S, sigma2, data, pr)
    )


class _Level(NamedTuple):
    """``(S, Sigma_x)`` and its :func:`_level_rest`, carried through the level moves."""

    S: Array
    Sigma_x: Array
    rest: Array


def _congruence_mh(
    key: Array,
    cur: _Level,
    G: Array,
    logdet_G: Array,
    log_jac: Array,
    sigma2: Array,
    data: ModelData,
    pr: ResolvedPrior,
) -> tuple[_Level, Array]:
    """Accept or reject ``(S_j, Sigma_x) -> (G S_j G^T, G Sigma_x G^T)``; ``log_jac`` is the
    log-Jacobian term of the (involutive) proposal, ``logdet_G = log|det G|``.

    Under a joint congruence ``tr(Sigma_x^{-1} S_j)`` is invariant, so each Wishart factor
    ``log p(S_j | Sigma_x)`` changes by exactly ``-(d + 1) log|det G|``: only the prior of
    ``Sigma_x``, the ``S~`` likelihood and the collapsed ``z~`` likelihood are re-evaluated."""
    J, d = data.z_tilde.shape
    S_new, Sx_new = symmetrize(G @ cur.S @ G.T), symmetrize(G @ cur.Sigma_x @ G.T)
    rest_new = _level_rest(S_new, Sx_new, sigma2, data, pr)
    log_ratio = rest_new - cur.rest - J * (d + 1) * logdet_G + log_jac
    accept, prob = _mh_accept(key, log_ratio)
    new = _Level(S_new, Sx_new, rest_new)
    return jax.tree.map(lambda a, b: jnp.where(accept, a, b), new, cur), prob


def _group_move(
    key: Array, cur: _Level, sigma2: Array, log_scale: Array, data: ModelData, pr: ResolvedPrior
) -> tuple[_Level, Array]:
    """``G = expm(eps H)``, ``H`` symmetric with iid N(0, 1) upper triangle. ``(x, H) -> (G x G^T, -H)``
    is an involution; congruence on J + 1 symmetric d x d matrices has Jacobian
    ``|det G|^{(J+1)(d+1)} = exp((J+1)(d+1) eps tr H)`` (Liu & Sabatti 2000; Tierney 1998)."""
    J, d = data.z_tilde.shape
    iu = jnp.triu_indices(d)
    H = (
        jnp.zeros((d, d), cur.S.dtype)
        .at[iu]
        .set(jax.random.normal(jax.random.fold_in(key, 0), (iu[0].size,), cur.S.dtype))
    )
    H = H + jnp.triu(H, 1).T
    w, E = jnp.linalg.eigh(H)
    eps = jnp.exp(log_scale)
    G = (E * jnp.exp(eps * w)) @ E.T
    logdet_G = eps * jnp.trace(H)
    return _congruence_mh(jax.random.fold_in(key, 1), cur, G, logdet_G, (J + 1) * (d + 1) * logdet_G, sigma2, data, pr)


def _eigen_moves(
    key: Array, cur: _Level, sigma2: Array, basis: Array, log_steps: Array, data: ModelData, pr: ResolvedPrior
) -> tuple[_Level, Array]:
    """For each column ``e_k`` of an orthonormal ``basis``: ``G_k = I + (e^{eps_k u} - 1) e_k e_k^T``,
    ``u ~ N(0, 1)``; ``(x, u) -> (G x G, -u)`` is an involution with Jacobian
    ``e^{(J+1)(d+1) eps_k u}``. Each eigen-direction of ``Sigma_x`` gets its own step: the
    one where the ``S_j`` are lost in the release noise needs far larger relative steps."""
    J, d = data.z_tilde.shape

    def body(cur, k):
        kk = jax.random.fold_in(key, k)
        eps_u = jnp.exp(log_steps[k]) * jax.random.normal(jax.random.fold_in(kk, 0), dtype=cur.S.dtype)
        G = jnp.eye(d, dtype=cur.S.dtype) + jnp.expm1(eps_u) * jnp.outer(basis[:, k], basis[:, k])
        return _congruence_mh(jax.random.fold_in(kk, 1), cur, G, eps_u, (J + 1) * (d + 1) * eps_u, sigma2, data, pr)

    return jax.lax.scan(body, cur, jnp.arange(d))


def _noncentred_move(
    key: Array, cur: _Level, sigma2: Array, prop_chol: Array, data: ModelData, pr: ResolvedPrior
) -> tuple[_Level, Array]:
    """Random walk on ``v = logchol(Sigma_x)`` holding ``W_j = L^{-1} S_j L^{-T}`` fixed (the
    non-centred parametrisation ``S_j = L W_j L^T``), ``v' = v + prop_chol @ N(0, I)``.

    The target in ``(v, W)`` is ``pi(Sigma_x, S)`` times the Jacobian of
    ``(v, W) -> (Sigma_x, S)``: ``2^d prod_i L_ii^{d-i+1}`` for ``Sigma_x = L L^T``, ``prod_i L_ii``
    for the log-diagonal and ``|L|^{d+1}`` per ``S_j``, i.e. up to a constant
    ``sum_i (d - i + 2 + J(d + 1)) log L_ii`` (i from 1). With ``G = L' L^{-1}`` the move is
    ``S_j -> G S_j G^T``, ``Sigma_x -> L' L'^T``."""
    J, d = data.z_tilde.shape
    v = log_cholesky(cur.Sigma_x)
    v_new = v + prop_chol @ jax.random.normal(jax.random.fold_in(key, 0), v.shape, v.dtype)
    L, L_new = from_log_cholesky(v, d), from_log_cholesky(v_new, d)
    G = jax.scipy.linalg.solve_triangular(L.T, L_new.T, lower=False).T
    dlog_diag = jnp.log(jnp.diagonal(L_new)) - jnp.log(jnp.diagonal(L))
    weights = jnp.arange(d + 1, 1, -1) + J * (d + 1)  # d - i + 2 + J(d + 1), i = 1..d
    return _congruence_mh(jax.random.fold_in(key, 1), cur, G, dlog_diag.sum(), weights @ dlog_diag, sigma2, data, pr)


def _level_moves(
    key: Array,
    S: Array,
    Sigma_x: Array,
    sigma2: Array,
    adapt: NormalXAdaptState,
    it: Array,
    data: ModelData,
    pr: ResolvedPrior,
    settings: Settings,
) -> tuple[Array, Array, NormalXAdaptState, tuple[Array, Array, Array]]:
    """Group, eigen-direction and non-centred moves of ``(Sigma_x, S_1..S_J)`` with their warm-up
    adaptation. Returns the new ``S, Sigma_x``, the adaptation state and the three moves'
    acceptance probabilities."""
    k_g, k_e, k_nc = jax.random.split(key, 3)
    cur = _Level(S, Sigma_x, _level_rest(S, Sigma_x, sigma2, data, pr))
    cur, acc_g = _group_move(k_g, cur, sigma2, adapt.log_group_step, data, pr)
    basis = jnp.where(it < settings.num_warmup, jnp.linalg.eigh(cur.Sigma_x)[1], adapt.basis)
    cur, acc_e = _eigen_moves(k_e, cur, sigma2, basis, adapt.log_eigen_step, data, pr)
    p = adapt.am_mean.shape[0]
    cov = jnp.exp(adapt.log_am_scale) * (adapt.am_cov + 1e-10 * jnp.eye(p, dtype=S.dtype))
    cur, acc_nc = _noncentred_move(k_nc, cur, sigma2, jnp.linalg.cholesky(cov), data, pr)
    am_mean, am_cov = _running_moments(adapt.am_mean, adapt.am_cov, log_cholesky(cur.Sigma_x), it, settings)
    target = settings.target_accept_level
    adapt = adapt._replace(
        log_group_step=_robbins_monro(adapt.log_group_step, acc_g, target, it, settings, 1.0),
        log_eigen_step=_robbins_monro(adapt.log_eigen_step, acc_e, target, it, settings, 1.0),
        log_am_scale=_robbins_monro(adapt.log_am_scale, acc_nc, settings.target_accept_noncentred, it, settings, 1.0),
        am_mean=am_mean,
        am_cov=am_cov,
        basis=basis,
    )
    return cur.S, cur.Sigma_x, adapt, (acc_g, acc_e, acc_nc)


def normalx_init(rng_key: Array, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> NormalXState:
    """Initial state: ``S_j`` from :func:`initial_S`, ``Sigma_x`` and ``theta`` from their
    conditionals, ``sigma_y^2 = ||Y||/3`` as in the authors' code (times ``exp(N(0, 0.5^2))``
    so that chains start apart), ``alpha_j = n_j d(d+1)/(2 * 2.38^2)``: a proposal about as
    wide as the Wishart prior of ``S_j`` scaled by the optimal random-walk factor
    ``2.38/sqrt(dim)`` (Roberts & Rosenthal 2001), ``dim = d(d+1)/2``."""
    J, d = data.z_tilde.shape
    k_sx, k_th, k_s2, k_next = jax.random.split(rng_key, 4)
    S = initial_S(data)
    sigma2 = data.y_bound / 3.0 * jnp.exp(0.5 * jax.random.normal(k_s2, dtype=S.dtype))
    theta = _theta_draw(k_th, _given_S(S, data), sigma2, pr)
    z = {"S": S, "Sigma_x": _sigma_x_draw(k_sx, S, data, pr), "theta": theta, "sigma2": sigma2}
    log_alpha = jnp.log(jnp.maximum(data.n * (d * (d + 1) / 2.0) / 2.38**2, d + 1.0))
    zero = jnp.zeros((), S.dtype)
    log_group = jnp.log(0.5 / jnp.sqrt(data.n.sum() * d * (d + 1)))  # about the width of Sigma_x | S
    basis = jnp.linalg.eigh(z["Sigma_x"])[1]
    log_eigen = jnp.full(d, jnp.log(1.0 / jnp.sqrt(data.n.sum())), S.dtype)
    p = d * (d + 1) // 2
    adapt = NormalXAdaptState(
        log_alpha=log_alpha,
        log_step=zero + settings.init_log_step,
        log_group_step=log_group,
        basis=basis,
        log_eigen_step=log_eigen,
        am_mean=log_cholesky(z["Sigma_x"]),
        am_cov=jnp.eye(p, dtype=S.dtype) / data.n.sum(),
        log_am_scale=jnp.log(2.38**2 / p) + zero,
    )
    info = NormalXInfo(jnp.zeros(J, S.dtype), zero, zero, jnp.zeros(d, S.dtype), zero)
    return NormalXState(z, adapt, info, jnp.zeros((), jnp.int32), k_next)


def normalx_step(
    state: NormalXState, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()
) -> NormalXState:
    """One iteration of MCMC-normalX (Algorithm 1), with warm-up adaptation (see the module docstring)."""
    key, k_sx, k_S, k_lv, k_ts = jax.random.split(state.rng_key, 5)
    z, adapt, it = state.z, state.adapt, state.iteration
    d = data.z_tilde.shape[-1]
    Sigma_x = _sigma_x_draw(k_sx, z["S"], data, pr)
    acc_level = (state.info.accept_group, state.info.accept_eigen, state.info.accept_noncentred)
    if settings.collapse_theta:
        S, acc_S = _S_move_collapsed(k_S, z["S"], adapt.log_alpha, z["sigma2"], Sigma_x, data, pr)
        if settings.level_moves:
            S, Sigma_x, adapt, acc_level = _level_moves(k_lv, S, Sigma_x, z["sigma2"], adapt, it, data, pr, settings)
    else:
        S, acc_S = _S_move(k_S, z["S"], adapt.log_alpha, z["theta"], z["sigma2"], Sigma_x, data)
    theta, sigma2, acc_s2 = _update_theta_sigma2(
        k_ts, _given_S(S, data), z["theta"], z["sigma2"], adapt.log_step, pr, settings
    )
    log_alpha = _robbins_monro(adapt.log_alpha, acc_S, settings.target_accept_S, it, settings, -1.0)
    adapt = adapt._replace(
        log_alpha=jnp.maximum(log_alpha, jnp.log(d + 1.0)),  # a Wishart needs alpha > d - 1
        log_step=_robbins_monro(adapt.log_step, acc_s2, settings.target_accept_sigma2, it, settings, 1.0),
    )
    return NormalXState(
        z={"S": S, "Sigma_x": Sigma_x, "theta": theta, "sigma2": sigma2},
        adapt=adapt,
        info=NormalXInfo(acc_S, acc_s2, *acc_level),
        iteration=it + 1,
        rng_key=key,
    )


class NormalX(_PureKernel):
    """MCMC-normalX (Algorithm 1) as a NumPyro kernel: ``MCMC(NormalX(prior), ...).run(key, data)``."""

    _init_fn = staticmethod(normalx_init)
    _step_fn = staticmethod(normalx_step)
    extra_fields = tuple(f"info.{f}" for f in NormalXInfo._fields) + ("adapt.log_alpha", "adapt.log_step")


# -- the sampler ----------------------------------------------------------------------------


def info(state: NormalXState) -> dict:
    i, a = state.info, state.adapt
    return {
        "accept_prob_S": i.accept_S,
        "log_alpha": a.log_alpha,
        "accept_prob_sigma2": i.accept_sigma2,
        "log_step": a.log_step,
        "accept_prob_group": i.accept_group,
        "accept_prob_eigen": i.accept_eigen,
        "accept_prob_noncentred": i.accept_noncentred,
    }


KERNEL = ChainKernel(normalx_init, normalx_step, state_draws, info)


def settings(options: dict, d: int, num_warmup: int) -> tuple[Settings, dict]:
    return kernel_settings(dict(options), d, num_warmup)


def summarise(
    samples: dict, extra: dict, data: ModelData, pr: ResolvedPrior, settings: Settings, num_warmup: int
) -> tuple[dict, dict]:
    """Sample statistics (the log joint, the S and sigma2 moves' acceptance and scales, the level
    moves' acceptance where they ran) and attributes of a run."""
    stats = {
        "lp": log_joint(normalx_model, data, pr, {k: samples[k] for k in ("theta", "sigma2", "Sigma_x", "S")}),
        "accept_prob_S": extra["accept_prob_S"],
        "alpha": np.exp(extra["log_alpha"]),
        "accept_prob_sigma2": extra["accept_prob_sigma2"],
        "step_size_sigma2": np.exp(extra["log_step"]),
    }
    if settings.collapse_theta and settings.level_moves:
        stats.update({k: extra[k] for k in ("accept_prob_group", "accept_prob_eigen", "accept_prob_noncentred")})
    attrs = {
        "num_warmup": num_warmup,
        "target_accept_S": settings.target_accept_S,
        "target_accept_sigma2": settings.target_accept_sigma2,
        "collapse_theta": int(settings.collapse_theta),
        "level_moves": int(settings.level_moves),
        "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included)",
        "alpha_final": np.exp(extra["log_alpha"][:, -1]).ravel().tolist(),
    }
    return stats, attrs


run = chain_run(KERNEL, model_data, settings, summarise)

SAMPLER = Sampler(
    name="normalx",
    label="MCMC-normalX",
    summary="the normalX model (eq. 10) by Metropolis-within-Gibbs (Alg. 1, with collapsed theta and level moves)",
    run=run,
    needs_wishart=True,
    centred_features=True,
    models_release_noise=True,
    kernel=KERNEL,
    data=model_data,
    settings=settings,
    options=Settings._fields[1:] + RUN_OPTIONS,
)
