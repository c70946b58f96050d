"""The Gaussian mechanism for the summary statistics ``[S, z]``.

Everything here is computed from *declared, public* quantities (``epsilon``,
``delta``, the row-norm bound ``x_bound`` and the response bound ``y_bound``);
nothing reads the private data except :func:`clip`, which enforces the bounds.

Neighbouring data sets
----------------------
Alparslan et al. (2023, Def. 2.1) call two data sets neighbours when they have
the same size and differ in one row (*replacement*, bounded DP); the row counts
``n_j`` are released exactly, which is consistent only with this notion.
The released vector is ``v = [upper(S), z]`` (upper triangle of ``S`` with its
diagonal, and ``z``). Replacing ``(x, y)`` by ``(x', y')`` with
``||x||, ||x'|| <= B`` and ``|y|, |y'| <= Y`` changes it by at most

.. math::

    \\Delta_{\\text{replace}} = \\begin{cases}
        \\sqrt{2B^4 + 2B^2Y^2 + Y^4/2} & Y^2 \\le 2B^2,\\\\
        2BY & \\text{otherwise,}
    \\end{cases}

which is attained (see :func:`ssp_sensitivity`). The paper's
``Delta = sqrt(B^4 + B^2 Y^2)`` is the sensitivity for adding or removing a
row; under replacement it is too small by a factor of up to 1.5 (B = Y = 1).
It is available as ``neighbouring="add_remove"`` for reproductions only.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = [
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "ssp_sensitivity",
    "bs_sensitivity",
    "Calibration",
    "calibrate",
    "calibrate_bs",
    "NoiseKind",
    "GRID_BITS",
    "discrete_grid",
    "discrete_gaussian",
    "discrete_bs",
    "discrete_sigma",
    "adassp_lambda_sigma",
    "row_norms",
    "ClipReport",
    "ClippingWarning",
    "NotPrivateWarning",
    "as_published_gaussian_sigma",
    "clip",
    "check_privacy_parameters",
]

Neighbouring = Literal["replace", "add_remove"]
NoiseKind = Literal["discrete", "float"]
CalibrationKind = Literal["auto", "joint", "split", "as_published"]

_RTOL = 1e-13


def check_privacy_parameters(epsilon: float, delta: float) -> None:
    """Raise ``ValueError`` unless ``epsilon > 0`` and ``0 < delta < 1`` (both finite real numbers,
    not booleans)."""
    _check_real("epsilon", epsilon)
    _check_real("delta", delta)
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")


def _check_real(name: str, value: Any) -> None:
    """A finite real number: ``True`` is not a bound or a privacy parameter, though Python counts it as 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a finite number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _check_positive(name: str, value: float) -> None:
    _check_real(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact ``delta`` of the Gaussian mechanism with noise sd ``sigma`` at ``epsilon``.

    Balle & Wang (2018, Thm. 8): the mechanism ``f(D) + N(0, sigma^2 I)`` with L2
    sensitivity ``Delta`` is (epsilon, delta)-DP iff

    .. math::
        \\Phi\\Big(\\frac{\\Delta}{2\\sigma} - \\frac{\\epsilon\\sigma}{\\Delta}\\Big)
        - e^{\\epsilon}\\,\\Phi\\Big(-\\frac{\\Delta}{2\\sigma} - \\frac{\\epsilon\\sigma}{\\Delta}\\Big)
        \\le \\delta .
    """
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(ndtr(a - b) - math.exp(epsilon + log_ndtr(-a - b)))


def _bracket_root(f, start: float = 1.0) -> tuple[float, float]:
    """Grow ``[0, hi]`` geometrically until ``f`` changes sign (f(0) and f(hi) differ)."""
    hi = start
    f0 = f(0.0)
    while np.sign(f(hi)) == np.sign(f0):
        hi *= 2.0
        if hi > 1e12:
            raise RuntimeError("could not bracket the analytic Gaussian root")
    return 0.0, hi


def _algorithm1(eps: float, delta: float, root) -> float:
    """Balle & Wang (2018), Algorithm 1 at unit sensitivity, with ``root(w)`` in the first term:
    ``B+(v) = Phi(root(v)) - e^eps Phi(-sqrt(eps (v + 2)))``,
    ``B-(u) = Phi(-root(u)) - e^eps Phi(-sqrt(eps (u + 2)))``."""
    from scipy.optimize import brentq  # scipy.optimize loads in about 0.3 s: only when calibrating

    tail = lambda w: math.exp(eps + log_ndtr(-math.sqrt(eps * (w + 2.0))))
    delta0 = 0.5 - math.exp(eps + log_ndtr(-math.sqrt(2.0 * eps)))
    if delta >= delta0:
        g = lambda v: float(ndtr(root(v))) - tail(v) - delta  # increasing in v
        v = brentq(g, *_bracket_root(g), xtol=1e-300, rtol=_RTOL, maxiter=500)
        alpha = math.sqrt(1.0 + v / 2.0) - math.sqrt(v / 2.0)
    else:
        g = lambda u: float(ndtr(-root(u))) - tail(u) - delta  # decreasing in u
        u = brentq(g, *_bracket_root(g), xtol=1e-300, rtol=_RTOL, maxiter=500)
        alpha = math.sqrt(1.0 + u / 2.0) + math.sqrt(u / 2.0)
    return alpha / math.sqrt(2.0 * eps)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest noise sd giving (epsilon, delta)-DP: Balle & Wang (2018), Algorithm 1.

    With ``delta_0 = Phi(0) - e^eps Phi(-sqrt(2 eps))`` and
    ``B+(v) = Phi(sqrt(eps v)) - e^eps Phi(-sqrt(eps (v + 2)))``,
    ``B-(u) = Phi(-sqrt(eps u)) - e^eps Phi(-sqrt(eps (u + 2)))``:

    * if ``delta >= delta_0``: ``v* = sup{v >= 0 : B+(v) <= delta}``,
      ``alpha = sqrt(1 + v*/2) - sqrt(v*/2)``;
    * else ``u* = inf{u >= 0 : B-(u) <= delta}``,
      ``alpha = sqrt(1 + u*/2) + sqrt(u*/2)``;

    and ``sigma = alpha * Delta / sqrt(2 eps)``. The scalar equations are solved
    by Brent's method to relative precision ~1e-13, so that
    :func:`gaussian_delta` of the result equals ``delta`` to ~1e-9 relative.
    """
    check_privacy_parameters(epsilon, delta)
    _check_positive("sensitivity", sensitivity)
    eps = float(epsilon)
    return sensitivity * _algorithm1(eps, delta, lambda w: math.sqrt(eps * w))


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork & Roth (2014, Thm. A.1): ``sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon``.

    Their proof covers ``epsilon < 1``; at ``epsilon = 1`` the value is still
    valid (it exceeds the exact analytic one). Larger ``epsilon`` is refused.
    """
    check_privacy_parameters(epsilon, delta)
    _check_positive("sensitivity", sensitivity)
    if epsilon > 1:
        raise ValueError(
            f"the classical Gaussian mechanism is only proven for epsilon <= 1, got {epsilon}; "
            "use analytic_gaussian_sigma"
        )
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


BOUND_RANGE = (1e-50, 1e50)  # declared bounds; keeps bound**4 and the released S within float64


def ssp_sensitivity(x_bound: float, y_bound: float, neighbouring: Neighbouring = "replace") -> dict[str, float]:
    """L2 sensitivities of the released ``[upper(S), z]`` from declared bounds.

    Returns a dict with keys ``"joint"`` (the whole vector), ``"S"`` (the upper
    triangle of ``S`` alone) and ``"z"`` (``z`` alone).

    ``neighbouring="replace"`` (default; the paper's Def. 2.1): with
    ``c = x^T x'`` the squared change is
    ``|x|^4 + |x'|^4 - 2c^2 + |x|^2 y^2 + |x'|^2 y'^2 - 2 c y y'``; maximising
    over ``c`` gives the bound in the module docstring, attained by
    ``x = (p, q), x' = (q, p)`` with ``2pq = -Y^2/2`` (then ``x x^T - x' x'^T``
    is diagonal, so the upper-triangle and Frobenius norms agree).
    For ``S`` alone: ``sqrt(2) B^2``; for ``z`` alone: ``2 B Y``.

    ``neighbouring="add_remove"``: the norm of one row's contribution,
    ``sqrt(B^4 + B^2 Y^2)``, ``B^2`` and ``B Y`` (Alparslan et al., Sec. 3.1).
    """
    for name, v in (("x_bound", x_bound), ("y_bound", y_bound)):
        _check_positive(name, v)
        if not BOUND_RANGE[0] <= v <= BOUND_RANGE[1]:
            raise ValueError(
                f"{name} = {v!r} is outside [{BOUND_RANGE[0]:g}, {BOUND_RANGE[1]:g}]: rescale the data "
                "(the sensitivity grows with the bound to the fourth power and must stay finite)"
            )
    B2, Y2 = x_bound**2, y_bound**2
    if neighbouring == "replace":
        if Y2 <= 2.0 * B2:
            joint = math.sqrt(2.0 * B2 * B2 + 2.0 * B2 * Y2 + Y2 * Y2 / 2.0)
        else:
            joint = 2.0 * x_bound * y_bound
        return {"joint": joint, "S": math.sqrt(2.0) * B2, "z": 2.0 * x_bound * y_bound}
    if neighbouring == "add_remove":
        return {"joint": math.sqrt(B2 * B2 + B2 * Y2), "S": B2, "z": x_bound * y_bound}
    raise ValueError(f"neighbouring must be 'replace' or 'add_remove', got {neighbouring!r}")


def bs_sensitivity(x_bound: float, y_bound: float, neighbouring: Neighbouring = "replace") -> float:
    """L2 sensitivity of the MCMC-B&S release ``[upper(S), z, y^T y]`` (App. C.1).

    ``"add_remove"``: one row's contribution, ``sqrt(B^4 + B^2 Y^2 + Y^4)`` (the paper's
    ``Delta_ss``). ``"replace"``: the ``[upper(S), z]`` part changes by at most
    :func:`ssp_sensitivity` ``["joint"]`` and ``y^2`` by at most ``Y^2``, so
    ``sqrt(Delta_joint^2 + Y^4)`` bounds the change (the two maxima need not be
    attained together, so this may exceed the exact value slightly; it is never smaller).
    """
    return math.sqrt(ssp_sensitivity(x_bound, y_bound, neighbouring)["joint"] ** 2 + y_bound**4)


@dataclass(frozen=True)
class Calibration:
    """Noise standard deviations of one release and how they were chosen. For discrete noise,
    ``grid_S``/``grid_z`` are the exponents ``k`` of the grids ``2^k`` that the released
    ``S~``/``z~`` lie on (:func:`discrete_grid`)."""

    sigma_S: float
    sigma_z: float
    kind: Literal["joint", "split", "as_published"]
    neighbouring: Neighbouring
    noise: NoiseKind = "float"
    grid_S: int | None = None
    grid_z: int | None = None

    @property
    def total_variance(self) -> float:
        return self.sigma_S**2 + self.sigma_z**2


GRID_BITS = 20  # the grid step is about 2^-20 of the noise sd
_MANTISSA_BITS = 52


def discrete_grid(sigma: float, magnitude: float) -> int:
    """Exponent ``k`` of the grid ``2^k`` for discrete Gaussian noise of sd about ``sigma`` on
    values bounded by ``magnitude`` (public: from ``n`` and the declared bounds).

    ``k = floor(log2 sigma) - GRID_BITS``, raised where needed so that every released value
    (``|v| <= magnitude + 64 sigma``) is an integer multiple of ``2^k`` below ``2^52 * 2^k``,
    hence an exact float64: the output carries no floating-point residue of the input."""
    k = math.floor(math.log2(sigma)) - GRID_BITS
    return max(k, math.ceil(math.log2(magnitude + 64.0 * sigma)) - _MANTISSA_BITS)


def discrete_sigma(epsilon: float, delta: float, sensitivity: float, m: int, magnitude: float) -> tuple[float, int]:
    """``(sigma, k)`` of the discrete Gaussian mechanism on ``m`` values rounded to ``2^k``.

    Rounding each value to the grid moves a neighbouring pair by at most ``2^k sqrt(m)`` more in
    L2 (OpenDP adds exactly this to the sensitivity), so ``sigma`` is the analytic Gaussian sd at
    ``Delta + 2^k sqrt(m)``. At ``sigma >= 2^GRID_BITS`` grid steps the discrete Gaussian's
    privacy curve equals the continuous one's up to terms of order ``exp(-2 pi^2 2^(2 GRID_BITS))``
    (Canonne, Kamath & Steinke 2020, Sec. 4-5), far below float precision."""
    base = analytic_gaussian_sigma(epsilon, delta)
    k = discrete_grid(base * sensitivity, magnitude)
    return base * (sensitivity + 2.0**k * math.sqrt(m)), k


def discrete_gaussian(values: np.ndarray, sigma: float, k: int) -> np.ndarray:
    """``values`` rounded to the grid ``2^k`` plus exact discrete Gaussian noise of scale ``sigma``
    on that grid, sampled by OpenDP (``make_gaussian`` with granularity ``k``) from the operating
    system's CSPRNG. Every output is an integer multiple of ``2^k``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=flat.size),
        dp.l2_distance(T=float),
        scale=float(sigma),
        k=int(k),
    )
    return np.asarray(meas(flat.tolist()), dtype=np.float64).reshape(np.shape(values))


