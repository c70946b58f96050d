"""The samplers behind :func:`bayes_dpreg.fit`: one module per method, one registry.

Each module declares a :class:`~bayes_dpreg.samplers.base.Sampler` (name, label,
requirements on the released statistics, defaults, ``run`` and, for MCMC
kernels, the pure chain kernel that SBC and the replication studies drive).
Adding a method is one module and one line in :data:`SAMPLERS`.

==================  =====================================================================
``normalx-nuts``    the default: the normalX model (eq. 10) by NUTS, non-centred, theta
                    integrated out (:mod:`~bayes_dpreg.samplers.normalx_nuts`)
``normalx``         MCMC-normalX, Metropolis-within-Gibbs (Alg. 1 and improvements)
``fixeds``          MCMC-fixedS (Alg. 2)
``fast``            Bayes-fixedS-fast (Alg. 3), closed form
``bs``              MCMC-B&S (App. C.1)
``adassp``          adaSSP point estimate (App. C.2)
``normalx-intercept``  App. B.2, intercept and non-centred features
==================  =====================================================================
"""

from __future__ import annotations

from . import adassp, bs_clt, fast, fixeds, intercept, normalx, normalx_nuts
from .base import ChainKernel, MethodResult, Sampler, run_batched, run_chains

__all__ = ["SAMPLERS", "DEFAULT_METHOD", "get", "Sampler", "ChainKernel", "MethodResult", "run_chains", "run_batched"]

SAMPLERS: dict[str, Sampler] = {
    m.SAMPLER.name: m.SAMPLER for m in (normalx_nuts, normalx, fixeds, fast, bs_clt, adassp, intercept)
}

DEFAULT_METHOD = "normalx-nuts"


def get(name: str) -> Sampler:
    """The registered sampler called ``name``."""
    try:
        return SAMPLERS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(SAMPLERS)}") from None
