"""``fixeds``: MCMC-fixedS (Algorithm 2): ``theta`` and ``sigma_y^2`` at ``S_j = nearestPSD(S~_j)``."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .. import kernels
from ..hierarchical import ModelData, fixeds_data, fixeds_model, log_joint, model_data
from ..prior import ResolvedPrior
from .base import ChainKernel, MethodResult, Sampler, run_chains

__all__ = ["KERNEL", "SAMPLER", "run", "data", "settings"]


def draws(state: kernels.FixedSState, data: ModelData, pr: ResolvedPrior, key: jax.Array) -> dict:
    del data, pr, key
    return state.z


def info(state: kernels.FixedSState) -> dict:
    return {"accept_prob_sigma2": state.info.accept_sigma2, "log_step": state.log_step}


KERNEL = ChainKernel(kernels.fixeds_init, kernels.fixeds_step, draws, info)


def data(st: Any) -> ModelData:
    """The released statistics with ``S~_j`` replaced by the fixed ``nearestPSD(S~_j)``."""
    return fixeds_data(model_data(st))


def settings(options: dict, d: int, num_warmup: int) -> tuple[kernels.Settings, dict]:
    return kernels.kernel_settings(dict(options), d, num_warmup)


def run(
    st: Any, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    settings_, rest = settings(options, st.d, num_warmup)
    thin, progress = rest.pop("thinning", 1), rest.pop("progress_bar", False)
    if rest:
        raise TypeError(f"unexpected keyword arguments {sorted(rest)}")
    d_ = data(st)
    samples, extra = run_chains(
        KERNEL,
        d_,
        pr,
        settings_,
        key,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thin=thin,
        progress_bar=progress,
    )
    stats = {
        "lp": log_joint(fixeds_model, d_, pr, {k: samples[k] for k in ("theta", "sigma2")}),
        "acceptance_rate": extra["accept_prob_sigma2"],
        "step_size": np.exp(extra["log_step"]),
    }
    attrs = {
        "num_warmup": num_warmup,
        "target_accept_sigma2": settings_.target_accept_sigma2,
        "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included); acceptance_rate and step_size "
        "are that move's (theta is an exact Gibbs draw)",
    }
    return MethodResult(samples, attrs, stats)


SAMPLER = Sampler(
    name="fixeds",
    label="MCMC-fixedS",
    summary="theta and sigma_y^2 by Gibbs/MH at S_j = nearestPSD(S~_j) (Alg. 2); ignores the noise in S~",
    run=run,
    kernel=KERNEL,
    data=data,
    settings=settings,
    sbc_exact_S=True,
    options=(
        "target_accept_sigma2",
        "adapt_exponent",
        "adapt_delay",
        "init_log_step",
        "update_sigma2",
        "thinning",
        "progress_bar",
    ),
)