def calibrate(
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    calibration: CalibrationKind = "auto",
    neighbouring: Neighbouring = "replace",
    *,
    noise: NoiseKind = "float",
    d: int | None = None,
    n: int | None = None,
) -> Calibration:
    """Noise sds for ``S~ = S + sigma_S M``, ``z~ = z + sigma_z v`` (paper eq. 8).

    ``noise="discrete"`` (what :func:`~bayes_dpreg.release` uses unless seeded):
    the values are rounded to a grid ``2^k`` and get discrete Gaussian noise
    (:func:`discrete_gaussian`); the sensitivities grow by the rounding,
    ``2^k sqrt(m)`` for ``m`` released values, and ``k`` (:func:`discrete_grid`) depends
    on ``d`` and ``n`` (public), which must then be given. The sds grow by a factor
    ``1 + O(2^-GRID_BITS sqrt(m))`` (below 1e-3 for d <= 100 at eps >= 0.1).

    * ``"joint"``: one Gaussian mechanism on ``[upper(S), z]``,
      ``sigma_S = sigma_z = sigma(eps, delta) * Delta_joint``;
    * ``"split"``: two mechanisms at ``(eps/2, delta/2)`` each (basic
      composition), ``sigma_S = sigma(eps/2, delta/2) Delta_S``,
      ``sigma_z = sigma(eps/2, delta/2) Delta_z``;
    * ``"auto"``: whichever has the smaller ``sigma_S^2 + sigma_z^2`` (NOTES.md).

    ``sigma(.)`` is :func:`analytic_gaussian_sigma` at unit sensitivity.

    ``"as_published"`` is **not private**: the authors' experiments, i.e.
    :func:`as_published_gaussian_sigma`, the add/remove sensitivities and whichever
    of joint/split has the smaller total variance. For reproducing the published
    figures only; never chosen by ``"auto"``.
    """
    check_privacy_parameters(epsilon, delta)
    _check_positive("x_bound", x_bound)
    _check_positive("y_bound", y_bound)
    if calibration == "as_published":
        return _as_published(epsilon, delta, x_bound, y_bound)
    sens = ssp_sensitivity(x_bound, y_bound, neighbouring)
    if noise == "discrete":
        joint, split = _discrete_ssp(epsilon, delta, x_bound, y_bound, neighbouring, sens, d, n)
    elif noise == "float":
        s_joint = analytic_gaussian_sigma(epsilon, delta) * sens["joint"]
        joint = Calibration(s_joint, s_joint, "joint", neighbouring)
        s_half = analytic_gaussian_sigma(epsilon / 2.0, delta / 2.0)
        split = Calibration(s_half * sens["S"], s_half * sens["z"], "split", neighbouring)
    else:
        raise ValueError(f"noise must be 'discrete' or 'float', got {noise!r}")
    if calibration == "joint":
        return joint
    if calibration == "split":
        return split
    if calibration == "auto":
        return joint if joint.total_variance <= split.total_variance else split
    raise ValueError(f"calibration must be 'auto', 'joint' or 'split', got {calibration!r}")


