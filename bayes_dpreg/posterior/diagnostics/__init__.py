"""Diagnostics of a fit: a list of checks, each ``check(idata, stats, sampler, prior) -> Finding``.

:data:`CHECKS` is the ordered registry; ``fit`` runs the checks that apply to its method through
:func:`run_checks`, which records each finding's numbers in ``idata.posterior.attrs`` and issues its
warning, and the CLI and the report print each check's ``summary`` of those attrs. Adding a
diagnostic is one module with a :class:`~.base.Check` and one line in :data:`CHECKS`.

==========================  ======================================================================
``convergence``             R-hat, ESS, divergences, separate modes (:class:`ConvergenceWarning`)
``bounds``                  ``sigma_y^2`` against ``y_bound^2`` (:class:`BoundsMisfitWarning`)
``heterogeneity``           do the parties share one ``Sigma_x`` (:class:`HeterogeneityWarning`)
``prior_sensitivity``       power-scaling sensitivity to each prior factor (:class:`NoiseVariancePriorWarning`)
``resolution``              directions the release does not resolve (:class:`UnresolvedDirectionWarning`)
``noise``                   the release noise against ``S~_j`` for the fixed-S methods (:class:`NoiseWarning`)
==========================  ======================================================================

:mod:`~.calibration` (the MMD between posterior samples, paper App. D) is no check of ``fit``: a
tool of simulation-based calibration and the tests. Every name is importable from this package
(where the functions ``convergence`` and ``prior_sensitivity`` shadow their submodules' names).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .base import Check, Finding
from .bounds import CHECK as BOUNDS
from .bounds import BoundsMisfitWarning, bounds_misfit_message, bounds_summary, sigma2_over_bound
from .calibration import calibration, median_bandwidth, mmd2_unbiased
from .convergence import CHECK as CONVERGENCE
from .convergence import (
    SEPARATION,
    Convergence,
    ConvergenceWarning,
    convergence,
    convergence_summary,
    needs_more_draws,
    separated_chains,
)
from .heterogeneity import CHECK as HETEROGENEITY
from .heterogeneity import (
    HETEROGENEITY_MAX,
    HETEROGENEITY_P,
    Heterogeneity,
    HeterogeneityWarning,
    heterogeneity_summary,
    heterogeneous,
    party_heterogeneity,
)
from .noise import CHECK as NOISE
from .noise import NOISE_TO_SIGNAL_MAX, NoiseWarning, noise_summary, noise_to_signal
from .prior_sensitivity import CHECK as PRIOR_SENSITIVITY
from .prior_sensitivity import (
    PRIOR_SENSITIVITY_MAX,
    NoiseVariancePriorWarning,
    PriorSensitivity,
    PriorSensitivityWarning,
    noise_variance_message,
    prior_sensitivity,
    prior_sensitivity_summary,
    sigma2_contraction,
    sigma2_sensitive,
    sigma_x_sensitive,
)
from .resolution import (
    BORROWED_SHARE,
    Resolution,
    UnresolvedDirectionWarning,
    direction_report,
    release_resolution,
    resolution_summary,
    unresolved_directions,
)
from .resolution import CHECK as RESOLUTION

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = [
    "Check",
    "Finding",
    "CHECKS",
    "run_checks",
    "summaries",
    "mmd2_unbiased",
    "median_bandwidth",
    "calibration",
    "ConvergenceWarning",
    "Convergence",
    "convergence",
    "separated_chains",
    "needs_more_draws",
    "SEPARATION",
    "BoundsMisfitWarning",
    "sigma2_over_bound",
    "bounds_misfit_message",
    "bounds_summary",
    "convergence_summary",
    "NoiseWarning",
    "NOISE_TO_SIGNAL_MAX",
    "noise_to_signal",
    "noise_summary",
    "HeterogeneityWarning",
    "Heterogeneity",
    "HETEROGENEITY_MAX",
    "HETEROGENEITY_P",
    "party_heterogeneity",
    "heterogeneous",
    "heterogeneity_summary",
    "PriorSensitivityWarning",
    "NoiseVariancePriorWarning",
    "noise_variance_message",
    "sigma2_contraction",
    "sigma2_sensitive",
    "PriorSensitivity",
    "prior_sensitivity",
    "prior_sensitivity_summary",
    "sigma_x_sensitive",
    "PRIOR_SENSITIVITY_MAX",
    "Resolution",
    "UnresolvedDirectionWarning",
    "BORROWED_SHARE",
    "release_resolution",
    "direction_report",
    "resolution_summary",
    "unresolved_directions",
]

# The checks, in the order fit runs them and the CLI and the report print them.
CHECKS: list[Check] = [CONVERGENCE, BOUNDS, HETEROGENEITY, PRIOR_SENSITIVITY, RESOLUTION, NOISE]


def run_checks(idata: Any, st: StackedStats, sampler: Sampler, pr: Any, *, stacklevel: int = 3) -> list[Finding]:
    """Run the checks of :data:`CHECKS` that apply to ``sampler`` on a fit: each finding's attrs into
    ``idata.posterior.attrs``, its warning issued (``stacklevel`` 3 blames the caller of the function
    that calls this one: ``fit``'s caller). Returns the findings, in the registry's order."""
    findings = []
    for c in CHECKS:
        if not c.applies(sampler):
            continue
        finding = c.check(idata, st, sampler, pr)
        if finding is None:
            continue
        idata.posterior.attrs.update(finding.attrs)
        if finding.warning is not None:
            warnings.warn(finding.message, finding.warning, stacklevel=stacklevel)
        findings.append(finding)
    return findings


def summaries(attrs: Any) -> list[tuple[Check, str]]:
    """Each check's summary of a fit's recorded attrs, where it has one, in the registry's order."""
    out = []
    for c in CHECKS:
        text = c.summary(attrs)
        if text is not None:
            out.append((c, text))
    return out
