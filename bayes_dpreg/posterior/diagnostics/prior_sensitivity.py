"""Prior sensitivity by power-scaling (Kallioinen et al. 2024, ``arviz.psens``): how much ``theta``'s
posterior depends on each prior factor (:func:`prior_sensitivity`). ``fit`` records it for every
factor and warns where ``theta``'s intervals follow the prior of ``sigma_y^2``
(:class:`NoiseVariancePriorWarning`): the release can leave the noise variance to its prior (with one
party it always does), and then ``theta``'s intervals scale with that prior's ``sqrt(sigma_y^2)``.
``Sigma_x``'s sensitivity is recorded without a warning: the resolution check names the directions
where its prior decides (``docs/prior.md``, *Prior sensitivity*)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .base import Check, Finding

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = [
    "PriorSensitivityWarning",
    "NoiseVariancePriorWarning",
    "PriorSensitivity",
    "prior_sensitivity",
    "prior_sensitivity_summary",
    "sigma_x_sensitive",
    "sigma2_sensitive",
    "sigma2_contraction",
    "noise_variance_message",
    "PRIOR_SENSITIVITY_MAX",
    "CHECK",
]


class PriorSensitivityWarning(UserWarning):
    """Some coefficient's interval depends on the prior of a nuisance parameter, not on the data: of
    ``Sigma_x`` along a direction the release does not resolve (:class:`~.resolution.UnresolvedDirectionWarning`)
    or of ``sigma_y^2`` where the release leaves the noise variance open (:class:`NoiseVariancePriorWarning`)."""


class NoiseVariancePriorWarning(PriorSensitivityWarning):
    """``theta``'s intervals depend on the prior of ``sigma_y^2``: the release says little about the
    noise variance (where ``y^T y`` is not released only the scatter of the parties' ``z~_j`` informs
    it; with one party nothing does), and the intervals scale with ``sqrt(sigma_y^2)``. They are as
    good as that prior."""


PRIOR_SENSITIVITY_MAX = 0.05  # priorsense's threshold for an informative prior (Kallioinen et al.)


class PriorSensitivity(NamedTuple):
    """:func:`prior_sensitivity`'s result, per coefficient (``coef``): ``prior[name]`` the
    power-scaling sensitivity of ``theta`` to the prior factor ``name`` (``theta``, ``sigma2``,
    ``Sigma_x``), ``likelihood`` to the ``z~`` likelihood; ``noise[name]`` the largest value over
    coefficients that Monte Carlo noise alone reaches with probability 0.05 (a permutation
    test, run only for factors that reach the threshold); ``threshold`` is priorsense's 0.05."""

    coef: list[str]
    prior: dict[str, np.ndarray]
    likelihood: np.ndarray
    noise: dict[str, float]
    threshold: float

    def cutoff(self, name: str) -> float:
        """The sensitivity to prior factor ``name`` that counts: at least the threshold and above noise."""
        return max(self.threshold, self.noise.get(name, 0.0))

    def sensitive(self, name: str) -> list[str]:
        """The coefficients whose sensitivity to prior factor ``name`` reaches :meth:`cutoff`."""
        return [c for c, s in zip(self.coef, self.prior.get(name, ())) if s >= self.cutoff(name)]

    def diagnosis(self, k: int) -> str:
        """priorsense's reading for coefficient ``k``: a prior factor at or above its cutoff is a
        *prior-data conflict* where the likelihood sensitivity reaches the threshold too, else a
        *strong prior / weak likelihood*; ``"-"`` when no prior factor reaches its cutoff."""
        if all(float(s[k]) < self.cutoff(name) for name, s in self.prior.items()):
            return "-"
        return "prior-data conflict" if self.likelihood[k] >= self.threshold else "strong prior / weak likelihood"


def _psens(idata: Any, component: str, component_var_names: str | None, delta: float) -> np.ndarray:
    """``arviz.psens`` of ``theta`` (per coefficient) for one prior factor or the likelihood."""
    group = idata.log_prior[[component_var_names]] if component == "prior" else idata.log_likelihood
    draws = idata.posterior["theta"].values
    S = draws.shape[0] * draws.shape[1]
    per_draw = sum(v.values.reshape(S, -1).sum(-1) for v in group.data_vars.values())  # each variable's own shape
    return psens_draws(draws.reshape(S, -1), per_draw, delta)[0]


