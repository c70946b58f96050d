r"""What the release can and cannot see: directions of feature space below the release noise.

Post-processing of the released statistics (no privacy cost). The pooled release
``S~ = sum_j S~_j = S + E`` carries noise ``E`` that is symmetric with independent upper-triangle
entries of variance ``sigma^2 = sum_j sigma_S,j^2``, whose spectral norm is about
``2 sigma sqrt(d)`` (the semicircle's edge). By Weyl's inequality each eigenvalue of ``S~``
is within ``||E||`` of the corresponding eigenvalue of ``S``, so along an eigenvector ``u`` of
``S~`` whose eigenvalue is below the noise level

.. math::
    \tau = 2 \sigma (\sqrt{d} + 1)

(conservative: above the 95% point of ``||E||`` for every ``d``), the release cannot tell the
features' variance ``u^T S u / n`` from zero. There ``z~ = S theta + ...`` says little about
``u^T theta``, and an interval for it is as good as the model's prior for ``Sigma_x`` in that
direction: with nearly collinear features and the inverse-Wishart's floor on every direction's
variance, too narrow (``docs/prior.md``).

:func:`release_resolution` finds the directions; :func:`direction_report` adds, from a fit, the
posterior and prior sd of each ``u^T theta`` and the share of its prior variance the data
removed. ``fit`` stores the report in ``idata.posterior.attrs["unresolved_directions"]`` (JSON)
and warns (:class:`UnresolvedDirectionWarning`) with the combinations (:func:`check`); the CLI and
the report print it (:func:`resolution_summary`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...model.prior import fitted_theta_prior_cov
from .base import Check, Finding
from .prior_sensitivity import PriorSensitivityWarning

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = [
    "Resolution",
    "UnresolvedDirectionWarning",
    "release_resolution",
    "direction_report",
    "resolution_summary",
    "unresolved_directions",
    "BORROWED_SHARE",
    "CHECK",
]


class UnresolvedDirectionWarning(PriorSensitivityWarning):
    """Some linear combination of the coefficients lies along a direction of feature space that the
    release does not resolve: its interval is the model's prior for ``Sigma_x``, not the data."""


class Resolution(NamedTuple):
    """Eigen-directions of the pooled release ``S~`` (columns of ``vectors``, ascending
    ``variances = eigenvalue / n``), the noise level ``noise = tau / n`` in the same units, and
    which directions it resolves."""

    vectors: np.ndarray  # (d, d)
    variances: np.ndarray  # (d,)
    noise: float
    names: list[str]

    @property
    def resolved(self) -> np.ndarray:
        return self.variances > self.noise

    @property
    def unresolved(self) -> list[int]:
        return [int(k) for k in np.flatnonzero(~self.resolved)]


def noise_level(sigma_S: Any, d: int) -> float:
    """``tau``: the spectral norm the pooled release noise stays below (module docstring)."""
    sigma = math.sqrt(float(np.sum(np.square(np.asarray(sigma_S, dtype=np.float64)))))
    return 2.0 * sigma * (math.sqrt(d) + 1.0)


def release_resolution(stats: StackedStats, names: Sequence[str] | None = None) -> Resolution:
    """:class:`Resolution` of stacked released statistics (:class:`~bayes_dpreg.stats.StackedStats`)."""
    S = np.asarray(stats.S, dtype=np.float64).sum(0)
    d = S.shape[-1]
    n = float(np.sum(stats.n))
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    U = U * np.where(U[np.argmax(np.abs(U), axis=0), np.arange(d)] < 0, -1.0, 1.0)  # largest weight positive
    labels = list(names) if names is not None else [f"theta_{k}" for k in range(d)]
    return Resolution(U, w / n, noise_level(stats.sigma_S, d) / n, labels)


