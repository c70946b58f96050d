"""``fit``: one entry point from released statistics to an ``arviz.InferenceData``.

Methods come from the registry :data:`bayes_dpreg.samplers.SAMPLERS` (one module per
method); ``fit`` checks the statistics against what the chosen sampler declares it
needs, resolves the prior (autoscaled to the release by default), runs it, and checks
convergence: after every MCMC fit the rank-normalised R-hat and bulk/tail ESS of
``theta`` and ``sigma2`` are computed and a :class:`ConvergenceWarning` names the worst
quantities when R-hat > 1.01, an ESS < 100 per chain or a NUTS transition diverged.
The fixed-S methods (``fast``, ``fixeds``) warn when the release noise is not
negligible against the released ``S~_j`` (:func:`~bayes_dpreg.diagnostics.noise_to_signal`).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

if TYPE_CHECKING:  # arviz loads in about 0.7 s: only when a fit is made
    import arviz as az

from .cache import enable_compilation_cache
from .diagnostics import (
    NOISE_TO_SIGNAL_MAX,
    BoundsMisfitWarning,
    ConvergenceWarning,
    HeterogeneityWarning,
    bounds_misfit_message,
    convergence,
    heterogeneous,
    noise_to_signal,
    party_heterogeneity,
    prior_sensitivity,
    sigma2_over_bound,
)
from .entry import public
from .idata import build as build_idata
from .idata import prefetch_arviz
from .prior import ModelSpec, Prior, describe_prior, load_model, prior_scales
from .release import NoisyStats, as_stats_list, check_distinct, stack_stats, warn_if_not_private
from .resolution import UnresolvedDirectionWarning, direction_report, release_resolution
from .samplers import DEFAULT_METHOD, SAMPLERS, Sampler, default_method
from .samplers import get as get_sampler
from .samplers.base import positive_int
from .samplers.fast import fast_sigma2

__all__ = ["fit", "fast_sigma2", "METHODS", "resolve_prior", "NoiseWarning", "NOISE_TO_SIGNAL_MAX"]

PriorLike = Prior | ModelSpec | str | os.PathLike | None

METHODS = SAMPLERS  # name -> Sampler (kept under its old name)

_RELEASE_FN = {"ssp": "bayes_dpreg.release", "adassp": "bayes_dpreg.release_adassp", "bs": "bayes_dpreg.release_bs"}


class NoiseWarning(UserWarning):
    """A method that treats ``nearestPSD(S~_j)`` as exact was used where the release noise is not negligible."""


def resolve_prior(prior: PriorLike) -> Prior:
    """``None`` -> the default (autoscaled) :class:`Prior`; a path -> its TOML ``[prior]`` table."""
    if prior is None:
        return Prior()
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, ModelSpec):
        return prior.prior
    if isinstance(prior, (str, os.PathLike)):
        return load_model(prior).prior
    raise TypeError(f"prior must be a Prior, a ModelSpec or a TOML path, got {type(prior).__name__}")


def _check_statistics(sampler: Sampler, stats: list[NoisyStats], d: int, n: np.ndarray) -> bool:
    """Reject statistics the sampler cannot use; returns whether they carry an intercept column."""
    wrong = [j for j, s in enumerate(stats) if s.mechanism not in sampler.mechanisms]
    if wrong:
        mech = sampler.mechanisms[0]
        raise ValueError(
            f"method {sampler.name!r} needs statistics released with {_RELEASE_FN[mech]} "
            f"(mechanism {mech!r}); parties {wrong} used another mechanism"
        )
    flags = {bool(s.meta.get("intercept", False)) for s in stats}
    if len(flags) > 1:
        raise ValueError("some parties released with intercept=True and some without")
    intercept = flags.pop()
    if intercept and sampler.centred_features:
        raise ValueError(
            f"method {sampler.name!r} assumes zero-mean features; for statistics released with "
            "intercept=True use 'normalx-intercept', 'fixeds' or 'fast'"
        )
    if sampler.needs_intercept and not intercept:
        raise ValueError(f"method {sampler.name!r} needs statistics released with intercept=True")
    if sampler.needs_wishart:
        small = [(j, int(nj)) for j, nj in enumerate(n) if nj <= d + 1]
        if small:
            raise ValueError(
                f"method {sampler.name!r} models S_j ~ Wishart(Sigma_x, n_j) and needs n_j > d + 1 = "
                f"{d + 1}; parties (index, n_j) {small} are too small (use 'fixeds' or 'fast')"
            )
    return intercept


@public
def fit(
    stats: NoisyStats | Sequence[NoisyStats],
    method: str | None = None,
    prior: PriorLike = None,
    *,
    num_samples: int | None = None,
    num_chains: int = 4,
    num_warmup: int | None = None,
    seed: int = 0,
    coef_names: Sequence[str] | None = None,
    **options: Any,
) -> az.InferenceData:
    """Posterior of the regression coefficients from the parties' released statistics.

    Parameters
    ----------
    stats : one :class:`NoisyStats` per party (from :func:`release` or :func:`load_stats`).
    method : a name in :data:`bayes_dpreg.samplers.SAMPLERS`; default ``"normalx-nuts"``,
        the normalX model (eq. 10, the noise in ``S~_j`` modelled) sampled by NUTS, or, from
        ``J d (d + 1) / 2 >= 2000`` latent ``S_j`` entries, ``"normalx-clt"``, the same model with
        the ``S_j`` integrated out under the Wishart's CLT
        (:func:`~bayes_dpreg.samplers.default_method`). Others:
        ``"normalx"`` (MCMC-normalX, Alg. 1), ``"fixeds"`` (Alg. 2), ``"fast"`` (Alg. 3,
        closed form), ``"bs"`` (App. C.1; :func:`release_bs` statistics), ``"adassp"``
        (App. C.2; :func:`release_adassp` statistics, a point estimate),
        ``"normalx-intercept"`` (App. B.2; ``release(..., intercept=True)``).
    prior : a :class:`Prior`, a :class:`ModelSpec` or a TOML path; default ``Prior()``, whose
        ``"auto"`` scales come from the declared ``y_bound`` and the released ``S~_j``
        (:meth:`Prior.autoscaled`).
    num_samples, num_warmup : draws and warm-up iterations per chain (default: the method's).
    num_chains : chains (MCMC) or draw groups (exact methods).
    seed : seed of the analyst's sampling (the releases' noise is already fixed).
    coef_names : labels of the ``coef`` dimension.
    options : method options (``bayes_dpreg.samplers.SAMPLERS[method].options``), e.g.
        ``target_accept_prob`` for ``normalx-nuts``, ``sigma2="text" | "code" | float`` for
        ``fast``, ``p`` for ``adassp``, ``progress_bar`` for all, ``extend`` for the NUTS methods
        (continue chains that mix too slowly, up to that many times; off by default).

    Returns
    -------
    ``arviz.InferenceData`` (:mod:`bayes_dpreg.idata`): ``posterior`` (``theta`` with dims
    ``chain, draw, coef``; ``sigma2`` where the method infers it), ``latent_posterior``
    (``S``, ``Sigma_x``, ... where inferred), ``sample_stats`` (MCMC), ``observed_data``
    (the released ``S_tilde``, ``z_tilde``), ``constant_data`` (``n``, noise sds, bounds,
    eps, delta per party), ``log_likelihood`` (one value per party, for ``az.loo`` and
    ``az.compare``), ``posterior_predictive``, ``prior`` and ``prior_predictive``. The
    posterior's ``attrs`` record ``method``, ``epsilon``, ``delta``, ``J``, ``n``, the
    resolved prior, the method's settings and, for MCMC methods, ``max_rhat``,
    ``min_ess_bulk``, ``min_ess_tail`` and ``converged``.

    Warns
    -----
    :class:`ConvergenceWarning` when an MCMC fit has not converged; :class:`NoiseWarning`
    when ``fast`` or ``fixeds`` is used where the release noise matters;
    :class:`~bayes_dpreg.privacy.NotPrivateWarning` for statistics released with the
    authors' "as published" noise and :class:`~bayes_dpreg.release.SeededReleaseWarning`
    for statistics whose noise came from a caller's seed.

    Raises
    ------
    ValueError when the same release appears twice (same ``release_id`` or identical
    statistics) or two parties share a name.
    """
    enable_compilation_cache()
    stats = as_stats_list(stats)
    sampler = get_sampler(default_method(stats[0].d, len(stats)) if method is None else method)
    check_distinct(stats)
    for s in stats:
        warn_if_not_private(s, stacklevel=3)
    num_chains = positive_int("num_chains", num_chains)
    num_samples = positive_int("num_samples", sampler.num_samples if num_samples is None else num_samples)
    num_warmup = positive_int("num_warmup", sampler.num_warmup if num_warmup is None else num_warmup, 0)
    st = stack_stats(stats)
    d = st.d
    intercept = _check_statistics(sampler, stats, d, st.n)
    names = _coef_names(coef_names, stats, intercept, d)
    prior_obj = resolve_prior(prior).for_families(sampler.sigma_x_priors, sampler.name)
    scales = prior_scales(st)
    pr = prior_obj.resolve_intercept(d - 1, scales) if sampler.needs_intercept else prior_obj.resolve(d, scales)
    unknown = set(options) - set(sampler.options)
    if unknown:
        raise TypeError(
            f"method {sampler.name!r}: unexpected options {sorted(unknown)}; it takes {sorted(sampler.options)}"
        )
    prefetch_arviz()
    res = sampler.run(st, pr, jax.random.key(seed), num_chains, num_samples, num_warmup, **options)
    _check_finite(sampler.name, res.posterior)
    features = names[1:] if sampler.needs_intercept else names
    idata = build_idata(res, st, pr, sampler, names, _party_names(stats), features, jax.random.key(seed + 1))
    attrs = _fit_attrs(sampler, st, stats, prior_obj, pr, names, intercept, seed, num_samples, num_chains)
    attrs.update(res.attrs)
    idata.posterior.attrs.update(attrs)
    _warn_if_unreliable(sampler, idata, st, pr)
    return idata


def _fit_attrs(
    sampler: Sampler,
    st: Any,
    stats: list[NoisyStats],
    prior_obj: Prior,
    pr: Any,
    names: list[str],
    intercept: bool,
    seed: int,
    num_samples: int,
    num_chains: int,
) -> dict[str, Any]:
    """The posterior's attributes: the method, the release, the prior and the run."""
    return {
        "method": sampler.name,
        "method_label": sampler.label,
        "epsilon": float(st.epsilon.max()),
        "delta": float(st.delta.max()),
        "epsilon_per_party": st.epsilon.tolist(),
        "delta_per_party": st.delta.tolist(),
        "J": st.J,
        "n": int(st.n.sum()),
        "n_per_party": st.n.tolist(),
        "d": st.d,
        "seed": int(seed),
        "num_samples": num_samples,
        "num_chains": num_chains,
        "intercept": int(intercept),
        "prior": repr(prior_obj),
        "prior_description": describe_prior(pr, names, sampler.needs_intercept),
        "prior_autoscaled": int(prior_obj.is_auto),
        "prior_theta_sd": np.sqrt(np.diag(pr.C)).tolist(),
        "prior_sigma2_a_b": [float(pr.a), float(pr.b)],
        "inference_library": "bayes_dpreg",
        "release_ids": [s.release_id for s in stats],
    }