def psens_draws(draws: np.ndarray, log_density: np.ndarray, delta: float, *more: np.ndarray) -> list[np.ndarray]:
    r"""``arviz.psens`` on arrays: the power-scaling sensitivity of each column of ``draws`` (and
    of each array in ``more``, same shape) to the factor whose log density at the draws is
    ``log_density`` (``(S,)``). ArviZ's own steps (``psislw`` for the weights of the factor raised to
    ``1 / (1 + delta)`` and ``1 + delta``, then the cumulative Jensen-Shannon distances,
    :func:`_powerscale_sens`), without its xarray layer and for all columns at once; the weights
    are computed once for all arrays. Equal to ``arviz.psens`` to rounding
    (``tests/test_prior_sensitivity.py``)."""
    import arviz as az

    weights = []
    for alpha in (1.0 / (1.0 + delta), 1.0 + delta):
        w = np.exp(az.psislw((alpha - 1.0) * log_density)[0])
        weights.append(w / w.sum())
    columns = np.concatenate([draws, *more], axis=1)
    return np.split(_powerscale_sens(columns, weights[0], weights[1], delta), len(more) + 1)


def _powerscale_sens(draws: np.ndarray, lower: np.ndarray, upper: np.ndarray, delta: float) -> np.ndarray:
    """ArviZ's ``_powerscale_sens`` for every column of ``draws`` (``(S, K)``): the finite-difference
    derivative ``(CJS_lower + CJS_upper) / (2 log2(1 + delta))``, each CJS the larger of the draws'
    and their negatives'. ArviZ loops over columns in Python and sorts a column four times (its
    ``_cjs_dist`` sorts one column a call); its permutation test asks ``20 d`` columns of a fit, 0.1-0.4 s
    at d = 5-20 that way. Here one sort serves both signs (the negated draws sorted are the sorted
    draws negated and reversed: only tied draws may swap, which their zero gaps make irrelevant) and
    both weights."""
    order = np.argsort(draws, axis=0)
    x = np.take_along_axis(draws, order, axis=0)
    sides = ((x, order), (-x[::-1], order[::-1]))
    cjs = lambda w: np.maximum(*(_cjs_dist(xs, w[o]) for xs, o in sides))
    return (cjs(lower) + cjs(upper)) / (2.0 * np.log2(1.0 + delta))


