"""``normalx``: MCMC-normalX (Algorithm 1) with Metropolis-Hastings moves of each ``S_j``.

The kernel is :func:`bayes_dpreg.kernels.normalx_step` (the paper's moves plus the
collapsed-theta and level moves documented there); ``collapse_theta=False,
level_moves=False`` is Algorithm 1 exactly. Cheap per iteration, but at large
``n_j`` and ``d > 8`` (where the level moves are off) it mixes slowly; the
default ``normalx-nuts`` samples the same model.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .. import kernels
from ..hierarchical import ModelData, log_joint, model_data, normalx_model
from ..prior import ResolvedPrior
from .base import ChainKernel, MethodResult, Sampler, run_chains

__all__ = ["KERNEL", "SAMPLER", "run", "settings"]


def draws(state: kernels.NormalXState, data: ModelData, pr: ResolvedPrior, key: jax.Array) -> dict:
    del data, pr, key
    return state.z


def info(state: kernels.NormalXState) -> dict:
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


KERNEL = ChainKernel(kernels.normalx_init, kernels.normalx_step, draws, info)


def settings(options: dict, d: int, num_warmup: int) -> tuple[kernels.Settings, dict]:
    return kernels.kernel_settings(dict(options), d, num_warmup)


def run(
    st: Any, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    data = model_data(st)
    settings_, rest = settings(options, st.d, num_warmup)
    thin, progress = rest.pop("thinning", 1), rest.pop("progress_bar", False)
    if rest:
        raise TypeError(f"unexpected keyword arguments {sorted(rest)}")
    samples, extra = run_chains(
        KERNEL,
        data,
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
        "lp": log_joint(normalx_model, data, pr, {k: samples[k] for k in ("theta", "sigma2", "Sigma_x", "S")}),
        "accept_prob_S": extra["accept_prob_S"],
        "alpha": np.exp(extra["log_alpha"]),
        "accept_prob_sigma2": extra["accept_prob_sigma2"],
        "step_size_sigma2": np.exp(extra["log_step"]),
    }
    if settings_.collapse_theta and settings_.level_moves:
        stats.update({k: extra[k] for k in ("accept_prob_group", "accept_prob_eigen", "accept_prob_noncentred")})
    attrs = {
        "num_warmup": num_warmup,
        "target_accept_S": settings_.target_accept_S,
        "target_accept_sigma2": settings_.target_accept_sigma2,
        "collapse_theta": int(settings_.collapse_theta),
        "level_moves": int(settings_.level_moves),
        "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included)",
        "alpha_final": np.exp(extra["log_alpha"][:, -1]).ravel().tolist(),
    }
    return MethodResult(samples, attrs, stats)


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
    options=kernels.Settings._fields[1:] + ("thinning", "progress_bar"),
)