def _coef_names(coef_names: Sequence[str] | None, stats: list[NoisyStats], intercept: bool, d: int) -> list[str]:
    """``coef_names``, else the features' names the releases carry (all parties must agree: a
    party whose columns are in another order would have its coefficients misattributed), else
    ``theta_k``."""
    if coef_names is None:
        released = {s.features for s in stats if s.features is not None}
        if len(released) > 1:
            listed = "; ".join(f"{s.name or j}: {list(s.features)}" for j, s in enumerate(stats) if s.features)
            raise ValueError(
                f"the parties released different feature names ({listed}): each party must release the same "
                "columns in the same order (or pass coef_names= to label them yourself)"
            )
        feats = list(released.pop()) if released else [f"theta_{k}" for k in range(d - intercept)]
        names = (["intercept"] if intercept else []) + feats
    else:
        names = [str(c) for c in coef_names]
    if len(names) != d:
        raise ValueError(f"coef_names has {len(names)} entries but d = {d}")
    return names


def _party_names(stats: list[NoisyStats]) -> list[str]:
    names = [s.name or f"party{j + 1}" for j, s in enumerate(stats)]
    return names if len(set(names)) == len(names) else [f"{nm}#{j + 1}" for j, nm in enumerate(names)]


def _warn_if_unreliable(sampler: Sampler, idata: az.InferenceData, st: Any, pr: Any) -> None:
    """ConvergenceWarning for MCMC output that has not mixed; NoiseWarning for the fixed-S methods;
    HeterogeneityWarning where the parties do not look like they share one ``Sigma_x``;
    UnresolvedDirectionWarning where an interval rests on a direction the release does not resolve."""
    _warn_if_heterogeneous(sampler, idata, st)
    _record_prior_sensitivity(sampler, idata)
    _warn_if_unresolved(sampler, idata, st, pr)
    y_bound = float(np.max(st.y_bound))  # the largest over parties
    if sampler.kind == "mcmc":
        conv = convergence(idata, sigma2_bound=y_bound**2)
        idata.posterior.attrs.update(
            max_rhat=conv.max_rhat,
            min_ess_bulk=conv.min_ess_bulk,
            min_ess_tail=conv.min_ess_tail,
            converged=int(conv.ok),
            separated_modes=", ".join(conv.separated or {}),
        )
        if not conv.ok:
            warnings.warn(conv.message(sampler.name), ConvergenceWarning, stacklevel=3)
    _warn_if_outside_bounds(sampler, idata, y_bound)
    if not sampler.models_release_noise and sampler.kind != "point":
        ratio = noise_to_signal(st.S, st.sigma_S)
        idata.posterior.attrs["noise_to_signal"] = [float(r) for r in ratio]
        if np.max(ratio) > NOISE_TO_SIGNAL_MAX:
            warnings.warn(
                f"method {sampler.name!r} treats nearestPSD(S~_j) as the exact S_j, but the release noise is not "
                f"negligible (noise-to-signal {np.max(ratio):.3g} > {NOISE_TO_SIGNAL_MAX} in party "
                f"{int(np.argmax(ratio))}): its intervals are too narrow. Use the default method "
                f"'{DEFAULT_METHOD}', which models the noise.",
                NoiseWarning,
                stacklevel=3,
            )