def _public_size(d: int | None, n: int | None) -> tuple[int, int]:
    if d is None or n is None:
        raise ValueError("discrete noise needs the public d and n (its grid depends on them)")
    return int(d), int(n)


def _discrete_ssp(
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    neighbouring: Neighbouring,
    sens: dict[str, float],
    d: int | None,
    n: int | None,
) -> tuple[Calibration, Calibration]:
    d, n = _public_size(d, n)
    m_S, mag_S, mag_z = d * (d + 1) // 2, n * x_bound**2, n * x_bound * y_bound
    s_j, k_j = discrete_sigma(epsilon, delta, sens["joint"], m_S + d, max(mag_S, mag_z))
    s_S, k_S = discrete_sigma(epsilon / 2.0, delta / 2.0, sens["S"], m_S, mag_S)
    s_z, k_z = discrete_sigma(epsilon / 2.0, delta / 2.0, sens["z"], d, mag_z)
    return (
        Calibration(s_j, s_j, "joint", neighbouring, "discrete", k_j, k_j),
        Calibration(s_S, s_z, "split", neighbouring, "discrete", k_S, k_z),
    )


def _as_published(epsilon: float, delta: float, x_bound: float, y_bound: float) -> Calibration:
    sens = ssp_sensitivity(x_bound, y_bound, "add_remove")
    s_joint = as_published_gaussian_sigma(epsilon, delta) * sens["joint"]
    s_half = as_published_gaussian_sigma(epsilon / 2.0, delta / 2.0)
    s_S, s_z = s_half * sens["S"], s_half * sens["z"]
    if s_S**2 + s_z**2 < 2.0 * s_joint**2:
        return Calibration(s_S, s_z, "as_published", "add_remove")
    return Calibration(s_joint, s_joint, "as_published", "add_remove")


