"""Convergence of MCMC output: rank-normalised split R-hat, bulk/tail ESS (Vehtari et al. 2021, via
ArviZ), divergent transitions and chains that sit in separate modes; :class:`ConvergenceWarning`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...samplers.convergence import SEPARATION, Convergence, convergence, needs_more_draws, separated_chains
from .base import Check, Finding

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = [
    "ConvergenceWarning",
    "Convergence",
    "convergence",
    "convergence_summary",
    "separated_chains",
    "needs_more_draws",
    "SEPARATION",
    "CHECK",
]


class ConvergenceWarning(UserWarning):
    """MCMC chains that have not mixed (R-hat, ESS) or that diverged: the intervals are not to be trusted."""


def convergence_summary(attrs: Any) -> str | None:
    """One line on convergence for the CLI and reports, from the attrs ``fit`` records (``None``
    when the fit recorded none: closed-form methods)."""
    if "max_rhat" not in attrs:
        return None
    text = (
        f"Convergence: max R-hat {attrs['max_rhat']:.3f}, min bulk ESS {attrs['min_ess_bulk']:.0f}, "
        f"min tail ESS {attrs['min_ess_tail']:.0f}"
        + (f", {attrs['divergences']} divergent transitions" if attrs.get("divergences") else "")
    )
    if bool(attrs.get("converged", 1)):
        return text + ": ok."
    if attrs.get("separated_modes"):
        return (
            f"{text}: NOT CONVERGED: the chains sit in separate modes of {attrs['separated_modes']}, which more "
            "draws will not join; do not use these intervals (compare with method='fixeds')."
        )
    return text + ": NOT CONVERGED; rerun with more draws before using these intervals."


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding:
    """R-hat, ESS, divergences and separate modes of ``theta`` and ``sigma2`` after an MCMC fit, with
    ``y_bound^2`` (largest over parties) for the message on a mode that the bounds rule out."""
    conv = convergence(idata, sigma2_bound=float(np.max(st.y_bound)) ** 2)
    attrs = {
        "max_rhat": conv.max_rhat,
        "min_ess_bulk": conv.min_ess_bulk,
        "min_ess_tail": conv.min_ess_tail,
        "converged": int(conv.ok),
        "separated_modes": ", ".join(conv.separated or {}),
    }
    if conv.ok:
        return Finding("convergence", True, attrs)
    at = idata.posterior.attrs
    retried = (int(at["divergences_before_retry"]), float(at["target_accept_prob"])) if at.get("retried") else None
    rounds = (int(at["extensions"]), int(at["num_samples"])) if at.get("extensions") else None
    return Finding("convergence", False, attrs, conv.message(sampler.name, retried, rounds), ConvergenceWarning)


CHECK = Check(
    "convergence",
    applies=lambda sampler: sampler.kind == "mcmc",
    check=check,
    summary=convergence_summary,
    flagged=lambda attrs: not bool(attrs.get("converged", 1)),
    warning=ConvergenceWarning,
)