def _warn_if_outside_bounds(sampler: Sampler, idata: az.InferenceData, y_bound: float) -> None:
    """``sigma2_over_bound`` into the posterior's attrs, and a warning when the posterior median of
    ``sigma_y^2`` exceeds ``y_bound^2`` (largest over parties), which the declared bounds rule out."""
    ratio = sigma2_over_bound(idata, y_bound)
    if np.isnan(ratio):
        return
    idata.posterior.attrs["sigma2_over_bound"] = ratio
    if ratio > 1.0:
        warnings.warn(bounds_misfit_message(sampler.name, ratio, y_bound), BoundsMisfitWarning, stacklevel=4)


def _warn_if_heterogeneous(sampler: Sampler, idata: az.InferenceData, st: Any) -> None:
    """For the methods that model ``S_j ~ W(Sigma_x, n_j)`` with one ``Sigma_x`` (not the intercept
    model, whose ``S~_j`` hold the uncentred design): :func:`~bayes_dpreg.diagnostics.party_heterogeneity`
    into the posterior's attrs, and a warning when the parties spread more than twice as much as the
    model allows (p <= 0.01)."""
    if not sampler.needs_wishart or sampler.needs_intercept or st.J < 2:
        return
    h = party_heterogeneity(st.S, st.n, st.sigma_S)
    idata.posterior.attrs.update(party_dispersion=h.dispersion, party_dispersion_p=h.p_value)
    if heterogeneous(h.dispersion, h.p_value):
        warnings.warn(
            f"method {sampler.name!r} models every party's S_j as drawn around one Sigma_x, but the released "
            f"S~_j spread {h.dispersion:.1f} times more than that model allows (bootstrap p = {h.p_value:.3g}): "
            "the parties' feature distributions differ (split by time, site, ...). The fit may have chains that "
            "disagree (a mode with a large sigma2: check R-hat, run more chains) and intervals wider than the "
            "data need, while those of 'fixeds' are too narrow (docs/prior.md, 'Heterogeneous parties').",
            HeterogeneityWarning,
            stacklevel=4,
        )


