"""Prior hyperparameters and model specifications (TOML files in ``bayes_dpreg/model_specs``,
``models/`` in the repository).

The hierarchical model (Alparslan et al. 2023, eqs. 4 and 10):

* ``theta ~ N(m, C)``
* ``sigma_y^2 ~ IG(a, b)`` (shape ``a``, scale ``b``)
* ``Sigma_x ~ IW(Lambda, kappa)`` (the paper's; ``Sigma_x_prior="iw"``), or this package's default,
  the separation prior ``Sigma_x = D R D``, ``log D_kk ~ N(log Lambda_kk / 2, scale_sd^2)``,
  ``R ~ LKJ(eta)`` (``"lkj"``, :class:`bayes_dpreg.model.densities.ScaledLKJ`)
* the conjugate non-private reference uses ``(theta, sigma_y^2) ~ NIG(m, Lambda_0, a, b)``,
  i.e. ``theta | sigma_y^2 ~ N(m, sigma_y^2 Lambda_0^{-1})``.

The default prior is *autoscaled* (``"auto"`` hyperparameters, :class:`PriorScales`):
it takes its scales from the declared bound on ``|y|`` and from the released
``S~_j`` (post-processing of a DP release: no privacy cost), in the spirit of
rstanarm's autoscaled priors. See :meth:`Prior.resolve` for the rule and its reasons.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..privacy.noisy_stats import NoisyStats
from ..stats import StackedStats, stack_stats

__all__ = [
    "Prior",
    "ResolvedPrior",
    "ModelSpec",
    "PriorScales",
    "prior_scales",
    "quantile_to_max",
    "release_lambda",
    "describe_prior",
    "load_model",
    "bundled_models",
    "AUTO",
]

Scalar_or_matrix = float | list | np.ndarray | str

AUTO = "auto"
SIGMA_X_PRIORS = ("auto", "iw", "lkj")
THETA_SCALES = ("auto", "release", "features")
DEFAULT_SIGMA_X_PRIOR = "lkj"
"""What ``Sigma_x_prior="auto"`` means where the method can take it (``docs/prior.md``)."""


class SamplerTraits(Protocol):
    """What a prior needs to know of a method (:class:`~bayes_dpreg.samplers.base.Sampler` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def sigma_x_priors(self) -> tuple[str, ...]: ...
    @property
    def sigma2_bound(self) -> bool: ...
    @property
    def theta_scales(self) -> tuple[str, ...]: ...


class PriorScales(NamedTuple):
    """The public scales an autoscaled prior is built from (:func:`prior_scales`).

    ``y_bound``: the response's scale, the declared bound on ``|y|`` (largest over parties),
    which the autoscaled prior reads as the largest ``|y|``: where a party's bound is a quantile
    ``q`` of its ``n`` responses (``release(..., bound_quantile=q)``, the bounds of
    :func:`~bayes_dpreg.propose_bounds`), the bound times :func:`quantile_to_max`;
    ``feature_ms``: per feature, an estimate of the mean square ``E[x_k^2]`` from the
    pooled released ``diag(sum_j S~_j) / n``, kept within ``[floor, x_bound^2]`` where
    ``floor`` is twice the sd of the release noise in that estimate (below it the
    release says nothing about the feature's scale)."""

    y_bound: float
    feature_ms: np.ndarray


def quantile_to_max(q: float, n: int) -> float:
    r"""How far the largest of ``n`` values ``|y_i|`` lies beyond their ``q`` quantile, for Gaussian
    ``y``: :math:`\Phi^{-1}(1 - 1/(2n)) / \Phi^{-1}((1 + q)/2)` (at least 1). A bound proposed at
    the quantile ``q`` (:func:`~bayes_dpreg.propose_bounds`) scales rows beyond it onto it; the
    prior's rule for ``theta`` was set with the bound at the responses' maximum (``docs/prior.md``),
    so such a bound is carried to the maximum a Gaussian response of ``n`` rows would have: 2.6 at
    ``q = 0.733, n = 300``, 1.6 at ``q = 0.973, n = 3000``."""
    from scipy.stats import norm

    return max(1.0, float(norm.ppf(1.0 - 0.5 / n) / norm.ppf((1.0 + q) / 2.0)))


def feature_ms_floor(stats: StackedStats) -> float:
    """The floor of :class:`PriorScales`' ``feature_ms``: twice the sd of the release noise in the pooled
    ``diag(sum_j S~_j) / n``."""
    return 2.0 * float(np.sqrt(np.sum(np.asarray(stats.sigma_S) ** 2))) / float(np.sum(stats.n))


def prior_scales(stats: StackedStats) -> PriorScales:
    """:class:`PriorScales` from stacked released statistics (:class:`~bayes_dpreg.stats.StackedStats`)."""
    n = float(np.sum(stats.n))
    diag = np.diagonal(np.asarray(stats.S), axis1=-2, axis2=-1).sum(0) / n
    floor = feature_ms_floor(stats)
    cap = float(np.max(stats.x_bound)) ** 2
    quantiles = stats.bound_quantiles or (None,) * len(stats.y_bound)
    y_scale = max(
        float(b) * (1.0 if q is None else quantile_to_max(q, int(nj)))
        for b, q, nj in zip(stats.y_bound, quantiles, stats.n, strict=True)
    )
    return PriorScales(y_scale, np.clip(diag, min(floor, cap), cap))


def release_lambda(stats: NoisyStats | Sequence[NoisyStats]) -> np.ndarray:
    """A release-based ``Lambda`` for ``Sigma_x ~ IW(Lambda, kappa)`` (``Sigma_x_prior="iw"``): the pooled estimate of
    ``Sigma_x`` from the released statistics (``nearestPSD(sum_j S~_j) / n`` plus a ridge of the
    noise's size, :func:`bayes_dpreg.model.linalg.pooled_covariance`); post-processing, no privacy cost.

    Under the inverse-Wishart, ``Lambda = diag(E[x_k^2])`` is too wide in a direction the release
    does not resolve (nearly collinear features); ``Prior(Sigma_x_prior="iw",
    Lambda=release_lambda(stats))`` lets it follow the features' covariance down to what the noise
    resolves. Measured on the paper's simulation it lifted 90% coverage from 0.48-0.74 to
    0.82-0.94, at up to twice the error of the posterior mean and with divergences in 40-90% of fits
    (``docs/prior.md``): a sensitivity check. The default separation prior reaches such directions
    without it."""
    import jax.numpy as jnp

    from .linalg import pooled_covariance

    st = stack_stats(stats)
    noise = float(np.sqrt(np.sum(np.asarray(st.sigma_S, dtype=np.float64) ** 2)))
    S_sum = jnp.asarray(np.asarray(st.S, dtype=np.float64).sum(0))
    n_total = jnp.asarray(float(np.sum(st.n)))
    return np.asarray(pooled_covariance(S_sum, n_total, jnp.asarray(noise)), dtype=np.float64)


def theta_feature_scale(pr: ResolvedPrior, Sigma_x_diag: Any) -> Any:
    """``D = diag(sqrt(Sigma_x,kk / theta_ms_k))`` (its diagonal, from ``Sigma_x``'s diagonal
    ``(..., d)``, NumPy or JAX) where the prior scales ``theta`` by the features
    (``Prior(theta_scale="features")``, ``pr.theta_ms`` set): ``theta | Sigma_x ~ N(m, D^{-1} C D^{-1})``,
    so each contribution ``theta_k x_k`` has the prior scale ``C`` gives it at ``E[x_k^2] = theta_ms_k``
    whatever ``E[x_k^2] = Sigma_x,kk`` is. ``None`` where ``C`` is fixed."""
    if pr.theta_ms is None:
        return None
    if Sigma_x_diag is None:
        raise ValueError("this prior scales theta by the features (theta_scale='features'): give Sigma_x")
    import jax

    sqrt = jax.numpy.sqrt if isinstance(Sigma_x_diag, jax.Array) else np.sqrt  # a tracer is a jax.Array
    return sqrt(Sigma_x_diag / pr.theta_ms)


def theta_prior_cov(pr: ResolvedPrior, Sigma_x_draws: Any = None) -> np.ndarray:
    """``theta``'s prior covariance as a report reads it: ``C``, or, where the prior scales ``theta`` by
    the features (:func:`theta_feature_scale`), the mean of ``D^-1 C D^-1`` over draws of ``Sigma_x``
    (``(..., d, d)``, the fit's): the prior at the feature scales the fit inferred."""
    C = np.asarray(pr.C, dtype=np.float64)
    if pr.theta_ms is None:
        return C
    if Sigma_x_draws is None:
        raise ValueError("this prior scales theta by the features (theta_scale='features'): give Sigma_x's draws")
    diag = np.diagonal(np.asarray(Sigma_x_draws, dtype=np.float64), axis1=-2, axis2=-1).reshape(-1, C.shape[0])
    inv_s = 1.0 / theta_feature_scale(pr, diag)
    return C * np.mean(inv_s[:, :, None] * inv_s[:, None, :], axis=0)


def fitted_theta_prior_cov(idata: Any, pr: ResolvedPrior) -> np.ndarray:
    """:func:`theta_prior_cov` at a fit's draws of ``Sigma_x`` (``idata.latent_posterior``), where
    ``theta``'s prior depends on them."""
    return theta_prior_cov(pr, None if pr.theta_ms is None else idata.latent_posterior["Sigma_x"].values)


def _g(v: float) -> str:
    return f"{float(v):.3g}"


def describe_prior(pr: ResolvedPrior, names: list[str], intercept: bool = False) -> str:
    """A resolved prior in words and numbers, for reports (not a Python repr)."""
    sd = np.sqrt(np.diag(pr.C))
    diagonal_C = np.allclose(pr.C, np.diag(np.diag(pr.C)))
    theta = (
        "θ ~ N(m, C) with independent coefficients: "
        + ", ".join(f"{nm} ~ N({_g(m)}, {_g(s)}²)" for nm, m, s in zip(names, pr.m, sd))
        if diagonal_C
        else f"θ ~ N(m, C), prior sds {', '.join(_g(s) for s in sd)}"
    )
    if pr.theta_ms is not None:
        theta += (
            " where the features' mean squares E[x_k²] are "
            + ", ".join(_g(v) for v in pr.theta_ms)
            + ", each sd scaled by sqrt(E[x_k²] / Σ_x,kk) at the sampled Σ_x"
        )
    lam = np.asarray(pr.Lambda)
    feats = names[1:] if intercept else names
    scale = (
        "diag(" + ", ".join(_g(v) for v in np.diag(lam)) + ")"
        if np.allclose(lam, np.diag(np.diag(lam)))
        else "a full matrix"
    )
    if pr.eta is not None:
        sds = ", ".join(_g(v) for v in np.sqrt(np.diag(lam)))
        sigma_x = (
            f"Σ_x = D R D over the features {', '.join(feats)}, with log D_kk ~ N(log({sds}), "
            f"{_g(pr.scale_sd or 1.0)}²) and the correlations R ~ LKJ({_g(pr.eta)})"
        )
    else:
        sigma_x = f"Σ_x ~ IW({scale}, κ = {_g(pr.kappa)}) over the features {', '.join(feats)}"
    bound = "" if pr.sigma2_max is None else f" on (0, {_g(pr.sigma2_max)}]"
    return f"{theta}; σ_y² ~ IG({_g(pr.a)}, {_g(pr.b)}){bound}; {sigma_x}."


def _vector(name: str, v: Any, d: int) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(d, float(arr))
    if arr.shape != (d,):
        raise ValueError(f"prior {name} must be a scalar or a length-{d} vector, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"prior {name} must be finite")
    return arr


def _spd(name: str, v: Any, d: int) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim == 0:
        arr = float(arr) * np.eye(d)
    elif arr.ndim == 1:
        if arr.shape != (d,):
            raise ValueError(f"prior {name} as a vector must have length {d}, got {arr.shape}")
        arr = np.diag(arr)
    if arr.shape != (d, d):
        raise ValueError(f"prior {name} must be a scalar, a length-{d} diagonal or a {d}x{d} matrix, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"prior {name} must be finite")
    if not np.allclose(arr, arr.T, rtol=1e-12, atol=0):
        raise ValueError(f"prior {name} must be symmetric")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"prior {name} must be positive definite") from None
    return 0.5 * (arr + arr.T)


def _full_matrix(v: Any) -> bool:
    """Whether a hyperparameter is a matrix with nonzero off-diagonal entries."""
    if isinstance(v, str):
        return False
    arr = np.asarray(v, dtype=np.float64)
    return arr.ndim == 2 and bool(np.any(arr != np.diag(np.diag(arr))))


def _is_auto(v: Any) -> bool:
    return isinstance(v, str) and v == AUTO


class ResolvedPrior(NamedTuple):
    """A :class:`Prior` made concrete for dimension ``d`` (arrays, float64)."""

    m: np.ndarray
    C: np.ndarray
    a: float
    b: float
    Lambda: np.ndarray
    kappa: float
    nig_precision: np.ndarray
    mu_x: np.ndarray | None = None  # (d,) prior mean of the feature mean (intercept model)
    mu_x_cov: np.ndarray | None = None  # (d, d)
    eta: float | None = None  # Sigma_x ~ ScaledLKJ(Lambda, eta, scale_sd); None: IW(Lambda, kappa)
    scale_sd: float | None = None
    sigma2_max: float | None = None  # sigma_y^2 ~ IG(a, b) on (0, sigma2_max]; None: no bound
    theta_ms: np.ndarray | None = None  # (d,) Sigma_x's diagonal at which theta's prior is C; None: C fixed


@dataclass(frozen=True)
class Prior:
    """Hyperparameters of the model; every one can be set.

    Scalars stand for multiples of the identity (``C = 10`` means ``10 I``);
    a vector is a diagonal; a nested list or array is a full matrix; ``"auto"``
    (the default for ``C``, ``b`` and ``Lambda``) is scaled to the declared
    bounds and the released statistics when the prior is resolved against them
    (:meth:`resolve`).

    Defaults:

    * ``m = 0``, ``C = "auto"``: ``C = diag(y_bound^2 / (4 d E[x_k^2]))``;
    * ``a = 1``, ``b = "auto"``: ``sigma_y^2 ~ IG(1, (y_bound/10)^2)``;
    * ``sigma2_max = inf``: no bound on ``sigma_y^2``. A number bounds it (``sigma_y^2 ~ IG(a, b)``
      on ``(0, sigma2_max]``); ``"auto"`` is ``y_bound^2``: ``|y| <= y_bound`` for every response the
      release saw, so ``sigma_y^2 = Var(y | x) <= E[y^2] <= y_bound^2`` where the model holds. The
      methods that take a bound are ``normalx-clt``, ``normalx-pooled``, ``normalx-nuts`` and
      ``normalx-intercept``; for
      the paper's samplers (its model) ``"auto"`` is no bound. Not the default: where parties'
      features differ (bike sharing split in time) the unbounded ``sigma_y^2`` absorbs the misfit of
      one shared ``Sigma_x``, and bounding it raised the error of the posterior mean (``docs/prior.md``,
      *A bound on sigma_y^2*);
    * ``Sigma_x_prior = "auto"``: ``"iw"`` where ``kappa`` or a full ``Lambda`` is given, else the
      separation prior ``"lkj"`` where the method takes it
      (``normalx-nuts``, ``normalx-intercept``): ``Sigma_x = D R D``, ``log D_kk ~
      N(log Lambda_kk / 2, scale_sd^2)``, ``R ~ LKJ(eta)``, ``eta = 1`` (uniform correlations), ``scale_sd = 1``
      (:class:`~bayes_dpreg.model.densities.ScaledLKJ`); ``"iw"`` for the paper's Gibbs samplers,
      whose conjugate update needs ``IW(Lambda, kappa)``;
    * ``Lambda = "auto"``: ``diag(E[x_k^2])`` (the scales' centre under ``"lkj"``); ``kappa = d + 1``
      (``None``, ``"iw"`` only): the vaguest proper inverse-Wishart;
    * ``nig_precision = None``: ``Lambda_0 = C^{-1}`` for the conjugate reference.
    * ``mu_x = 0``, ``mu_x_cov = 10 I``: the feature mean ``x_i ~ N(mu_x, Sigma_x)`` of the
      intercept model (App. B.2); with an intercept, ``m``, ``C`` and ``nig_precision`` are
      of dimension ``d + 1`` (intercept first) and ``Lambda`` of dimension ``d``.
    * ``theta_scale = "auto"``: the method's first ``Sampler.theta_scales`` where ``C`` is ``"auto"``
      (``"features"`` for ``normalx-nuts``, the default where a party is small; ``"release"`` for every
      other method, ``normalx-clt`` included, which takes ``"features"`` when asked), else ``"release"``. ``"release"``:
      ``theta ~ N(m, C)`` with ``C`` fixed (for ``"auto"``, at the features' mean squares read off
      the release). ``"features"``: ``theta | Sigma_x ~ N(m, D^{-1} C D^{-1})``,
      ``D = diag(sqrt(Sigma_x,kk / Lambda_kk))``: ``C`` is ``theta``'s prior where the features'
      mean squares are ``Lambda``'s diagonal, and each coefficient's prior scale follows its
      feature's sampled scale, so the prior of each contribution ``theta_k x_k`` stays put where
      the release does not resolve ``E[x_k^2]`` (``docs/prior.md``, *Where the release does not
      resolve the features' scale*). :meth:`resolve` alone reads ``"auto"`` as ``"release"``;
      :func:`~bayes_dpreg.fit` resolves it for its method (:meth:`for_theta_scale`).

    The paper's experimental settings are in ``models/alparslan2023.toml``.
    """

    m: Scalar_or_matrix = 0.0
    C: Scalar_or_matrix = AUTO
    a: float = 1.0
    b: float | str = AUTO
    Lambda: Scalar_or_matrix = AUTO
    kappa: float | None = None
    nig_precision: Scalar_or_matrix | None = None
    mu_x: Scalar_or_matrix = 0.0
    mu_x_cov: Scalar_or_matrix = 10.0
    Sigma_x_prior: str = AUTO
    eta: float = 1.0
    scale_sd: float = 1.0
    sigma2_max: float | str = math.inf
    theta_scale: str = AUTO

    def __post_init__(self) -> None:
        if self.theta_scale not in THETA_SCALES:
            raise ValueError(f"prior theta_scale must be one of {THETA_SCALES}, got {self.theta_scale!r}")
        if self.Sigma_x_prior not in SIGMA_X_PRIORS:
            raise ValueError(f"prior Sigma_x_prior must be one of {SIGMA_X_PRIORS}, got {self.Sigma_x_prior!r}")
        if self.Sigma_x_prior == "lkj" and (self.kappa is not None or _full_matrix(self.Lambda)):
            raise ValueError(
                "prior Sigma_x_prior='lkj' takes only Lambda's diagonal (the centre of the feature scales) and "
                "no kappa: give Lambda as a vector, or use Sigma_x_prior='iw' for IW(Lambda, kappa)"
            )
        for name in ("eta", "scale_sd"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"prior {name} must be a finite number > 0, got {v!r}")
        v = self.sigma2_max
        if not _is_auto(v) and (isinstance(v, bool) or not (isinstance(v, (int, float)) and v > 0)):
            raise ValueError(f"prior sigma2_max must be a number > 0 (inf: no bound) or 'auto', got {v!r}")
        for name in ("a", "b"):
            v = getattr(self, name)
            if name == "b" and v == AUTO:
                continue
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(
                    f"prior {name} must be a finite number > 0" + (" or 'auto'" if name == "b" else "") + f", got {v!r}"
                )
        for name in ("C", "Lambda", "m", "nig_precision", "mu_x", "mu_x_cov"):
            v = getattr(self, name)
            if isinstance(v, str) and not (v == AUTO and name in ("C", "Lambda")):
                raise ValueError(
                    f"prior {name} must be a number, vector or matrix"
                    + (" or 'auto'" if name in ("C", "Lambda") else "")
                    + f", got {v!r}"
                )

    @property
    def sigma_x_family(self) -> str:
        """``"iw"`` or ``"lkj"``: ``Sigma_x_prior`` with ``"auto"`` made concrete: ``"iw"`` where
        ``kappa`` (the inverse-Wishart's degrees of freedom) or a full (non-diagonal) ``Lambda`` is
        given, both of which only the inverse-Wishart uses; else ``"lkj"``."""
        if self.Sigma_x_prior != AUTO:
            return self.Sigma_x_prior
        return "iw" if self.kappa is not None or _full_matrix(self.Lambda) else DEFAULT_SIGMA_X_PRIOR

    def for_sampler(self, sampler: SamplerTraits) -> Prior:
        """This prior as ``sampler``'s model takes it, as :func:`~bayes_dpreg.fit` resolves it: every
        ``"auto"`` choice that depends on the method made (:meth:`for_families`,
        :meth:`for_sigma2_bound`, :meth:`for_theta_scale`)."""
        return (
            self.for_families(sampler.sigma_x_priors, sampler.name)
            .for_sigma2_bound(sampler.sigma2_bound, sampler.name)
            .for_theta_scale(sampler.theta_scales, sampler.name)
        )

    def for_families(self, families: tuple[str, ...], method: str) -> Prior:
        """This prior with ``Sigma_x_prior="auto"`` made concrete for a method whose model takes the
        ``families`` (the first that is the default, else ``families[0]``); an explicit family the
        method cannot take is a clear error."""
        if self.Sigma_x_prior == AUTO:
            family = self.sigma_x_family if self.sigma_x_family in families else families[0]
            return replace(self, Sigma_x_prior=family)
        if self.Sigma_x_prior not in families:
            raise ValueError(
                f"method {method!r} needs Sigma_x_prior in {families} (its algorithm uses the inverse-Wishart's "
                f"conjugacy), got {self.Sigma_x_prior!r}"
            )
        return self

    def for_theta_scale(self, scales: tuple[str, ...], method: str) -> Prior:
        """This prior with ``theta_scale="auto"`` made concrete for a method whose model takes the
        ``scales`` (the first of them where ``C`` is ``"auto"``, else ``"release"``); an explicit value
        the method cannot take is a clear error."""
        if self.theta_scale == AUTO:
            return replace(self, theta_scale=scales[0] if _is_auto(self.C) else "release")
        if self.theta_scale not in scales:
            raise ValueError(
                f"method {method!r} takes theta_scale in {scales}, got {self.theta_scale!r} (theta's prior "
                "scaled by the sampled Sigma_x is taken by normalx-nuts and normalx-clt: fit(..., method=...))"
            )
        return self

    def for_sigma2_bound(self, takes_bound: bool, method: str) -> Prior:
        """This prior for a method that takes the bound ``sigma_y^2 <= sigma2_max`` or not (the paper's
        samplers, whose model is unbounded): where it does not, ``"auto"`` is no bound and an explicit
        finite bound is a clear error."""
        if takes_bound:
            return self
        if _is_auto(self.sigma2_max):
            return replace(self, sigma2_max=math.inf)
        if math.isfinite(float(self.sigma2_max)):
            raise ValueError(
                f"method {method!r} takes no bound on sigma_y^2 (its model is the paper's, sigma_y^2 ~ IG(a, b) "
                f"on (0, inf)): give sigma2_max=inf (or 'auto'), got {self.sigma2_max!r}"
            )
        return self

    @property
    def is_auto(self) -> bool:
        """Whether some hyperparameter is ``"auto"`` (resolved against :class:`PriorScales`)."""
        return any(_is_auto(v) for v in (self.C, self.b, self.Lambda))

    def autoscaled(self, scales: PriorScales, d: int | None = None) -> Prior:
        """This prior with every ``"auto"`` hyperparameter made concrete from ``scales``.

        The rule (a weakly informative prior on the scale the public information implies):

        * ``theta_k ~ N(0, y_bound^2 / (4 d E[x_k^2]))``: a priori the signal ``x^T theta`` has
          expected variance ``sum_k E[x_k^2] Var(theta_k) = (y_bound/2)^2``, shared equally by
          the features. A response with ``|y| <= y_bound`` has ``sd(y) <= y_bound`` and, when
          ``y_bound`` is near the data's largest ``|y|``, typically ``sd(y) ~ y_bound/3.5``:
          the prior allows signals larger than any the bound makes plausible, yet it is
          informative enough to regularise the directions in which the noisy ``S~_j`` leave
          ``theta`` unidentified (there a vaguer prior lets the posterior mean wander: on
          bike sharing, ``y_bound^2/(d E[x_k^2])`` doubled the RMSE of the posterior mean;
          ``docs/prior.md``). Each feature's scale ``E[x_k^2]`` comes from the released
          ``S~_j`` (:func:`prior_scales`), so features on different scales get coefficients on
          matching scales; a prior from the bounds alone (``y_bound / x_bound`` for every
          coefficient, about the same as this one for z-scored features) is far too narrow
          for low-variance features. In the spirit of rstanarm's ``2.5 sd(y)/sd(x_k)``, which
          uses the data's own sds; here only public or released quantities enter.
        * ``sigma_y^2 ~ IG(1, (y_bound/10)^2)``: ``sigma_y < y_bound`` with probability
          0.990 and ``sigma_y > y_bound/30`` with 0.9999; the median is ``y_bound/8.3``.
          ``sigma_y^2`` enters only through ``z~_j``'s covariance
          ``sigma_y^2 S_j + sigma_z^2 I``, and with many parties the data inform it; with one
          party the release leaves it to this prior, where ``(y_bound/20)^2``, the default
          before 2026-12-06, put too little mass on a residual sd near ``y_bound/4`` and cost
          90% coverage (0.82 in the paper's one-party d = 2 cell; 0.905 with this scale;
          ``docs/prior.md``, *Noise variance left to its prior*).
        * ``sigma2_max = "auto"`` (not the default): ``y_bound^2``, as a response within the
          declared bound has ``Var(y | x) <= E[y^2] <= y_bound^2``.
        * ``Lambda = diag(E[x_k^2])``: the centre of the feature scales of the separation prior
          (``log D_kk ~ N(log Lambda_kk / 2, scale_sd^2)``, correlations ``LKJ(eta)``), or of
          ``IW(Lambda, kappa)`` with ``kappa = d + 1`` under ``Sigma_x_prior="iw"``.
        """
        ms = np.asarray(scales.feature_ms, dtype=np.float64)
        if d is not None and ms.shape != (d,):
            raise ValueError(f"prior scales are for d = {ms.shape[0]} features, not {d}")
        y = float(scales.y_bound)
        return replace(
            self,
            C=np.diag(y**2 / (4.0 * ms.size * ms)) if _is_auto(self.C) else self.C,
            b=(y / 10.0) ** 2 if _is_auto(self.b) else self.b,
            Lambda=np.diag(ms) if _is_auto(self.Lambda) else self.Lambda,
            sigma2_max=y**2 if _is_auto(self.sigma2_max) else self.sigma2_max,
        )

    def resolve(self, d: int, scales: PriorScales | None = None) -> ResolvedPrior:
        """Concrete arrays for dimension ``d``; checks shapes and definiteness.
        ``"auto"`` hyperparameters need ``scales`` (:func:`prior_scales` of the released
        statistics; :func:`bayes_dpreg.fit` passes them); ``sigma2_max = "auto"`` is ``y_bound^2``
        with ``scales`` and no bound without."""
        if self._scaled_by(scales):
            if scales is None:
                raise ValueError(
                    "this prior has 'auto' hyperparameters, scaled to the released statistics: "
                    "resolve it with scales=prior_scales(stats), or give C, b and Lambda"
                )
            return self.autoscaled(scales, d).resolve(d)
        kappa = d + 1.0 if self.kappa is None else float(self.kappa)
        if not kappa > d - 1:
            raise ValueError(f"prior kappa must exceed d - 1 = {d - 1}, got {kappa}")
        C = _spd("C", self.C, d)
        nig = np.linalg.inv(C) if self.nig_precision is None else _spd("nig_precision", self.nig_precision, d)
        return ResolvedPrior(
            m=_vector("m", self.m, d),
            C=C,
            a=float(self.a),
            b=float(self.b),
            Lambda=_spd("Lambda", self.Lambda, d),
            kappa=kappa,
            nig_precision=nig,
            eta=float(self.eta) if self.sigma_x_family == "lkj" else None,
            scale_sd=float(self.scale_sd) if self.sigma_x_family == "lkj" else None,
            sigma2_max=self._sigma2_max(),
            theta_ms=np.diag(_spd("Lambda", self.Lambda, d)).copy() if self.theta_scale == "features" else None,
        )

    def _scaled_by(self, scales: PriorScales | None) -> bool:
        """Whether resolving against ``scales`` goes through :meth:`autoscaled`: some hyperparameter
        needs them (:attr:`is_auto`), or they are given and ``sigma2_max`` is ``"auto"``."""
        return self.is_auto or (scales is not None and _is_auto(self.sigma2_max))

    def _sigma2_max(self) -> float | None:
        v = self.sigma2_max
        if _is_auto(v) or not math.isfinite(float(v)):
            return None
        from scipy.special import gammaincc

        if not gammaincc(float(self.a), float(self.b) / float(v)) > 1e-12:
            raise ValueError(
                f"prior sigma2_max = {float(v):.3g} leaves IG({float(self.a):.3g}, {float(self.b):.3g}) "
                "almost no mass below it: raise the bound or lower b"
            )
        return float(v)

    def resolve_intercept(self, d: int, scales: PriorScales | None = None) -> ResolvedPrior:
        """Arrays for the intercept model (App. B.2) with ``d`` features: ``theta`` of
        dimension ``d + 1`` (intercept first), ``Sigma_x``, ``mu_x`` of dimension ``d``.
        ``scales`` are those of the released ``[1, x]`` statistics (``d + 1`` entries, the
        first, ``E[1^2] = 1``, gives the intercept the prior sd ``y_bound``); ``Lambda``
        takes the features' entries."""
        if self.theta_scale == "features":
            raise ValueError("the intercept model takes theta_scale='release' only (theta's prior has d + 1 entries)")
        if self._scaled_by(scales):
            if scales is None:
                raise ValueError("this prior has 'auto' hyperparameters: resolve it with scales=prior_scales(stats)")
            feat = PriorScales(scales.y_bound, np.asarray(scales.feature_ms)[1:])
            lam = self.autoscaled(feat, d).Lambda
            return replace(self.autoscaled(scales, d + 1), Lambda=lam).resolve_intercept(d)
        full = replace(self, Lambda=1.0, kappa=None).resolve(d + 1)
        feat_pr = replace(self, m=0.0, C=1.0, nig_precision=None).resolve(d)
        return full._replace(
            Lambda=feat_pr.Lambda,
            kappa=feat_pr.kappa,
            eta=feat_pr.eta,
            scale_sd=feat_pr.scale_sd,
            mu_x=_vector("mu_x", self.mu_x, d),
            mu_x_cov=_spd("mu_x_cov", self.mu_x_cov, d),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Prior:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown prior hyperparameters {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> Prior:
        """The ``[prior]`` table of a model specification file."""
        return load_model(path).prior


@dataclass(frozen=True)
class ModelSpec:
    """A model specification: the prior and default options for :func:`bayes_dpreg.fit`."""

    prior: Prior
    fit: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    description: str = ""


def bundled_models() -> list[str]:
    """Names of the model specifications shipped with the package (``bayes_dpreg/model_specs``,
    also reachable as ``models/`` in the repository)."""
    from importlib import resources

    return sorted(
        f.name[:-5] for f in (resources.files("bayes_dpreg") / "model_specs").iterdir() if f.name.endswith(".toml")
    )


def load_model(path: str | os.PathLike) -> ModelSpec:
    """Read a TOML model specification (``[prior]`` and optional ``[fit]`` tables): a file, or
    the name of a bundled one (``"default"``, ``"alparslan2023"``, ...; :func:`bundled_models`),
    which works from any directory."""
    from importlib import resources

    if isinstance(path, str) and not Path(path).exists() and path in bundled_models():
        text = (resources.files("bayes_dpreg") / "model_specs" / f"{path}.toml").read_text()
        path = Path(f"{path}.toml")
    else:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: no such model file, and not a bundled model ({', '.join(bundled_models())})"
            )
        text = path.read_text()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML ({exc})") from None
    unknown = set(doc) - {"name", "description", "prior", "fit"}
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {sorted(unknown)}")
    try:
        prior = Prior.from_dict(doc.get("prior", {}))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return ModelSpec(prior, dict(doc.get("fit", {})), doc.get("name", path.stem), doc.get("description", ""))