def calibrate_bs(
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    calibration: Literal["joint", "as_published"] = "joint",
) -> float:
    """Noise sd ``sigma_dp`` of the MCMC-B&S release (App. C.1, eq. 13), one Gaussian
    mechanism on ``[upper(S), z, y^T y]``: ``sigma(eps, delta) * Delta_ss`` with
    :func:`bs_sensitivity` (replacement neighbours). ``"as_published"`` (**not private**,
    reproductions only): :func:`as_published_gaussian_sigma` times the paper's add/remove
    ``Delta_ss``. Discrete noise: :func:`discrete_bs`."""
    check_privacy_parameters(epsilon, delta)
    if calibration == "joint":
        return analytic_gaussian_sigma(epsilon, delta) * bs_sensitivity(x_bound, y_bound, "replace")
    if calibration == "as_published":
        return as_published_gaussian_sigma(epsilon, delta) * bs_sensitivity(x_bound, y_bound, "add_remove")
    raise ValueError(f"the B&S release calibration must be 'joint' or 'as_published', got {calibration!r}")


def discrete_bs(epsilon: float, delta: float, x_bound: float, y_bound: float, d: int, n: int) -> tuple[float, int]:
    """``(sigma, k)`` of the B&S release with discrete noise on the grid ``2^k`` (as
    :func:`calibrate` does for ``[upper(S), z]``), for ``d (d + 1) / 2 + d + 1`` values."""
    check_privacy_parameters(epsilon, delta)
    m = d * (d + 1) // 2 + d + 1
    mag = n * max(x_bound**2, x_bound * y_bound, y_bound**2)
    return discrete_sigma(epsilon, delta, bs_sensitivity(x_bound, y_bound, "replace"), m, mag)