BORROWED_SHARE = 0.5  # a direction the release does not resolve, yet the fit says the data inform it


def _warn_if_unresolved(sampler: Sampler, idata: az.InferenceData, st: Any, pr: Any) -> None:
    """The directions of feature space below the release noise (:mod:`bayes_dpreg.resolution`) into
    the posterior's attrs, for methods whose coefficients are the features' (not the intercept
    model, not a point estimate); a warning where, along such a direction, the fit's interval for
    ``u^T theta`` is much narrower than the prior's (data share above :data:`BORROWED_SHARE`): the
    information it reads there comes from the model's assumption about ``Sigma_x``, which the
    release cannot check."""
    if sampler.needs_intercept or sampler.kind == "point":
        return
    names = [str(c) for c in idata.posterior["theta"].coords["coef"].values]
    res = release_resolution(st, names)
    report = direction_report(res, idata.posterior["theta"].values, pr.C)
    idata.posterior.attrs["unresolved_directions"] = json.dumps(report)
    idata.posterior.attrs["release_noise_variance"] = res.noise
    borrowed = [r for r in report if r["data_share"] > BORROWED_SHARE]
    if borrowed:
        combos = "; ".join(f"{r['combination']} (released variance {r['variance']:.3g})" for r in borrowed)
        source = (
            "the model's prior for Sigma_x, which the release cannot check"
            if sampler.models_release_noise
            else "taking the noisy S~_j as exact, which they are not there"
        )
        warnings.warn(
            f"method {sampler.name!r}: along {len(borrowed)} direction(s) of the features the release noise "
            f"(variance {res.noise:.3g} per row) swamps the signal, yet the fit narrows the interval of {combos} "
            f"well below the prior's: that information comes from {source}. If the features may be nearly "
            "collinear along it, check those intervals: refit with a Sigma_x prior that allows more collinearity "
            "(Prior(eta=1.0); under an inverse-Wishart, Prior(Lambda=bd.release_lambda(stats))) and report the "
            "wider (idata.posterior.attrs['unresolved_directions']; docs/prior.md).",
            UnresolvedDirectionWarning,
            stacklevel=4,
        )


