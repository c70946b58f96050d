"""``fast``: Bayes-fixedS-fast (Algorithm 3), exact Gaussian draws at ``S_j = nearestPSD(S~_j)``
and fixed ``sigma_y^2``."""

from __future__ import annotations

import functools
import math
from typing import Literal

import jax
import numpy as np
from jax import Array

from ..model.closed_form import fast_posterior
from ..model.prior import ResolvedPrior
from ..stats import StackedStats
from .base import MethodResult, Sampler

__all__ = ["fast_sigma2", "run", "SAMPLER"]


def fast_sigma2(y_bound: float, rule: Literal["text", "code"] | float = "text") -> float:
    """The fixed ``sigma_y^2`` of Bayes-fixedS-fast (Alg. 3).

    ``"text"``: the paper's text, ``sigma_y = ||Y||/3`` so ``sigma_y^2 = (||Y||/3)^2``;
    ``"code"``: the authors' code, ``sigma_y^2 = ||Y||/3``; a number: that variance.
    ``||Y||`` is the declared ``y_bound`` (public), not the data's maximum.
    """
    if isinstance(rule, str):
        if rule == "text":
            return (y_bound / 3.0) ** 2
        if rule == "code":
            return y_bound / 3.0
        raise ValueError(f"sigma2 must be 'text', 'code' or a positive number, got {rule!r}")
    value = float(rule)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"sigma2 must be a positive number, got {rule!r}")
    return value


@functools.partial(jax.jit, static_argnames="shape")
def _fast_draws(key: Array, S: Array, z: Array, sz2: Array, s2: Array, m: Array, C: Array, shape: tuple) -> tuple:
    """``shape`` exact draws of Bayes-fixedS-fast's posterior, its mean and covariance, in one program."""
    post = fast_posterior(S, z, sz2, s2, m, C)
    return post.sample(key, shape), post.mean, post.cov


def run(
    st: StackedStats,
    pr: ResolvedPrior,
    key: jax.Array,
    num_chains: int,
    num_samples: int,
    num_warmup: int,
    *,
    sigma2: Literal["text", "code"] | float = "text",
    progress_bar: bool = False,
) -> MethodResult:
    del num_warmup, progress_bar  # exact draws: nothing to warm up or to wait for
    s2 = fast_sigma2(float(st.y_bound.max()), sigma2)
    args = [np.asarray(a, np.float64) for a in (st.S, st.z, st.sigma_z**2, s2, pr.m, pr.C)]  # not jnp: a program each
    theta, mean, cov = _fast_draws(key, *args, shape=(num_chains, num_samples))
    attrs = {
        "sigma2_fixed": s2,
        "sigma2_rule": sigma2 if isinstance(sigma2, str) else "user",
        "exact_draws": 1,
        "posterior_mean": np.asarray(mean).tolist(),
        "posterior_cov": np.asarray(cov).ravel().tolist(),
    }
    return MethodResult({"theta": np.asarray(theta)}, attrs)


SAMPLER = Sampler(
    name="fast",
    label="Bayes-fixedS-fast",
    summary="closed form: theta's Gaussian posterior at S_j = nearestPSD(S~_j) and sigma_y = y_bound/3 (Alg. 3)",
    run=run,
    kind="exact",
    num_warmup=0,
    num_samples=1000,
    options=("sigma2", "progress_bar"),
)
