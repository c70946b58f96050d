"""bayes_dpreg: Bayesian linear regression from differentially private, distributed summary statistics.

Implements Alparslan, Yildirim & Birbil, "Differentially Private Distributed
Bayesian Linear Regression with MCMC" (ICML 2023). It computes in float64 (entries of
``S = X^T X`` grow with ``n``) without changing JAX at import: the public functions
run under ``jax.enable_x64(True)``; scripts that call the low-level modules directly
call :func:`enable_x64` first (:mod:`bayes_dpreg.runtime.precision`).

Importing it changes nothing else. The public functions also lower their programs so that
no batched LAPACK call can deadlock XLA's CPU thread pool, which jaxlib 0.10 does on few
cores when it splits large batches over that pool (:mod:`bayes_dpreg.runtime.threads`); no
environment variable is needed.
"""

from . import _compat
from ._version import __version__
from .datasets import Dataset, Simulated, load_dataset, load_power_plant, simulate, split_parties
from .model.prior import ModelSpec, Prior, PriorScales, load_model, prior_scales, release_lambda
from .posterior.compare import compare, inclusion, log_evidence, normalx_evidence
from .posterior.diagnostics import (
    BoundsMisfitWarning,
    ConvergenceWarning,
    HeterogeneityWarning,
    NoiseVariancePriorWarning,
    PriorSensitivityWarning,
    UnresolvedDirectionWarning,
    unresolved_directions,
)
from .posterior.inference import METHODS, NoiseWarning, UnusedStatisticWarning, fit
from .privacy import (
    FloatNoiseWarning,
    NoisyStats,
    SeededReleaseWarning,
    StatsFileError,
    check_distinct,
    load_stats,
    release,
    release_adassp,
    release_bs,
)
from .privacy.bounds import ProposedBounds, propose_bounds
from .privacy.gaussian import (
    ClippingWarning,
    NotPrivateWarning,
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    ssp_sensitivity,
)
from .runtime.device import DeviceWarning, select_device
from .runtime.precision import enable_x64
from .runtime.threads import configure_threads
from .samplers import DEFAULT_METHOD, SAMPLERS

_compat.install()

__all__ = [
    "__version__",
    "enable_x64",
    "compare",
    "configure_threads",
    "select_device",
    "inclusion",
    "log_evidence",
    "normalx_evidence",
    "ProposedBounds",
    "propose_bounds",
    "ClippingWarning",
    "ConvergenceWarning",
    "BoundsMisfitWarning",
    "HeterogeneityWarning",
    "PriorSensitivityWarning",
    "NoiseVariancePriorWarning",
    "UnresolvedDirectionWarning",
    "UnusedStatisticWarning",
    "unresolved_directions",
    "NotPrivateWarning",
    "SeededReleaseWarning",
    "FloatNoiseWarning",
    "check_distinct",
    "release_bs",
    "DEFAULT_METHOD",
    "NoiseWarning",
    "DeviceWarning",
    "PriorScales",
    "SAMPLERS",
    "prior_scales",
    "release_lambda",
    "Dataset",
    "METHODS",
    "ModelSpec",
    "NoisyStats",
    "Prior",
    "Simulated",
    "StatsFileError",
    "analytic_gaussian_sigma",
    "calibrate",
    "classical_gaussian_sigma",
    "fit",
    "load_dataset",
    "load_model",
    "load_power_plant",
    "load_stats",
    "release",
    "release_adassp",
    "simulate",
    "split_parties",
    "ssp_sensitivity",
]


def __getattr__(name: str) -> object:
    """``bayes_dpreg.inference`` and the other old module paths, as deprecated aliases (``_compat``)."""
    if name in _compat.MOVED:
        return _compat.alias(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
