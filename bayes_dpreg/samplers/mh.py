"""The pieces shared by the Metropolis-within-Gibbs kernels (``normalx``, ``fixeds``, ``bs``).

Like NumPyro's ``hmc_util``, nothing here is a sampler:

* :class:`Settings`, the static tuning that MCMC-normalX and MCMC-fixedS take (MCMC-B&S takes it
  for ``num_warmup`` only), and :func:`kernel_settings`, which reads it off ``fit``'s options;
* the Metropolis-Hastings accept step and the warm-up adaptation (Robbins-Monro steps, the
  running moments of adaptive Metropolis);
* the block ``(theta, sigma_y^2) | S_{1:J}`` that MCMC-normalX and MCMC-fixedS both draw:
  ``theta`` from its Gaussian full conditional (eq. 12) and a random walk on ``log sigma_y^2``,
  with ``theta`` integrated out when ``collapse_theta`` (the collapsed likelihood helpers);
  :class:`_GivenS` carries the ``z~`` likelihood given sampled (normalX) or fixed (fixedS) ``S_j``;
* :class:`_PureKernel`, which wraps a pure ``init``/``step`` pair as a
  ``numpyro.infer.mcmc.MCMCKernel`` (:class:`~bayes_dpreg.samplers.normalx.NormalX`,
  :class:`~bayes_dpreg.samplers.fixeds.FixedS`, :class:`~bayes_dpreg.samplers.bs.BS`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array
from numpyro.infer.mcmc import MCMCKernel

from ..model.closed_form import (
    collapsed_log_lik,
    eigen_parties,
    log_lik_z_eigen,
    party_terms,
    party_terms_eigen,
    theta_conditional_from_terms,
)
from ..model.densities import ModelData, log_lik_z, prior_dist
from ..model.linalg import spd_inverse
from ..model.prior import ResolvedPrior

__all__ = ["Settings", "kernel_settings", "LEVEL_MOVES_MAX_D"]


class Settings(NamedTuple):
    """Tuning of the moves (static). ``collapse_theta=False, level_moves=False`` is Algorithm 1 as published."""

    num_warmup: int = 1000
    target_accept_S: float = 0.2  # the paper's text (their code: 0.1)
    target_accept_sigma2: float = 0.44  # optimal for a 1-d random walk
    target_accept_level: float = 0.3  # group and eigen-direction moves
    target_accept_noncentred: float = 0.234  # the 15-d (d = 5) adaptive Metropolis move
    adapt_exponent: float = 0.6  # gamma_i = i^-0.6
    adapt_delay: float = 0.1  # adaptation starts after this fraction of warm-up (as the authors do)
    init_log_step: float = -1.0  # initial sd of the log sigma2 random walk
    collapse_theta: bool = True  # S and sigma2 moves with theta integrated out
    level_moves: bool = True  # group, eigen-direction and non-centred moves of (Sigma_x, S) (needs collapse_theta)
    update_sigma2: bool = True  # False holds sigma2 at its initial value (for tests against closed forms)


LEVEL_MOVES_MAX_D = 8


def kernel_settings(options: dict[str, Any], d: int, num_warmup: int) -> tuple[Settings, dict[str, Any]]:
    """Split :class:`Settings` fields from other run options (``options`` is consumed).
    ``level_moves="auto"`` (default) turns the level moves on for ``d <= 8``: at d = 5 they
    raise the ESS of theta 35-250x on ill-conditioned problems (``studies/convergence.py``),
    while at d = 10-20 each iteration costs 3-20x more and the adaptive proposal does not
    learn within a normal warm-up (``benchmarks/bench_samplers.py``)."""
    fields = {k: options.pop(k) for k in list(options) if k in Settings._fields and k != "num_warmup"}
    if fields.get("level_moves", "auto") == "auto":
        fields["level_moves"] = d <= LEVEL_MOVES_MAX_D
    return Settings(num_warmup=int(num_warmup), **fields), options


def _mh_accept(key: Array, log_ratio: Array) -> tuple[Array, Array]:
    """Accept with probability ``min(1, exp(log_ratio))``; NaN counts as rejection."""
    log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
    accept = jnp.log(jax.random.uniform(key, log_ratio.shape)) < log_ratio
    return accept, jnp.exp(jnp.minimum(log_ratio, 0.0))


def _robbins_monro(
    log_x: Array, accept_prob: Array, target: float, iteration: Array, settings: Settings, sign: float
) -> Array:
    """One Robbins-Monro step inside the adaptation window of warm-up, none outside it."""
    start = jnp.floor(settings.adapt_delay * settings.num_warmup)
    gamma = jnp.maximum(iteration - start + 1.0, 1.0) ** (-settings.adapt_exponent)
    adapted = log_x + sign * gamma * (accept_prob - target)
    return jnp.where((iteration >= start) & (iteration < settings.num_warmup), adapted, log_x)


def _running_moments(mean: Array, cov: Array, v: Array, it: Array, settings: Settings) -> tuple[Array, Array]:
    """Welford update of the adaptive-Metropolis moments inside the adaptation window."""
    start = jnp.floor(settings.adapt_delay * settings.num_warmup)
    k = jnp.maximum(it - start + 1.0, 1.0) + 1.0
    new_mean = mean + (v - mean) / k
    new_cov = cov + (jnp.outer(v - mean, v - new_mean) - cov) / k
    inside = (it >= start) & (it < settings.num_warmup)
    return jnp.where(inside, new_mean, mean), jnp.where(inside, new_cov, cov)


class _GivenS(NamedTuple):
    """The ``z~`` likelihood given the Gram matrices, as functions of ``sigma_y^2`` (and ``theta``):
    ``terms(sigma2)`` (:class:`~bayes_dpreg.model.closed_form.PartyTerms`) and ``log_lik(theta, sigma2)``."""

    terms: Any
    log_lik: Any
    num_obs: int


def _given_S(S: Array, data: ModelData) -> _GivenS:
    """Given sampled ``S_j`` (Cholesky factorisations per call)."""
    return _GivenS(
        lambda s2: party_terms(S, data.z_tilde, s2, data.sigma_z**2),
        lambda th, s2: log_lik_z(S, th, s2, data),
        data.z_tilde.size,
    )


def _given_fixed_S(data: ModelData) -> _GivenS:
    """Given MCMC-fixedS's fixed ``S_j``, through their eigendecompositions (``data.eig``, from
    :func:`~bayes_dpreg.model.densities.fixeds_data`; computed here when absent)."""
    E = data.eig if data.eig is not None else eigen_parties(data.S_tilde, data.z_tilde)
    sz2 = data.sigma_z**2
    return _GivenS(
        lambda s2: party_terms_eigen(E, s2, sz2),
        lambda th, s2: log_lik_z_eigen(E, th, s2, sz2),
        data.z_tilde.size,
    )


def _log_target_sigma2(log_s2: Array, lik: _GivenS, theta: Array, pr: ResolvedPrior) -> Array:
    s2 = jnp.exp(log_s2)
    return prior_dist(pr, "sigma2").log_prob(s2) + lik.log_lik(theta, s2) + log_s2


def _sigma2_move(key: Array, sigma2: Array, log_step: Array, log_target) -> tuple[Array, Array]:
    """Random-walk MH on ``log sigma_y^2``; ``log_target(log_s2)`` includes the Jacobian ``+ log_s2``."""
    k_prop, k_acc = jax.random.split(key)
    log_s2 = jnp.log(sigma2)
    prop = log_s2 + jnp.exp(log_step) * jax.random.normal(k_prop, dtype=log_s2.dtype)
    accept, prob = _mh_accept(k_acc, log_target(prop) - log_target(log_s2))
    return jnp.where(accept, jnp.exp(prop), sigma2), prob


def _theta_draw(key: Array, lik: _GivenS, sigma2: Array, pr: ResolvedPrior) -> Array:
    """``theta | S, sigma_y^2`` (eq. 12)."""
    post = theta_conditional_from_terms(lik.terms(sigma2), jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)))
    return post.sample(key)


def _collapsed(terms_U: Array, terms_u: Array, terms_c: Array, pr: ResolvedPrior, num_obs: int) -> Array:
    return collapsed_log_lik(terms_U, terms_u, terms_c, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)), num_obs)


def _collapsed_lik(S: Array, sigma2: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """``log p(z~_{1:J} | S_{1:J}, sigma_y^2)`` with theta integrated out."""
    t = party_terms(S, data.z_tilde, sigma2, data.sigma_z**2)
    return _collapsed(t.U.sum(0), t.u.sum(0), t.c.sum(0), pr, data.z_tilde.size)


def _log_target_sigma2_collapsed(log_s2: Array, lik: _GivenS, pr: ResolvedPrior) -> Array:
    s2 = jnp.exp(log_s2)
    t = lik.terms(s2)
    return (
        prior_dist(pr, "sigma2").log_prob(s2) + _collapsed(t.U.sum(0), t.u.sum(0), t.c.sum(0), pr, lik.num_obs) + log_s2
    )


def _update_theta_sigma2(
    key: Array,
    lik: _GivenS,
    theta: Array,
    sigma2: Array,
    log_step: Array,
    pr: ResolvedPrior,
    settings: Settings,
) -> tuple[Array, Array, Array]:
    """``(theta, sigma_y^2)`` given ``S``: collapsed (sigma2 with theta integrated out, then
    theta exactly) or as in Algorithms 1-2 (theta exactly, then sigma2 given theta)."""
    k_th, k_s2 = jax.random.split(key)
    if not settings.update_sigma2:
        return _theta_draw(k_th, lik, sigma2, pr), sigma2, jnp.ones_like(sigma2)
    if settings.collapse_theta:
        sigma2, acc = _sigma2_move(k_s2, sigma2, log_step, lambda v: _log_target_sigma2_collapsed(v, lik, pr))
        theta = _theta_draw(k_th, lik, sigma2, pr)
    else:
        theta = _theta_draw(k_th, lik, sigma2, pr)
        sigma2, acc = _sigma2_move(k_s2, sigma2, log_step, lambda v: _log_target_sigma2(v, lik, theta, pr))
    return theta, sigma2, acc


class _PureKernel(MCMCKernel):
    """``MCMCKernel`` around a pure (init, step) pair; data are ``model_args[0]``."""

    sample_field = "z"
    _init_fn: Any = None
    _step_fn: Any = None
    extra_fields: tuple[str, ...] = ()

    def __init__(self, prior: ResolvedPrior, settings: Settings | None = None, **settings_kw: Any) -> None:
        self.prior = prior
        self.settings = settings or Settings(**settings_kw)
        self._batched = False

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        self.settings = self.settings._replace(num_warmup=int(num_warmup))
        init = lambda key: type(self)._init_fn(key, model_args[0], self.prior, self.settings)
        batched = jnp.ndim(rng_key) > (0 if jax.dtypes.issubdtype(rng_key.dtype, jax.dtypes.prng_key) else 1)
        self._batched = bool(batched)  # MCMC(chain_method="vectorized") batches keys and states
        state = jax.vmap(init)(rng_key) if batched else init(rng_key)
        if init_params is not None:
            state = state._replace(z={**state.z, **init_params})
        return state

    def sample(self, state, model_args, model_kwargs):
        step = lambda s: type(self)._step_fn(s, model_args[0], self.prior, self.settings)
        return jax.vmap(step)(state) if self._batched else step(state)
