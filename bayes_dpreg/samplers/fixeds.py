"""``fixeds``: MCMC-fixedS (Algorithm 2): ``theta`` and ``sigma_y^2`` at ``S_j = nearestPSD(S~_j)``.

The kernel (:func:`fixeds_init`, :func:`fixeds_step` on a :class:`FixedSState`; :class:`FixedS`
wraps them for ``numpyro.infer.MCMC``) is steps 3-4 of MCMC-normalX
(:mod:`bayes_dpreg.samplers.normalx`) with the ``S_j`` fixed: the ``(theta, sigma_y^2)`` block of
:mod:`bayes_dpreg.samplers.mh`, through the eigendecompositions of the fixed ``S_j``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..model.densities import ModelData, fixeds_data, fixeds_model, log_joint, model_data
from ..model.prior import ResolvedPrior
from ..stats import StackedStats
from .base import RUN_OPTIONS, ChainKernel, Sampler, chain_run, state_draws
from .mh import Settings, _given_fixed_S, _PureKernel, _robbins_monro, _update_theta_sigma2, kernel_settings

__all__ = [
    "FixedSState",
    "FixedSInfo",
    "fixeds_init",
    "fixeds_step",
    "FixedS",
    "KERNEL",
    "SAMPLER",
    "run",
    "data",
    "settings",
]


class FixedSInfo(NamedTuple):
    accept_sigma2: Array  # () acceptance probability of the last sigma2 move


class FixedSState(NamedTuple):
    """A chain of MCMC-fixedS: the draw, the adapted log-step of the sigma2 move, the last step's info."""

    z: dict  # {"theta": (d,), "sigma2": ()}
    log_step: Array
    info: FixedSInfo
    iteration: Array
    rng_key: Array


def fixeds_init(rng_key: Array, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> FixedSState:
    """``data.S_tilde`` must already hold the fixed ``nearestPSD(S~_j)``
    (see :func:`~bayes_dpreg.model.densities.fixeds_data`)."""
    d = data.z_tilde.shape[-1]
    k_s2, k_next = jax.random.split(rng_key)
    dtype = data.S_tilde.dtype
    sigma2 = data.y_bound / 3.0 * jnp.exp(0.5 * jax.random.normal(k_s2, dtype=dtype))
    zero = jnp.zeros((), dtype)
    return FixedSState(
        {"theta": jnp.zeros(d, dtype), "sigma2": sigma2},
        zero + settings.init_log_step,
        FixedSInfo(zero),
        jnp.zeros((), jnp.int32),
        k_next,
    )


def fixeds_step(state: FixedSState, data: ModelData, pr: ResolvedPrior, settings: Settings = Settings()) -> FixedSState:
    """One iteration of MCMC-fixedS (Algorithm 2)."""
    key, k_ts = jax.random.split(state.rng_key)
    theta, sigma2, acc = _update_theta_sigma2(
        k_ts, _given_fixed_S(data), state.z["theta"], state.z["sigma2"], state.log_step, pr, settings
    )
    log_step = _robbins_monro(state.log_step, acc, settings.target_accept_sigma2, state.iteration, settings, 1.0)
    return FixedSState({"theta": theta, "sigma2": sigma2}, log_step, FixedSInfo(acc), state.iteration + 1, key)


class FixedS(_PureKernel):
    """MCMC-fixedS (Algorithm 2) as a NumPyro kernel; ``data.S_tilde`` holds nearestPSD(S~_j)."""

    _init_fn = staticmethod(fixeds_init)
    _step_fn = staticmethod(fixeds_step)
    extra_fields = ("info.accept_sigma2", "log_step")


# -- the sampler ----------------------------------------------------------------------------


def info(state: FixedSState) -> dict:
    return {"accept_prob_sigma2": state.info.accept_sigma2, "log_step": state.log_step}


KERNEL = ChainKernel(fixeds_init, fixeds_step, state_draws, info)


def data(st: StackedStats) -> ModelData:
    """The released statistics with ``S~_j`` replaced by the fixed ``nearestPSD(S~_j)``."""
    return fixeds_data(model_data(st))


def settings(options: dict, d: int, num_warmup: int) -> tuple[Settings, dict]:
    return kernel_settings(dict(options), d, num_warmup)


def summarise(
    samples: dict, extra: dict, data: ModelData, pr: ResolvedPrior, settings: Settings, num_warmup: int
) -> tuple[dict, dict]:
    """Sample statistics (the log joint, the sigma2 move's acceptance and step) and attributes of a run."""
    stats = {
        "lp": log_joint(fixeds_model, data, pr, {k: samples[k] for k in ("theta", "sigma2")}),
        "acceptance_rate": extra["accept_prob_sigma2"],
        "step_size": np.exp(extra["log_step"]),
    }
    attrs = {
        "num_warmup": num_warmup,
        "target_accept_sigma2": settings.target_accept_sigma2,
        "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included); acceptance_rate and step_size "
        "are that move's (theta is an exact Gibbs draw)",
    }
    return stats, attrs


run = chain_run(KERNEL, data, settings, summarise)

# the Settings fields fit offers for MCMC-fixedS: the sigma2 move and its adaptation (no S or level moves)
SETTINGS_OPTIONS = ("target_accept_sigma2", "adapt_exponent", "adapt_delay", "init_log_step", "update_sigma2")

SAMPLER = Sampler(
    name="fixeds",
    label="MCMC-fixedS",
    summary="theta and sigma_y^2 by Gibbs/MH at S_j = nearestPSD(S~_j) (Alg. 2); ignores the noise in S~",
    run=run,
    kernel=KERNEL,
    data=data,
    settings=settings,
    sbc_exact_S=True,
    options=SETTINGS_OPTIONS + RUN_OPTIONS,
)