def _cjs_dist(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    r"""ArviZ's ``_cjs_dist`` column by column, given the columns sorted (``x``, ``(S, K)``) and the
    weights in their order (``w``): the cumulative Jensen-Shannon distance between the empirical CDF
    ``P`` of each column and ``Q``, that of the same draws weighted by ``w``, with ``\Delta x`` the
    gaps, ``sqrt((CJS(P||Q) + CJS(Q||P)) / \int (P + Q))``, ``CJS(P||Q) = \sum \Delta x P log2(2P / (P + Q))
    + (\int Q - \int P) / (2 ln 2)`` (floored at 0)."""
    S = x.shape[0]
    gaps = np.diff(x, axis=0)
    p = np.linspace(1 / S, 1 - 1 / S, S - 1)[:, None]
    q = np.cumsum(w / np.sum(w[:, :1]), axis=0)[:-1]
    p_int, q_int = (p * gaps).sum(0), (q * gaps).sum(0)
    log2 = lambda a: np.log2(a, out=np.zeros_like(a), where=a != 0)
    half = log2(0.5 * (p + q))
    pq = np.maximum(0.0, (gaps * p * (log2(p) - half)).sum(0) + 0.5 / np.log(2) * (q_int - p_int))
    qp = np.maximum(0.0, (gaps * q * (log2(q) - half)).sum(0) + 0.5 / np.log(2) * (p_int - q_int))
    return np.sqrt((pq + qp) / (p_int + q_int))


def _noise_level(idata: Any, name: str, delta: float, permutations: int, rng: np.random.Generator) -> float:
    """The ``1 - 1/(permutations + 1)`` point of the largest sensitivity over coefficients when the
    factor's log density is shuffled across draws (so it cannot depend on ``theta``): the level
    that Monte Carlo noise alone reaches. The estimate's noise grows with the spread of the log
    density over the draws (an inverse-Wishart over many entries varies by tens of nats)."""
    theta = idata.posterior["theta"].values
    flat = theta.reshape((-1,) + theta.shape[2:])
    log_density = idata.log_prior[name].values.reshape(flat.shape[0], -1).sum(-1)
    # shuffling the log density against the draws is shuffling the draws against it: the same
    # pairs, so one set of PSIS weights tests every shuffle
    shuffled = [flat[np.argsort(rng.permutation(flat.shape[0]))] for _ in range(permutations)]
    return max(float(np.max(s)) for s in psens_draws(shuffled[0], log_density, delta, *shuffled[1:]))


def _factor_rng(seed: int, name: str) -> np.random.Generator:
    """One shuffle stream per factor, so that a factor's noise level does not depend on which other
    factors were tested (the fit tests ``Sigma_x`` alone, a report all of them)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),)))


def prior_sensitivity(
    idata: Any,
    *,
    delta: float = 0.01,
    permutations: int = 19,
    noise_factors: Sequence[str] | None = None,
    seed: int = 0,
) -> PriorSensitivity:
    r"""Power-scaling sensitivity of ``theta`` to each prior factor and to the likelihood
    (Kallioinen, Paananen, Bürkner & Vehtari 2024, *Detecting and diagnosing prior and likelihood
    sensitivity with power-scaling*; ``arviz.psens``). Power-scaling one factor ``p_i`` of the
    posterior to ``p_i^alpha`` reweights the draws by ``p_i^{alpha - 1}`` (Pareto-smoothed
    importance sampling, no refit); the sensitivity is the rate of change of the cumulative
    Jensen-Shannon distance between the posterior of each ``theta_k`` at ``alpha = 1 +- delta``
    and at 1, and 0.05 or more marks an informative factor.

    Each top-level prior of eq. (4) is scaled alone, from the fit's ``log_prior`` group (``theta``,
    ``sigma2``, ``Sigma_x``, those the method infers); the likelihood is that of the released
    ``z~_j`` (the ``log_likelihood`` group). The estimate is noisy where a factor's log density
    spreads widely over the draws: an ``IW`` density that does not depend on ``theta`` at all
    read 0.07-0.12 at 4,000 draws. So each factor also gets a noise level by a Monte Carlo
    permutation test (``permutations`` shuffles of its log density across draws; with 19, a
    factor counts at level 0.05 only when its largest sensitivity beats every shuffle). The test
    costs about 10 ms a shuffle, so it runs only for the factors of ``noise_factors`` (all when
    ``None``) that reach 0.05 at all; ``noise`` holds those it ran for.

    An informative prior on ``theta`` may be intended; ``Sigma_x``'s prior is a nuisance prior
    that should not matter, and where it does the intervals in that direction come from it.
    """
    if "log_prior" not in idata.groups() or "log_likelihood" not in idata.groups():
        raise ValueError("prior_sensitivity needs a fit's log_prior and log_likelihood groups (MCMC methods)")
    prior = {name: _psens(idata, "prior", name, delta) for name in idata.log_prior.data_vars}
    candidates = prior if noise_factors is None else noise_factors
    tested = [k for k, v in prior.items() if np.max(v) >= PRIOR_SENSITIVITY_MAX and k in candidates]
    return PriorSensitivity(
        [str(c) for c in idata.posterior["theta"].coords["coef"].values],
        prior,
        _psens(idata, "likelihood", None, delta),
        {name: _noise_level(idata, name, delta, permutations, _factor_rng(seed, name)) for name in tested},
        PRIOR_SENSITIVITY_MAX,
    )


def _cutoff(attrs: Any, name: str) -> float:
    return max(PRIOR_SENSITIVITY_MAX, float(attrs.get(f"prior_sensitivity_{name}_noise", 0.0)))


def _sensitive(attrs: Any, name: str) -> bool:
    key = f"prior_sensitivity_{name}"
    return key in attrs and float(attrs[key]) >= _cutoff(attrs, name)


def sigma_x_sensitive(attrs: Any) -> bool:
    """Whether a fit's recorded ``Sigma_x`` sensitivity reaches 0.05 and its noise level."""
    return _sensitive(attrs, "Sigma_x")


def sigma2_sensitive(attrs: Any) -> bool:
    """Whether a fit's recorded sensitivity of ``theta`` to the prior of ``sigma_y^2`` reaches 0.05 and
    its noise level: :class:`NoiseVariancePriorWarning`'s rule."""
    return _sensitive(attrs, "sigma2")


def sigma2_contraction(idata: Any) -> float | None:
    """The posterior sd of ``log sigma_y^2`` over its prior sd (from the fit's ``prior`` draws): about
    1 where the release leaves the noise variance to its prior; ``None`` without both sets of draws."""
    if "sigma2" not in idata.posterior or "prior" not in idata.groups() or "sigma2" not in idata.prior:
        return None
    sd = lambda a: float(np.std(np.log(np.asarray(a.values, dtype=np.float64))))
    prior_sd = sd(idata.prior["sigma2"])
    return sd(idata.posterior["sigma2"]) / prior_sd if prior_sd > 0 else None


