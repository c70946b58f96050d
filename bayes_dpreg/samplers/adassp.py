"""``adassp``: the distributed adaSSP point estimate (App. C.2; Wang 2018)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..model.closed_form import adassp_estimate, adassp_ridge
from ..model.prior import ResolvedPrior
from ..stats import StackedStats
from .base import MethodResult, Sampler

__all__ = ["run", "SAMPLER"]


def run(
    st: StackedStats,
    pr: ResolvedPrior,
    key: jax.Array,
    num_chains: int,
    num_samples: int,
    num_warmup: int,
    *,
    p: float = 0.05,
    progress_bar: bool = False,
) -> MethodResult:
    del pr, key, num_chains, num_samples, num_warmup, progress_bar  # a point estimate: no prior, no draws
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    ridge = adassp_ridge(
        jnp.asarray(st.lambda_min), jnp.asarray(st.epsilon), jnp.asarray(st.delta), jnp.asarray(st.x_bound), st.d, p
    )
    theta = adassp_estimate(jnp.asarray(st.S), jnp.asarray(st.z), ridge)
    attrs = {"point_estimate": 1, "ridge": np.asarray(ridge).tolist(), "p": p}
    return MethodResult({"theta": np.asarray(theta)[None, None, :]}, attrs)


SAMPLER = Sampler(
    name="adassp",
    label="adaSSP",
    summary="distributed adaSSP point estimate (App. C.2); no intervals",
    run=run,
    kind="point",
    mechanisms=("adassp",),
    num_warmup=0,
    num_samples=1,
    options=("p", "progress_bar"),
)
