"""bayes_dpreg: Bayesian linear regression from differentially private, distributed summary statistics.

Implements Alparslan, Yildirim & Birbil, "Differentially Private Distributed
Bayesian Linear Regression with MCMC" (ICML 2023). Importing the package turns
on JAX's 64-bit mode: entries of ``S = X^T X`` grow with ``n``.

Importing it changes nothing else: processes that run many vectorised chains
(studies, benchmarks, the command line, the tests) call :func:`configure_threads`
first, which asks XLA for one CPU intra-op thread; jaxlib 0.10.0-0.11.0 can
deadlock on few cores when it splits large batched linear algebra over the
default pool (:mod:`bayes_dpreg.threads`).
"""

import jax

jax.config.update("jax_enable_x64", True)

from .bounds import ProposedBounds, propose_bounds  # noqa: E402
from .compare import compare, inclusion, log_evidence  # noqa: E402
from .data import Dataset, Simulated, load_dataset, load_power_plant, simulate, split_parties  # noqa: E402
from .diagnostics import ConvergenceWarning  # noqa: E402
from .inference import METHODS, NoiseWarning, fit  # noqa: E402
from .prior import ModelSpec, Prior, PriorScales, load_model, prior_scales  # noqa: E402
from .samplers import DEFAULT_METHOD, SAMPLERS  # noqa: E402
from .threads import configure_threads  # noqa: E402
from .privacy import (  # noqa: E402
    ClippingWarning,
    NotPrivateWarning,
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    ssp_sensitivity,
)
from .release import (  # noqa: E402
    NoisyStats,
    SeededReleaseWarning,
    StatsFileError,
    check_distinct,
    load_stats,
    release,
    release_adassp,
    release_bs,
)

__version__ = "0.1.0"

__all__ = [
    "compare",
    "configure_threads",
    "inclusion",
    "log_evidence",
    "ProposedBounds",
    "propose_bounds",
    "ClippingWarning",
    "ConvergenceWarning",
    "NotPrivateWarning",
    "SeededReleaseWarning",
    "check_distinct",
    "release_bs",
    "DEFAULT_METHOD",
    "NoiseWarning",
    "PriorScales",
    "SAMPLERS",
    "prior_scales",
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
