"""Stage 1, the release: what each party runs on its own data.

The Gaussian mechanism and its calibration (:mod:`.privacy`), declared or private bounds and
clipping (:mod:`.bounds`), the privacy ledger (:mod:`.ledger`), input sources and validation
(:mod:`.sources`), the exact Gram statistics (:mod:`.gram`) and the release mechanisms
(:mod:`.mechanisms`: SSP, AdaSSP, Bernstein & Sheldon) that produce a party's
:class:`~.noisy_stats.NoisyStats` and its file (:mod:`.noisy_stats`).
"""

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