def adassp_lambda_sigma(
    epsilon: float, delta: float, x_bound: float, noise: NoiseKind, n: int
) -> tuple[float, int | None]:
    """``(sigma, k)`` of adaSSP's noisy smallest eigenvalue at ``(eps/3, delta/3)``, sensitivity
    ``x_bound^2`` (App. C.2): discrete noise on the grid ``2^k`` (:func:`discrete_sigma`), or
    floating-point noise (``k = None``)."""
    if noise == "discrete":
        return discrete_sigma(epsilon / 3.0, delta / 3.0, x_bound**2, 1, n * x_bound**2)
    return analytic_gaussian_sigma(epsilon / 3.0, delta / 3.0, x_bound**2), None


class NotPrivateWarning(UserWarning):
    """Statistics were released with the authors' under-calibrated noise ("as published"):
    they do not satisfy the stated (epsilon, delta)-DP."""


class ClippingWarning(UserWarning):
    """Rows of the private data lay outside the declared bounds and were scaled onto them."""


@dataclass(frozen=True)
class ClipReport:
    """What :func:`clip` changed; for the releasing party only, never released. ``n_x_clipped``:
    rows with ``||x|| > x_bound``; ``n_y_clipped``: rows with ``|y| > y_bound``; ``n_scaled``:
    rows with either (each scaled as a whole)."""

    n_rows: int
    n_x_clipped: int
    n_y_clipped: int
    max_x_norm: float
    max_abs_y: float
    n_scaled: int

    @property
    def any_clipped(self) -> bool:
        return self.n_scaled > 0

    def __str__(self) -> str:
        if not self.n_scaled:
            return f"none of {self.n_rows} rows was clipped"
        why = []
        if self.n_x_clipped:
            why.append(f"{self.n_x_clipped} had ||x|| > x_bound, largest {self.max_x_norm:.4g}")
        if self.n_y_clipped:
            why.append(f"{self.n_y_clipped} had |y| > y_bound, largest {self.max_abs_y:.4g}")
        head = f"{self.n_scaled} of {self.n_rows} rows were scaled, x and y together, onto the bounds"
        return f"{head} ({'; '.join(why)})"


