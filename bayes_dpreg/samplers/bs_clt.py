"""``bs``: MCMC-B&S, Bernstein & Sheldon's (2019) CLT model of the sufficient statistics, J parties (App. C.1).

The kernel is :func:`bayes_dpreg.bernstein_sheldon.bs_step`; it needs statistics from
:func:`bayes_dpreg.release_bs` (noisy ``[upper(S), z, y^T y]``).
"""

from __future__ import annotations

from typing import Any

import jax

from .. import bernstein_sheldon as bs
from ..kernels import Settings
from ..prior import ResolvedPrior
from .base import ChainKernel, MethodResult, Sampler, run_chains

__all__ = ["KERNEL", "SAMPLER", "run", "data", "settings"]


def draws(state: bs.BSState, data: bs.BSData, pr: ResolvedPrior, key: jax.Array) -> dict:
    del data, pr, key
    return state.z


def info(state: bs.BSState) -> dict:
    return {"psd_projected": state.psd_projected, "b_floored": state.b_floored}


KERNEL = ChainKernel(bs.bs_init, bs.bs_step, draws, info)


def data(st: Any) -> bs.BSData:
    return bs.bs_data(st.S, st.z, st.u, st.n, st.sigma_S)


def settings(options: dict, d: int, num_warmup: int) -> tuple[Settings, dict]:
    del d
    return Settings(num_warmup=int(num_warmup)), dict(options)


def run(
    st: Any,
    pr: ResolvedPrior,
    key: jax.Array,
    num_chains: int,
    num_samples: int,
    num_warmup: int,
    *,
    thinning: int = 1,
    progress_bar: bool = False,
) -> MethodResult:
    samples, extra = run_chains(
        KERNEL,
        data(st),
        pr,
        Settings(num_warmup=int(num_warmup)),
        key,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thin=thinning,
        progress_bar=progress_bar,
    )
    attrs = {
        "num_warmup": num_warmup,
        "psd_projected_fraction": float((extra["psd_projected"] > 0).mean()),
        "b_floored_fraction": float(extra["b_floored"].mean()),
        "model": "CLT approximation of [upper(S), z, y^T y] (Bernstein & Sheldon 2019), NIG prior",
    }
    return MethodResult(samples, attrs, extra)


SAMPLER = Sampler(
    name="bs",
    label="MCMC-B&S",
    summary="Bernstein & Sheldon's CLT model of noisy [S, z, y^T y] by Gibbs (App. C.1); needs release_bs",
    run=run,
    mechanisms=("bs",),
    centred_features=True,
    models_release_noise=True,
    kernel=KERNEL,
    data=data,
    settings=settings,
    options=("thinning", "progress_bar"),
)
