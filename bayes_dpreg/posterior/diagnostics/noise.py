"""The release noise against the signal, for the methods that fix ``S_j`` at ``nearestPSD(S~_j)``
(``fast``, ``fixeds``): :func:`noise_to_signal` and :class:`NoiseWarning`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Check, Finding

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = ["NoiseWarning", "NOISE_TO_SIGNAL_MAX", "noise_to_signal", "noise_summary", "CHECK"]

# bayes_dpreg.samplers.DEFAULT_METHOD, which the message recommends (not imported: the samplers import
# this package; tests/test_diagnostics.py checks that the two agree)
MODELS_NOISE = "normalx-clt"


class NoiseWarning(UserWarning):
    """A method that treats ``nearestPSD(S~_j)`` as exact was used where the release noise is not negligible."""


NOISE_TO_SIGNAL_MAX = 0.1  # above it the fixed-S methods warn (docs/results/coverage)


def noise_to_signal(S_tilde: Any, sigma_S: Any) -> np.ndarray:
    """Per party, the expected spectral norm of the release noise in ``S~_j`` against its smallest
    eigenvalue: ``2 sqrt(d) sigma_S,j / lambda_min(S~_j)`` (``inf`` when ``S~_j`` is not positive
    definite). The noise matrix ``sigma_S M`` (``M`` symmetric, N(0, 1) entries) has spectral
    norm about ``2 sqrt(d) sigma_S``; when this is not small against ``lambda_min``, fixing
    ``S_j`` at ``nearestPSD(S~_j)`` (``fast``, ``fixeds``) misplaces ``theta`` along the weakest
    directions and its intervals undercover (``docs/results/coverage``)."""
    S = np.asarray(S_tilde, dtype=np.float64)
    d = S.shape[-1]
    lam = np.linalg.eigvalsh(0.5 * (S + np.swapaxes(S, -1, -2)))[..., 0]
    noise = 2.0 * np.sqrt(d) * np.asarray(sigma_S, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(lam > 0, noise / np.where(lam > 0, lam, 1.0), np.inf)


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding:
    """Each party's :func:`noise_to_signal`; a warning above :data:`NOISE_TO_SIGNAL_MAX`."""
    ratio = noise_to_signal(st.S, st.sigma_S)
    attrs = {"noise_to_signal": [float(r) for r in ratio]}
    if not np.max(ratio) > NOISE_TO_SIGNAL_MAX:
        return Finding("noise", True, attrs)
    message = (
        f"method {sampler.name!r} treats nearestPSD(S~_j) as the exact S_j, but the release noise is not "
        f"negligible (noise-to-signal {np.max(ratio):.3g} > {NOISE_TO_SIGNAL_MAX} in party "
        f"{int(np.argmax(ratio))}): its intervals are too narrow. Use the default method "
        f"(method=None: '{MODELS_NOISE}', or 'normalx-nuts' for small parties), which models the noise."
    )
    return Finding("noise", False, attrs, message, NoiseWarning)


def _worst(attrs: Any) -> float | None:
    if "noise_to_signal" not in attrs:
        return None
    return float(np.max(np.atleast_1d(attrs["noise_to_signal"])))


def noise_summary(attrs: Any) -> str | None:
    """One line for the CLI and reports when the release noise is not negligible for a fixed-S method."""
    ratio = _worst(attrs)
    if ratio is None or not ratio > NOISE_TO_SIGNAL_MAX:
        return None
    return (
        f"Method {attrs.get('method')!r} treats nearestPSD(S~_j) as the exact S_j, but the release noise "
        f"is not negligible (noise-to-signal {ratio:.3g} > {NOISE_TO_SIGNAL_MAX}): its intervals are too "
        f"narrow (NoiseWarning). The default method ({MODELS_NOISE}; normalx-nuts for small parties) models "
        "the noise."
    )


CHECK = Check(
    "noise",
    applies=lambda sampler: not sampler.models_release_noise and sampler.kind != "point",
    check=check,
    summary=noise_summary,
    flagged=lambda attrs: noise_summary(attrs) is not None,
    warning=NoiseWarning,
)