def noise_variance_message(attrs: Any, parties: int | None = None, yty_used: bool | None = None) -> str:
    """The text of :class:`NoiseVariancePriorWarning` (and the CLI's and report's line) from a fit's attrs;
    ``yty_used``: the fit read the parties' ``y^T y`` (default: the attrs' ``yty_used``)."""
    s, cut = float(attrs["prior_sensitivity_sigma2"]), _cutoff(attrs, "sigma2")
    c = attrs.get("sigma2_prior_contraction")
    said = (
        f"the posterior sd of log sigma2 is {float(c):.2f} times its prior's"
        if c is not None
        else "the release says little about sigma2"
    )
    why = "; with one party the release has no scatter between parties to inform it" if parties == 1 else ""
    used = attrs.get("yty_used", 0) if yty_used is None else yty_used
    if not used and attrs.get("yty_released", 0):
        why += f" (y^T y is released, but method {attrs.get('method', '?')!r} does not read it: normalx-clt does)"
    elif not used:
        why += (
            " (y^T y is not released: release(..., yty=True) releases it, and the fit then reads sigma2 from it;"
            " such fits take about twice as long, docs/prior.md, *Releasing y^T y*)"
        )
    return (
        f"theta's intervals depend on the prior of the noise variance sigma2 (power-scaling sensitivity {s:.3f}, "
        f"counted from {cut:.3f}): {said}{why}, and the intervals scale with sqrt(sigma2), so they are as good as "
        "that prior (docs/prior.md, *Noise variance left to its prior*). Where you know the residual sd s "
        "roughly, say so: Prior(a=3, b=2 * s**2) has mean s**2."
    )


def prior_sensitivity_summary(attrs: Any) -> str | None:
    """A line on ``sigma_y^2``'s prior where it decides ``theta``'s intervals (first: the report shows a
    summary's first line), then one on ``Sigma_x``'s prior sensitivity where the fit recorded it; ``None``
    when there is neither."""
    lines = []
    if sigma2_sensitive(attrs):
        lines.append(f"Prior of sigma2: {noise_variance_message(attrs, attrs.get('J'))} (NoiseVariancePriorWarning)")
    if "prior_sensitivity_Sigma_x" in attrs:
        s, cut = float(attrs["prior_sensitivity_Sigma_x"]), _cutoff(attrs, "Sigma_x")
        measured = f"largest power-scaling sensitivity {s:.3f}, counted from {cut:.3f} (0.05 or Monte Carlo noise)"
        if not sigma_x_sensitive(attrs):
            lines.append(f"Prior of Sigma_x: the intervals do not depend on it ({measured}).")
        else:
            lines.append(
                f"Prior of Sigma_x: the intervals depend on it ({measured}): the release does not pin the features' "
                "covariance in some direction, and there the intervals are the prior's (see the release resolution)."
            )
    return "\n".join(lines) or None


def _flagged(attrs: Any) -> bool:
    return sigma_x_sensitive(attrs) or sigma2_sensitive(attrs)


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding | None:
    """The largest power-scaling sensitivity of ``theta`` to each prior factor and to the likelihood
    (:func:`prior_sensitivity`; the noise level for ``Sigma_x`` and ``sigma2``), ``None`` without a
    ``log_prior`` group. It warns (:class:`NoiseVariancePriorWarning`) where ``theta`` depends on the
    prior of ``sigma_y^2`` (:func:`sigma2_sensitive`), not on ``Sigma_x``'s: that fired on 36 of 40
    fits of the paper's simulation, all 22 that covered among them, and the resolution check names the
    directions instead."""
    if "log_prior" not in idata.groups():
        return None
    ps = prior_sensitivity(idata, noise_factors=("Sigma_x", "sigma2"))
    attrs: dict[str, Any] = {f"prior_sensitivity_{k}": float(np.max(v)) for k, v in ps.prior.items()}
    attrs.update({f"prior_sensitivity_{k}_noise": v for k, v in ps.noise.items()})
    attrs["likelihood_sensitivity_min"] = float(np.min(ps.likelihood))
    contraction = sigma2_contraction(idata)
    if contraction is not None:
        attrs["sigma2_prior_contraction"] = contraction
    if sigma2_sensitive(attrs):
        parties = None if st is None else int(st.J)
        message = noise_variance_message(attrs, parties, st is not None and sampler.reads_yty(st))
        return Finding("prior_sensitivity", False, attrs, message, NoiseVariancePriorWarning)
    return Finding("prior_sensitivity", not sigma_x_sensitive(attrs), attrs)


CHECK = Check(
    "prior_sensitivity",
    applies=lambda sampler: sampler.kind == "mcmc",
    check=check,
    summary=prior_sensitivity_summary,
    flagged=_flagged,
    warning=NoiseVariancePriorWarning,
)
