"""The samplers behind :func:`bayes_dpreg.fit`: one module per method, one registry.

Each module declares a :class:`~bayes_dpreg.samplers.base.Sampler` (name, label,
requirements on the released statistics, defaults, ``run`` and, for MCMC
kernels, the pure chain kernel that SBC and the replication studies drive).
Adding a method is one module and one line in :data:`SAMPLERS`. Each module holds its kernel's
state, ``init``/``step`` and settings; the Metropolis-within-Gibbs kernels share their MH and
adaptation pieces through :mod:`~bayes_dpreg.samplers.mh`, and :func:`~bayes_dpreg.samplers.base.chain_run`
derives ``run`` for those whose options are their settings.

==================  =====================================================================
``normalx-clt``     the default: the normalX model with the ``S_j`` integrated out under the
                    Wishart's CLT, ``O(J d^3)`` a step (:mod:`~bayes_dpreg.samplers.normalx_clt`)
``normalx-pooled``  ``normalx-clt`` on the releases summed over parties of like noise per row,
                    ``O(G d^3)`` a step for ``G`` groups (:mod:`~bayes_dpreg.samplers.normalx_pooled`)
``normalx-nuts``    the default for small parties (:func:`default_method`): the normalX model
                    (eq. 10) by NUTS, non-centred, theta integrated out
                    (:mod:`~bayes_dpreg.samplers.normalx_nuts`)
``normalx``         MCMC-normalX, Metropolis-within-Gibbs (Alg. 1 and improvements)
                    (:mod:`~bayes_dpreg.samplers.normalx`)
``fixeds``          MCMC-fixedS (Alg. 2) (:mod:`~bayes_dpreg.samplers.fixeds`)
``fast``            Bayes-fixedS-fast (Alg. 3), closed form
``bs``              MCMC-B&S (App. C.1) (:mod:`~bayes_dpreg.samplers.bs`)
``adassp``          adaSSP point estimate (App. C.2)
``normalx-intercept``  App. B.2, intercept and non-centred features
==================  =====================================================================
"""

from __future__ import annotations

from . import adassp, bs, fast, fixeds, intercept, normalx, normalx_clt, normalx_nuts, normalx_pooled
from .base import ChainKernel, MethodResult, Sampler, run_batched, run_chains
from .sizes import CLT_MIN_ROWS, clt_min_rows

__all__ = [
    "SAMPLERS",
    "DEFAULT_METHOD",
    "SMALL_PARTY_METHOD",
    "MANY_PARTY_METHOD",
    "CLT_MIN_LATENT",
    "CLT_MIN_ROWS",
    "clt_min_rows",
    "default_method",
    "get",
    "Sampler",
    "ChainKernel",
    "MethodResult",
    "run_chains",
    "run_batched",
]

SAMPLERS: dict[str, Sampler] = {
    m.SAMPLER.name: m.SAMPLER
    for m in (normalx_nuts, normalx_clt, normalx_pooled, normalx, fixeds, fast, bs, adassp, intercept)
}

DEFAULT_METHOD = "normalx-clt"
SMALL_PARTY_METHOD = "normalx-nuts"  # the exact sampler, fit's default where a party is small
MANY_PARTY_METHOD = "normalx-pooled"  # DEFAULT_METHOD on the releases summed in groups, where that pools
CLT_MIN_LATENT = 2000  # J d (d + 1) / 2 latent S_j entries from which it is the default whatever n_j


def default_method(d: int, J: int, n_min: int | None = None) -> str:
    """``fit``'s method when none is given.

    :data:`DEFAULT_METHOD` (``normalx-clt``: the normalX model with the ``S_j`` integrated out under
    the Wishart's CLT, ``O(J d^3)`` a gradient) where every party has ``n_j >= max(100, 30 d)`` rows
    (:func:`clt_min_rows`; ``n_min`` is the smallest ``n_j``, ``None`` for parties of any size), and
    :data:`SMALL_PARTY_METHOD` (``normalx-nuts``, the ``S_j`` sampled exactly) below, except where
    that would sample at least :data:`CLT_MIN_LATENT` latent ``S_j`` entries (``J d (d + 1) / 2``:
    d = 20 with J >= 10), where it takes many minutes. The threshold is where the CLT sampler's
    coverage was measured to match the exact one's (``docs/results/coverage/clt``: d = 3 from
    ``n_j = 100``, d = 5 and 10 from ``n_j = 300``); ``docs/samplers.md`` gives the measurements.
    Where ``normalx-clt`` is chosen and there are more parties than
    :func:`~bayes_dpreg.samplers.normalx_pooled.min_groups` (``J > 1 + ceil(200 / d)``: d = 20 from
    J = 12, d = 50 from J = 6), :data:`MANY_PARTY_METHOD`: the same sampler on the releases summed
    within groups, ``O(G d^3)`` a gradient (``docs/samplers.md``, *Many parties*)."""
    if n_min is None or n_min >= clt_min_rows(d) or J * d * (d + 1) // 2 >= CLT_MIN_LATENT:
        return MANY_PARTY_METHOD if J > normalx_pooled.min_groups(d, J) else DEFAULT_METHOD
    return SMALL_PARTY_METHOD


def get(name: str) -> Sampler:
    """The registered sampler called ``name``."""
    try:
        return SAMPLERS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(SAMPLERS)}") from None
