"""MCMC kernels of Alparslan et al. (2023): MCMC-normalX (Alg. 1) and MCMC-fixedS (Alg. 2).

Pure ``init``/``step`` functions on NamedTuple states (in the style of
BlackJAX), so that chains, replications and parties can be vectorised with
``vmap``; :class:`NormalX` and :class:`FixedS` wrap them as
``numpyro.infer.mcmc.MCMCKernel`` for ``numpyro.infer.MCMC``.

Every log-density comes from :mod:`bayes_dpreg.models` (the NumPyro
distributions of the model); ``theta``'s full conditional is
:func:`bayes_dpreg.closed_form.theta_conditional` (eq. 12).

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
MCMC-fixedS is steps 3-4 with ``S_j = nearestPSD(S~_j)`` fixed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from jax import Array
from numpyro.infer.mcmc import MCMCKernel

from .closed_form import theta_conditional
from .linalg import nearest_psd, spd_inverse
from .models import ModelData, log_lik_z, log_target_S, prior_dists
from .prior import ResolvedPrior

__all__ = [
    "Settings",
    "NormalXState",
    "FixedSState",
    "normalx_init",
    "normalx_step",
    "fixeds_init",
    "fixeds_step",
    "NormalX",
    "FixedS",
]


class Settings(NamedTuple):
    """Tuning of the MH moves (static)."""

    num_warmup: int = 1000
    target_accept_S: float = 0.2  # the paper's text (their code: 0.1)
    target_accept_sigma2: float = 0.44  # optimal for a 1-d random walk
    adapt_exponent: float = 0.6  # gamma_i = i^-0.6
    init_log_step: float = -1.0  # initial sd of the log sigma2 random walk
    adapt_delay: float = 0.1  # adaptation starts after this fraction of warm-up (as the authors do)


class NormalXState(NamedTuple):
    z: dict  # {"S": (J,d,d), "Sigma_x": (d,d), "theta": (d,), "sigma2": ()}
    log_alpha: Array  # (J,) Wishart proposal degrees of freedom, log scale
    log_step: Array  # () sd of the log sigma2 random walk, log scale
    accept_S: Array  # (J,) acceptance probabilities of the last S moves
    accept_sigma2: Array  # () acceptance probability of the last sigma2 move
    iteration: Array  # () iterations done
    rng_key: Array


class FixedSState(NamedTuple):
    z: dict  # {"theta": (d,), "sigma2": ()}
    log_step: Array
    accept_sigma2: Array
    iteration: Array
    rng_key: Array


def _mh_accept(key: Array, log_ratio: Array) -> tuple[Array, Array]:
    """Accept with probability ``min(1, exp(log_ratio))``; NaN counts as rejection."""
    log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
    accept = jnp.log(jax.random.uniform(key, log_ratio.shape)) < log_ratio
    return accept, jnp.exp(jnp.minimum(log_ratio, 0.0))


def _robbins_monro(log_x: Array, accept_prob: Array, target: float, iteration: Array,
                   settings: Settings, sign: float) -> Array:
    """One Robbins-Monro step inside the adaptation window of warm-up, none outside it."""
    start = jnp.floor(settings.adapt_delay * settings.num_warmup)
    gamma = jnp.maximum(iteration - start + 1.0, 1.0) ** (-settings.adapt_exponent)
    adapted = log_x + sign * gamma * (accept_prob - target)
    return jnp.where((iteration >= start) & (iteration < settings.num_warmup), adapted, log_x)


def _log_target_sigma2(log_s2: Array, S: Array, theta: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    s2 = jnp.exp(log_s2)
    return prior_dists(pr)["sigma2"].log_prob(s2) + log_lik_z(S, theta, s2, data) + log_s2


def _sigma2_move(key: Array, sigma2: Array, log_step: Array, S: Array, theta: Array,
                 data: ModelData, pr: ResolvedPrior) -> tuple[Array, Array]:
    """Random-walk MH on ``log sigma_y^2`` (Jacobian included in the target)."""
    k_prop, k_acc = jax.random.split(key)
    log_s2 = jnp.log(sigma2)
    prop = log_s2 + jnp.exp(log_step) * jax.random.normal(k_prop, dtype=log_s2.dtype)
    log_ratio = _log_target_sigma2(prop, S, theta, data, pr) - _log_target_sigma2(log_s2, S, theta, data, pr)
    accept, prob = _mh_accept(k_acc, log_ratio)
    return jnp.where(accept, jnp.exp(prop), sigma2), prob


def _theta_draw(key: Array, S: Array, sigma2: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    post = theta_conditional(S, data.z_tilde, sigma2, data.sigma_z**2, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)))
    return post.sample(key)


def _sigma_x_draw(key: Array, S: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """``Sigma_x | S_{1:J} ~ IW(Lambda + sum_j S_j, kappa + sum_j n_j)`` (eq. 11)."""
    post = dist.InverseWishart(pr.kappa + data.n.sum(), scale_matrix=jnp.asarray(pr.Lambda) + S.sum(0))
    return post.sample(key)


def _S_move(key: Array, S: Array, log_alpha: Array, theta: Array, sigma2: Array, Sigma_x: Array,
            data: ModelData) -> tuple[Array, Array]:
    """MH for every ``S_j`` at once with the Wishart proposal ``W(S_j/alpha_j, alpha_j)``."""
    k_prop, k_acc = jax.random.split(key)
    alpha = jnp.exp(log_alpha)
    fwd = dist.Wishart(alpha, scale_matrix=S / alpha[:, None, None])
    prop = fwd.sample(k_prop)
    bwd = dist.Wishart(alpha, scale_matrix=prop / alpha[:, None, None])
    log_ratio = (
        log_target_S(prop, theta, sigma2, Sigma_x, data) - log_target_S(S, theta, sigma2, Sigma_x, data)
        + bwd.log_prob(S) - fwd.log_prob(prop)
    )
    accept, prob = _mh_accept(k_acc, log_ratio)
    return jnp.where(accept[:, None, None], prop, S), prob


def initial_S(data: ModelData) -> Array:
    """A starting ``S_j`` inside the typical set: ``n_j Sigma^``, ``Sigma^`` the pooled
    ``nearestPSD(sum_j S~_j)/n`` plus a small ridge.

    The authors start at ``nearestPSD(S~_j) + I``. When ``n_j`` is large,
    ``p(S_j | Sigma_x)`` is very tight around ``n_j Sigma_x`` while each
    ``S~_j`` is off by its noise, so that point has a log-density hundreds of
    thousands of units below the typical set (measured: -4.9e5 against -1.5e3
    at n = 1e5, d = 5, J = 5, eps = 1) and the chain spends its warm-up climbing.
    Pooling the parties averages the noise and respects the Wishart prior."""
    d = data.z_tilde.shape[-1]
    n = data.n.sum()
    pooled = nearest_psd(data.S_tilde.sum(0)) / n
    ridge = 1e-3 * jnp.trace(pooled) / d + jnp.max(data.sigma_S) / n
    Sigma_hat = pooled + ridge * jnp.eye(d, dtype=pooled.dtype)
    return data.n[:, None, None] * Sigma_hat


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
    theta = _theta_draw(k_th, S, sigma2, data, pr)
    z = {"S": S, "Sigma_x": _sigma_x_draw(k_sx, S, data, pr), "theta": theta, "sigma2": sigma2}
    log_alpha = jnp.log(jnp.maximum(data.n * (d * (d + 1) / 2.0) / 2.38**2, d + 1.0))
    zero = jnp.zeros((), S.dtype)
    return NormalXState(z, log_alpha, zero + settings.init_log_step, jnp.zeros(J, S.dtype), zero,
                        jnp.zeros((), jnp.int32), k_next)


def normalx_step(state: NormalXState, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> NormalXState:
    """One iteration of MCMC-normalX (Algorithm 1), with warm-up adaptation."""
    key, k_sx, k_S, k_th, k_s2 = jax.random.split(state.rng_key, 5)
    z = state.z
    d = data.z_tilde.shape[-1]
    Sigma_x = _sigma_x_draw(k_sx, z["S"], data, pr)
    S, acc_S = _S_move(k_S, z["S"], state.log_alpha, z["theta"], z["sigma2"], Sigma_x, data)
    theta = _theta_draw(k_th, S, z["sigma2"], data, pr)
    sigma2, acc_s2 = _sigma2_move(k_s2, z["sigma2"], state.log_step, S, theta, data, pr)
    log_alpha = _robbins_monro(state.log_alpha, acc_S, settings.target_accept_S, state.iteration, settings, -1.0)
    log_alpha = jnp.maximum(log_alpha, jnp.log(d + 1.0))  # a Wishart needs alpha > d - 1
    log_step = _robbins_monro(state.log_step, acc_s2, settings.target_accept_sigma2, state.iteration, settings, 1.0)
    return NormalXState({"S": S, "Sigma_x": Sigma_x, "theta": theta, "sigma2": sigma2}, log_alpha, log_step,
                        acc_S, acc_s2, state.iteration + 1, key)


def fixeds_init(rng_key: Array, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> FixedSState:
    """``data.S_tilde`` must already hold the fixed ``nearestPSD(S~_j)`` (see ``models.fixeds_data``)."""
    d = data.z_tilde.shape[-1]
    k_s2, k_next = jax.random.split(rng_key)
    dtype = data.S_tilde.dtype
    sigma2 = data.y_bound / 3.0 * jnp.exp(0.5 * jax.random.normal(k_s2, dtype=dtype))
    zero = jnp.zeros((), dtype)
    return FixedSState({"theta": jnp.zeros(d, dtype), "sigma2": sigma2}, zero + settings.init_log_step, zero,
                       jnp.zeros((), jnp.int32), k_next)


def fixeds_step(state: FixedSState, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> FixedSState:
    """One iteration of MCMC-fixedS (Algorithm 2)."""
    key, k_th, k_s2 = jax.random.split(state.rng_key, 3)
    S = data.S_tilde
    theta = _theta_draw(k_th, S, state.z["sigma2"], data, pr)
    sigma2, acc = _sigma2_move(k_s2, state.z["sigma2"], state.log_step, S, theta, data, pr)
    log_step = _robbins_monro(state.log_step, acc, settings.target_accept_sigma2, state.iteration, settings, 1.0)
    return FixedSState({"theta": theta, "sigma2": sigma2}, log_step, acc, state.iteration + 1, key)


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


class NormalX(_PureKernel):
    """MCMC-normalX (Algorithm 1) as a NumPyro kernel: ``MCMC(NormalX(prior), ...).run(key, data)``."""

    _init_fn = staticmethod(normalx_init)
    _step_fn = staticmethod(normalx_step)
    extra_fields = ("accept_S", "log_alpha", "accept_sigma2", "log_step")


class FixedS(_PureKernel):
    """MCMC-fixedS (Algorithm 2) as a NumPyro kernel; ``data.S_tilde`` holds nearestPSD(S~_j)."""

    _init_fn = staticmethod(fixeds_init)
    _step_fn = staticmethod(fixeds_step)
    extra_fields = ("accept_sigma2", "log_step")