def _rows_by_peak(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(norms, peak, unit, unit_norms)``: each row's largest ``|entry|`` (``peak``), the row divided
    by it (``unit``), that quotient's norm, and ``||x|| = peak * ||unit||``, computed without overflow: a row like
    ``(1e200, 1e200)`` has norm ``1.41e200`` (not ``inf``) and is clipped along its own direction;
    a norm beyond the float range is ``inf``."""
    peak = np.max(np.abs(X), axis=1, initial=0.0)
    unit = X / np.where(peak > 0, peak, 1.0)[:, None]
    unit_norms = np.linalg.norm(unit, axis=1)
    with np.errstate(over="ignore"):
        return peak * unit_norms, peak, unit, unit_norms


def row_norms(X: np.ndarray) -> np.ndarray:
    """Euclidean norms of the rows of ``X`` without intermediate overflow (:func:`clip`'s)."""
    return _rows_by_peak(X)[0]


def clip(X: np.ndarray, y: np.ndarray, x_bound: float, y_bound: float) -> tuple[np.ndarray, np.ndarray, ClipReport]:
    r"""Enforce the declared bounds by scaling each row ``(x_i, y_i)`` as a whole:

    .. math::
        (x_i, y_i) \mapsto c_i (x_i, y_i), \qquad
        c_i = \min\left(1, \frac{B_x}{\lVert x_i\rVert}, \frac{B_y}{|y_i|}\right).

    Then ``S = sum_i c_i^2 x_i x_i^T`` and ``z = sum_i c_i^2 x_i y_i`` are the sufficient
    statistics of least squares weighted by ``c_i^2``, which estimates the same ``theta`` as
    the unclipped rows whenever ``y = x^T theta + e`` with ``E[e | x] = 0`` and the weights depend
    on ``x`` alone; only rows scaled for ``|y_i|`` carry a (small) weight that depends on the noise.
    Clipping ``x`` and ``y`` separately instead (``x`` onto the ball, ``y`` to the interval)
    gives ``E z = sum_i c_i x_i x_i^T theta != S theta``: a bias of the order of the clipped
    share, measured by ``python -m studies.clipping`` (``docs/privacy.md``). Either map is a
    function of one row with values inside the bounds, so the release's sensitivity and its
    privacy are the same. (``release(..., intercept=True)`` adds the constant column after this,
    unscaled, so there the weighting does not carry over to the intercept.)

    Norms are computed without overflow (:func:`row_norms`). Returns the scaled copies and a
    :class:`ClipReport`. The inputs must already be validated (finite, shapes ``(n, d)`` and
    ``(n,)``).
    """
    _check_positive("x_bound", x_bound)
    _check_positive("y_bound", y_bound)
    norms, peak, unit, unit_norms = _rows_by_peak(X)
    x_over = norms > x_bound  # an infinite norm is clipped too
    abs_y = np.abs(y)
    y_over = abs_y > y_bound
    # a few ulps inside the bounds, so that rounding never leaves a scaled row outside them
    inside = 1.0 - 8.0 * np.finfo(np.float64).eps
    # x_i = peak_i * unit_i: the scaled x is unit_i * (peak_i c_i), computed so that nothing overflows
    c_y = np.where(y_over, y_bound * inside / np.where(y_over, abs_y, 1.0), 1.0)
    g_x = np.where(x_over, x_bound * inside / np.where(x_over, unit_norms, 1.0), np.inf)  # peak_i c_x,i
    c = np.minimum(c_y, np.where(x_over, g_x / np.where(x_over, peak, 1.0), 1.0))
    scaled = x_over | y_over
    Xc = np.where(scaled[:, None], unit * np.minimum(g_x, peak * c_y)[:, None], X)
    yc = np.where(scaled, y * c, y)
    report = ClipReport(
        n_rows=int(X.shape[0]),
        n_x_clipped=int(x_over.sum()),
        n_y_clipped=int(y_over.sum()),
        max_x_norm=float(norms.max(initial=0.0)),
        max_abs_y=float(abs_y.max(initial=0.0)),
        n_scaled=int(scaled.sum()),
    )
    return Xc, yc, report


def warn_if_clipped(report: ClipReport) -> None:
    """Tell the releasing party (only) how many rows the bounds changed."""
    if report.any_clipped:
        warnings.warn(str(report), ClippingWarning, stacklevel=3)


def as_published_gaussian_sigma(epsilon: float, delta: float) -> float:
    """**Not private.** The unit-sensitivity noise sd that the authors' published code computes.

    Their implementation of Balle & Wang's Algorithm 1 evaluates ``Phi(sqrt(eps) * v)``
    where the algorithm has ``Phi(sqrt(eps * v))`` (first term of both branches), which
    gives too little noise: at delta = 1e-5, 5.043 / 1.487 / 0.441 for eps = 0.1 / 1 / 10
    against the correct 30.750 / 3.7306 / 0.49989 (NOTES.md). The published accuracy
    figures were obtained with it; it exists only so that they can be reproduced side by
    side with the correct calibration. Never use it for a release.
    """
    check_privacy_parameters(epsilon, delta)
    eps = float(epsilon)
    return _algorithm1(eps, delta, lambda w: math.sqrt(eps) * w)
