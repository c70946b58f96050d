"""``normalx-intercept``: MCMC-normalX with an intercept and non-centred normal features (App. B.2).

NUTS within Gibbs (NumPyro's ``HMCGibbs``) on
:func:`bayes_dpreg.hierarchical.normalx_intercept_model`: NUTS on the row means ``b_j``,
the centred scatters ``Sx_j ~ W(Sigma_x, n_j - 1)``, ``mu_x``, ``Sigma_x`` and
``log sigma_y^2``; ``theta`` (intercept first) from its exact conditional (eq. 12).
Needs ``release(..., intercept=True)`` statistics.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from numpyro.infer import MCMC

from ..hierarchical import model_data
from ..kernels import normalx_intercept_hmc
from ..prior import ResolvedPrior
from .base import MethodResult, Sampler

__all__ = ["SAMPLER", "run"]

_FIELDS = ("diverging", "accept_prob", "num_steps")


def run(
    st: Any,
    pr: ResolvedPrior,
    key: jax.Array,
    num_chains: int,
    num_samples: int,
    num_warmup: int,
    *,
    dense_mass: bool = True,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    thinning: int = 1,
    progress_bar: bool = False,
) -> MethodResult:
    data = model_data(st)
    kernel = normalx_intercept_hmc(
        data, pr, dense_mass=dense_mass, target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth
    )
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        thinning=thinning,
        chain_method=jax.vmap,
        progress_bar=progress_bar,
    )  # HMCGibbs takes a callable for vectorised chains
    mcmc.run(key, data, pr, extra_fields=tuple(f"block_states.1.{f}" for f in _FIELDS))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    stats = {
        "diverging": extra["block_states.1.diverging"],
        "acceptance_rate": extra["block_states.1.accept_prob"],
        "n_steps": extra["block_states.1.num_steps"],
    }
    attrs = {
        "num_warmup": num_warmup,
        "gibbs_sites": "theta",
        "dense_mass": int(dense_mass),
        "target_accept_prob": target_accept_prob,
        "divergences": int(stats["diverging"].sum()),
        "model": "intercept with non-centred normal features (App. B.2); theta[0] is the intercept",
    }
    return MethodResult(samples, attrs, stats)


SAMPLER = Sampler(
    name="normalx-intercept",
    label="MCMC-normalX (intercept)",
    summary="normalX with an intercept and non-centred features (App. B.2), NUTS within Gibbs; needs intercept=True",
    run=run,
    needs_wishart=True,
    needs_intercept=True,
    models_release_noise=True,
    options=("dense_mass", "target_accept_prob", "max_tree_depth", "thinning", "progress_bar"),
)
