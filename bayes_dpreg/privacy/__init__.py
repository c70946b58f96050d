"""Stage 1, privacy: what each party runs on its own data before anything leaves it.

The Gaussian mechanism, its analytic calibration, the discrete Gaussian and clipping
(:mod:`.gaussian`, whose names this package also exports, as the earlier module
``bayes_dpreg.privacy`` did), declared or private bounds (:mod:`.bounds`), the privacy ledger
(:mod:`.ledger`), input sources and validation (:mod:`.sources`), the exact Gram statistics
(:mod:`.gram`), the release mechanisms (:mod:`.mechanisms`: SSP, AdaSSP, Bernstein & Sheldon)
and the party's :class:`~.noisy_stats.NoisyStats` with its file (:mod:`.noisy_stats`).

(The stage is not called ``release``: ``bayes_dpreg.release`` is the release function.)
"""

from .gaussian import (
    GRID_BITS,
    Calibration,
    ClippingWarning,
    ClipReport,
    NoiseKind,
    NotPrivateWarning,
    adassp_lambda_sigma,
    analytic_gaussian_sigma,
    as_published_gaussian_sigma,
    bs_sensitivity,
    calibrate,
    calibrate_bs,
    check_privacy_parameters,
    classical_gaussian_sigma,
    clip,
    discrete_bs,
    discrete_gaussian,
    discrete_grid,
    discrete_sigma,
    gaussian_delta,
    row_norms,
    ssp_sensitivity,
)
from .mechanisms import release, release_adassp, release_bs
from .noisy_stats import (
    FloatNoiseWarning,
    NoisyStats,
    SeededReleaseWarning,
    StatsFileError,
    check_distinct,
    load_stats,
)

__all__ = [
    "GRID_BITS",
    "Calibration",
    "ClipReport",
    "ClippingWarning",
    "NoiseKind",
    "NotPrivateWarning",
    "adassp_lambda_sigma",
    "analytic_gaussian_sigma",
    "as_published_gaussian_sigma",
    "bs_sensitivity",
    "calibrate",
    "calibrate_bs",
    "check_privacy_parameters",
    "classical_gaussian_sigma",
    "clip",
    "discrete_bs",
    "discrete_gaussian",
    "discrete_grid",
    "discrete_sigma",
    "gaussian_delta",
    "row_norms",
    "ssp_sensitivity",
    "FloatNoiseWarning",
    "NoisyStats",
    "SeededReleaseWarning",
    "StatsFileError",
    "check_distinct",
    "load_stats",
    "release",
    "release_adassp",
    "release_bs",
]
