"""The samplers behind :func:`bayes_dpreg.fit`: one module per method, one registry.

Each module declares a :class:`~bayes_dpreg.samplers.base.Sampler` (name, label,
requirements on the released statistics, defaults, ``run`` and, for MCMC
kernels, the pure chain kernel that SBC and the replication studies drive).
Adding a method is one module and one line in :data:`SAMPLERS`. Each module holds its kernel's
state, ``init``/``step`` and settings; the Metropolis-within-Gibbs kernels share their MH and
adaptation pieces through :mod:`~bayes_dpreg.samplers.mh`, and :func:`~bayes_dpreg.samplers.base.chain_run`
derives ``run`` for those whose options are their settings.

==================  =====================================================================
``normalx-nuts``    the default: the normalX model (eq. 10) by NUTS, non-centred, theta
                    integrated out (:mod:`~bayes_dpreg.samplers.normalx_nuts`)
``normalx-clt``     the normalX model with the ``S_j`` integrated out under the Wishart's CLT,
                    ``O(J d^3)`` a step (:mod:`~bayes_dpreg.samplers.normalx_clt`)
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

from . import adassp, bs, fast, fixeds, intercept, normalx, normalx_clt, normalx_nuts
from .base import ChainKernel, MethodResult, Sampler, run_batched, run_chains

__all__ = [
    "SAMPLERS",
    "DEFAULT_METHOD",
    "CLT_MIN_LATENT",
    "default_method",
    "get",
    "Sampler",
    "ChainKernel",
    "MethodResult",
    "run_chains",
    "run_batched",
]

SAMPLERS: dict[str, Sampler] = {
    m.SAMPLER.name: m.SAMPLER for m in (normalx_nuts, normalx_clt, normalx, fixeds, fast, bs, adassp, intercept)
}

DEFAULT_METHOD = "normalx-nuts"
CLT_MIN_LATENT = 2000  # J d (d + 1) / 2 latent S_j entries from which fit's default is normalx-clt


def default_method(d: int, J: int) -> str:
    """``fit``'s method when none is given: :data:`DEFAULT_METHOD` (``normalx-nuts``, exact) unless
    it would sample at least :data:`CLT_MIN_LATENT` latent ``S_j`` entries (``J d (d + 1) / 2``:
    d = 20 with J >= 10, d = 10 with J >= 37), where it takes many minutes and ``normalx-clt``
    (``S_j`` integrated out under the Wishart's CLT) takes seconds to a minute. Every suite of
    ``studies/coverage.py`` lies below the threshold (at most 1,050 entries), so their default is
    unchanged; ``docs/samplers.md`` gives what ``normalx-clt`` was measured to do."""
    return "normalx-clt" if J * d * (d + 1) // 2 >= CLT_MIN_LATENT else DEFAULT_METHOD


def get(name: str) -> Sampler:
    """The registered sampler called ``name``."""
    try:
        return SAMPLERS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(SAMPLERS)}") from None