def _combination(u: np.ndarray, names: Sequence[str], keep: float = 0.05) -> str:
    """``u^T theta`` as text, the terms with weight at least ``keep`` of the largest."""
    big = np.abs(u).max()
    terms = [(w, nm) for w, nm in zip(u, names) if abs(w) >= keep * big]
    text = " ".join(f"{'-' if w < 0 else '+'} {abs(w):.2f} {nm}" for w, nm in terms)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def direction_report(res: Resolution, theta_draws: np.ndarray, C: np.ndarray) -> list[dict[str, Any]]:
    """Per unresolved direction ``u``: the combination ``u^T theta`` (text and weights), the
    features' released variance along ``u`` and the noise level, and from the fit's draws of
    ``theta`` (``(..., d)``) the posterior sd of ``u^T theta``, its prior sd ``sqrt(u^T C u)`` and
    ``data_share = 1 - posterior variance / prior variance``."""
    th = np.asarray(theta_draws, dtype=np.float64).reshape(-1, res.vectors.shape[0])
    out = []
    for k in res.unresolved:
        u = res.vectors[:, k]
        post_sd = float(np.std(th @ u))
        prior_sd = float(np.sqrt(u @ np.asarray(C) @ u))
        out.append(
            {
                "combination": _combination(u, res.names),
                "weights": [float(x) for x in u],
                "variance": float(res.variances[k]),
                "noise": float(res.noise),
                "posterior_sd": post_sd,
                "prior_sd": prior_sd,
                "data_share": float(1.0 - (post_sd / prior_sd) ** 2) if prior_sd > 0 else float("nan"),
            }
        )
    return out


def unresolved_directions(idata: Any) -> list[dict[str, Any]]:
    """The report ``fit`` stored in ``idata.posterior.attrs`` (empty when every direction is resolved)."""
    return json.loads(idata.posterior.attrs.get("unresolved_directions", "[]"))


def resolution_summary(attrs: Any) -> str | None:
    """Lines for the CLI and the report (``None`` when the fit did not record the analysis)."""
    if "unresolved_directions" not in attrs:
        return None
    dirs = json.loads(attrs["unresolved_directions"])
    if not dirs:
        return "Release resolution: every direction of the features is above the release noise."
    lines = [
        f"Release resolution: {len(dirs)} direction(s) of the features lie below the release noise "
        f"(variance under {dirs[0]['noise']:.3g} per row); their intervals are the prior's "
        "(UnresolvedDirectionWarning):"
    ]
    for r in dirs:
        lines.append(
            f"  {r['combination']}: released variance {r['variance']:.3g}; posterior sd {r['posterior_sd']:.3g} "
            f"against prior sd {r['prior_sd']:.3g} (data share {r['data_share']:.2f})"
        )
    return "\n".join(lines)


BORROWED_SHARE = 0.5  # a direction the release does not resolve, yet the fit says the data inform it
LISTED = 3  # the warning names this many such directions (the smallest released variance first); attrs has all


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding:
    """The directions of feature space below the release noise and the fit's intervals along them
    (:func:`direction_report`); a warning where, along such a direction, the fit's interval for
    ``u^T theta`` is much narrower than the prior's (data share above :data:`BORROWED_SHARE`): the
    information it reads there comes from the model's assumption about ``Sigma_x``, which the
    release cannot check."""
    names = [str(c) for c in idata.posterior["theta"].coords["coef"].values]
    res = release_resolution(st, names)
    report = direction_report(res, idata.posterior["theta"].values, fitted_theta_prior_cov(idata, pr))
    attrs = {"unresolved_directions": json.dumps(report), "release_noise_variance": res.noise}
    borrowed = [r for r in report if r["data_share"] > BORROWED_SHARE]
    if not borrowed:
        return Finding("resolution", True, attrs)
    combos = "; ".join(f"{r['combination']} (released variance {r['variance']:.3g})" for r in borrowed[:LISTED])
    if len(borrowed) > LISTED:
        combos += f"; and {len(borrowed) - LISTED} more"
    source = (
        "the model's prior for Sigma_x, which the release cannot check"
        if sampler.models_release_noise
        else "taking the noisy S~_j as exact, which they are not there"
    )
    message = (
        f"method {sampler.name!r}: along {len(borrowed)} direction(s) of the features the release noise "
        f"(variance {res.noise:.3g} per row) swamps the signal, yet the fit narrows the interval of {combos} "
        f"well below the prior's: that information comes from {source}. If the features may be nearly "
        "collinear along it, check those intervals: refit with a Sigma_x prior that allows more collinearity "
        "(Prior(eta=0.5); under an inverse-Wishart, Prior(Lambda=bd.release_lambda(stats))) and report the "
        "wider (idata.posterior.attrs['unresolved_directions']; docs/prior.md)."
    )
    return Finding("resolution", False, attrs, message, UnresolvedDirectionWarning)


CHECK = Check(
    "resolution",
    # the methods whose coefficients are the features' (not the intercept model, not a point estimate)
    applies=lambda sampler: not sampler.needs_intercept and sampler.kind != "point",
    check=check,
    summary=resolution_summary,
    flagged=lambda attrs: bool(json.loads(attrs.get("unresolved_directions", "[]"))),
    warning=UnresolvedDirectionWarning,
)