def _record_prior_sensitivity(sampler: Sampler, idata: az.InferenceData) -> None:
    """For MCMC methods: the largest power-scaling sensitivity of ``theta`` to each prior factor and
    to the likelihood (:func:`~bayes_dpreg.diagnostics.prior_sensitivity`) into the posterior's attrs.
    It no longer warns: on the paper's simulation it fired on 36 of 40 fits, all 22 that covered
    among them; :func:`_warn_if_unresolved` names the directions instead."""
    if sampler.kind != "mcmc" or "log_prior" not in idata.groups():
        return
    ps = prior_sensitivity(idata, noise_factors=("Sigma_x",))
    idata.posterior.attrs.update({f"prior_sensitivity_{k}": float(np.max(v)) for k, v in ps.prior.items()})
    idata.posterior.attrs.update({f"prior_sensitivity_{k}_noise": v for k, v in ps.noise.items()})
    idata.posterior.attrs["likelihood_sensitivity_min"] = float(np.min(ps.likelihood))


def _check_finite(method: str, draws: dict[str, np.ndarray]) -> None:
    """A chain that produced NaN or inf stops the fit with the site's name."""
    for name, arr in draws.items():
        bad = ~np.isfinite(arr)
        if bad.any():
            chain, draw = (int(i) for i in np.argwhere(bad)[0][:2]) if arr.ndim >= 2 else (0, 0)
            raise FloatingPointError(
                f"method {method!r}: site {name!r} became non-finite (first at chain {chain}, draw {draw}); "
                "check the prior's scale against the data's and the declared bounds"
            )
