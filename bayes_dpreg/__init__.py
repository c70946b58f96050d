"""bayes_dpreg: Bayesian linear regression from differentially private, distributed summary statistics.

Implements Alparslan, Yildirim & Birbil, "Differentially Private Distributed
Bayesian Linear Regression with MCMC" (ICML 2023). Importing the package turns
on JAX's 64-bit mode: entries of ``S = X^T X`` grow with ``n``.
"""

import jax

jax.config.update("jax_enable_x64", True)

from .data import Dataset, Simulated, load_dataset, load_power_plant, simulate, split_parties  # noqa: E402
from .inference import METHODS, fit  # noqa: E402
from .prior import ModelSpec, Prior, load_model  # noqa: E402
from .privacy import (  # noqa: E402
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    ssp_sensitivity,
)
from .release import NoisyStats, StatsFileError, load_stats, release, release_adassp  # noqa: E402

__version__ = "0.1.0"

__all__ = [
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
