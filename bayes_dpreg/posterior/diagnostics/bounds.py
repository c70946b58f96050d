"""The posterior against the declared bounds: ``sigma_y^2`` above ``y_bound^2``, which the bound on
``|y|`` rules out (:class:`BoundsMisfitWarning`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Check, Finding

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = ["BoundsMisfitWarning", "sigma2_over_bound", "bounds_misfit_message", "bounds_summary", "CHECK"]


class BoundsMisfitWarning(UserWarning):
    """The posterior contradicts the declared bounds: ``sigma_y^2`` above ``y_bound^2``, which
    ``|y| <= y_bound`` rules out (``sigma_y^2 = Var(y | x) <= E[y^2] <= y_bound^2`` for the clipped
    responses the release saw). The model does not fit the released statistics."""


def sigma2_over_bound(idata: Any, y_bound: float) -> float:
    """Posterior median of ``sigma_y^2`` over ``y_bound^2`` (``nan`` without ``sigma2`` draws)."""
    if "sigma2" not in idata.posterior:
        return float("nan")
    return float(np.median(np.asarray(idata.posterior["sigma2"].values))) / float(y_bound) ** 2


def bounds_misfit_message(method: str, ratio: float, y_bound: float) -> str:
    return (
        f"method {method!r}: the posterior median of sigma2 is {ratio:.3g} times y_bound^2 = {y_bound**2:.3g}, "
        "which the declared bound on |y| rules out (Var(y | x) <= y_bound^2): the model does not fit these "
        "statistics, and theta's intervals are not to be trusted (too wide where sigma2 is overstated). Seen with "
        "parties whose feature distributions differ (HeterogeneityWarning); compare with method='fixeds'."
    )


def bounds_summary(attrs: Any) -> str | None:
    """One line on ``sigma_y^2`` against ``y_bound^2`` for the CLI and reports, when it is exceeded."""
    ratio = attrs.get("sigma2_over_bound")
    if ratio is None or not ratio > 1.0:
        return None
    return (
        f"Bounds: the posterior median of sigma2 is {ratio:.3g} times y_bound^2, which the declared bound on |y| "
        "rules out: the model does not fit these statistics (BoundsMisfitWarning)."
    )


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding | None:
    """``sigma2_over_bound`` against ``y_bound`` (largest over parties); ``None`` without ``sigma2`` draws."""
    y_bound = float(np.max(st.y_bound))
    ratio = sigma2_over_bound(idata, y_bound)
    if np.isnan(ratio):
        return None
    attrs = {"sigma2_over_bound": ratio}
    if ratio > 1.0:
        return Finding("bounds", False, attrs, bounds_misfit_message(sampler.name, ratio, y_bound), BoundsMisfitWarning)
    return Finding("bounds", True, attrs)


def _flagged(attrs: Any) -> bool:
    ratio = attrs.get("sigma2_over_bound")
    return ratio is not None and bool(ratio > 1.0)


CHECK = Check(
    "bounds",
    applies=lambda sampler: True,
    check=check,
    summary=bounds_summary,
    flagged=_flagged,
    warning=BoundsMisfitWarning,
)
