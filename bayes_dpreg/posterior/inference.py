"""``fit``: one entry point from released statistics to an ``arviz.InferenceData``.

Methods come from the registry :data:`bayes_dpreg.samplers.SAMPLERS` (one module per
method); ``fit`` checks the statistics against what the chosen sampler declares it
needs, resolves the prior (autoscaled to the release by default), runs it, and checks
convergence: after every MCMC fit the rank-normalised R-hat and bulk/tail ESS of
``theta`` and ``sigma2`` are computed and a :class:`ConvergenceWarning` names the worst
quantities when R-hat > 1.01, an ESS < 100 per chain or a NUTS transition diverged.
The fixed-S methods (``fast``, ``fixeds``) warn when the release noise is not
negligible against the released ``S~_j`` (:func:`~bayes_dpreg.posterior.diagnostics.noise_to_signal`).
These and the other checks are the registry :data:`~bayes_dpreg.posterior.diagnostics.CHECKS`, which
``fit`` runs through :func:`~bayes_dpreg.posterior.diagnostics.run_checks`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # arviz loads in 1.2-1.6 s: only when a fit is made (runtime.preload)
    import arviz as az

from ..model.prior import ModelSpec, Prior, describe_prior, fitted_theta_prior_cov, load_model, prior_scales
from ..privacy.noisy_stats import NoisyStats, check_distinct, warn_if_not_private
from ..runtime.cache import enable_compilation_cache
from ..runtime.device import warn_if_slow_device
from ..runtime.entry import public
from ..runtime.keys import seed_key
from ..samplers import SAMPLERS, Sampler, default_method
from ..samplers import get as get_sampler
from ..samplers.base import positive_int
from ..samplers.fast import fast_sigma2
from ..stats import StackedStats, as_stats_list, stack_stats
from .diagnostics import NOISE_TO_SIGNAL_MAX, NoiseWarning, run_checks
from .idata import build as build_idata

__all__ = [
    "fit",
    "fast_sigma2",
    "METHODS",
    "resolve_prior",
    "NoiseWarning",
    "NOISE_TO_SIGNAL_MAX",
    "UnusedStatisticWarning",
]

PriorLike = Prior | ModelSpec | str | os.PathLike | None

METHODS = SAMPLERS  # name -> Sampler (kept under its old name)

_RELEASE_FN = {"ssp": "bayes_dpreg.release", "adassp": "bayes_dpreg.release_adassp", "bs": "bayes_dpreg.release_bs"}


class UnusedStatisticWarning(UserWarning):
    """The parties released a statistic the fit does not read: ``y^T y`` (``release(..., yty=True)``), which
    adds ``y_bound^4`` to the squared sensitivity, fitted by a method that does not read it or released by
    only some of the parties."""


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


def _check_statistics(sampler: Sampler, st: StackedStats, stats: Sequence[NoisyStats]) -> None:
    """Reject statistics the sampler cannot use; warn where it leaves a released ``y^T y`` unread."""
    wrong = [j for j, m in enumerate(st.mechanisms) if m not in sampler.mechanisms]
    if wrong:
        mech = sampler.mechanisms[0]
        raise ValueError(
            f"method {sampler.name!r} needs statistics released with {_RELEASE_FN[mech]} "
            f"(mechanism {mech!r}); parties {wrong} used another mechanism"
        )
    if st.intercept and sampler.centred_features:
        raise ValueError(
            f"method {sampler.name!r} assumes zero-mean features; for statistics released with "
            "intercept=True use 'normalx-intercept', 'fixeds' or 'fast'"
        )
    if sampler.needs_intercept and not st.intercept:
        raise ValueError(f"method {sampler.name!r} needs statistics released with intercept=True")
    if sampler.needs_wishart:
        small = [(j, int(nj)) for j, nj in enumerate(st.n) if nj <= st.d + 1]
        if small:
            raise ValueError(
                f"method {sampler.name!r} models S_j ~ Wishart(Sigma_x, n_j) and needs n_j > d + 1 = "
                f"{st.d + 1}; parties (index, n_j) {small} are too small (use 'fixeds' or 'fast')"
            )
    _warn_if_yty_unread(sampler, stats, st)


def _warn_if_yty_unread(sampler: Sampler, stats: Sequence[NoisyStats], st: StackedStats) -> None:
    """:class:`UnusedStatisticWarning` where some party released ``y^T y`` and the fit will not read it."""
    released = [j for j, s in enumerate(stats) if s.u is not None]
    if not released or sampler.reads_yty(st):
        return
    if st.u is None:
        why = f"only parties {released} of {len(stats)} released it, and a fit reads it only where every party did"
    else:
        readers = [name for name, s in SAMPLERS.items() if s.uses_yty and set(st.mechanisms) <= set(s.mechanisms)]
        why = f"method {sampler.name!r} does not read it" + (f" ({', '.join(readers)} do)" if readers else "")
        if sampler.name == default_method(st.d, st.J, int(st.n.min())):
            why += (
                f"; it is the default here because some party has fewer than max(100, 30 d) = {max(100, 30 * st.d)}"
                " rows, where normalx-clt's central limit theorem is not measured to hold (method='normalx-clt'"
                " reads y^T y there at that risk)"
            )
    warnings.warn(
        f"y^T y was released but this fit does not use it: {why}. What it says about the noise variance "
        "sigma2 is lost, and its privacy cost was paid (docs/prior.md, *Releasing y^T y*)",
        UnusedStatisticWarning,
        stacklevel=2,  # fit's wrapper (runtime.entry.public) reissues it at the caller's line
    )


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
    method : a name in :data:`bayes_dpreg.samplers.SAMPLERS`; default ``"normalx-clt"``, the
        normalX model (eq. 10, the noise in ``S~_j`` modelled) with the ``S_j`` integrated out
        under the Wishart's CLT, or, where a party has fewer than ``max(100, 30 d)`` rows (and
        ``J d (d + 1) / 2 < 2000``), ``"normalx-nuts"``, the same model with the ``S_j`` sampled
        exactly by NUTS; with ``J > 1 + ceil(200 / d)``, ``"normalx-pooled"`` in place of ``normalx-clt``
        (the releases summed in groups; :func:`~bayes_dpreg.samplers.default_method`). Others:
        ``"normalx"`` (MCMC-normalX, Alg. 1), ``"fixeds"`` (Alg. 2), ``"fast"`` (Alg. 3,
        closed form), ``"bs"`` (App. C.1; :func:`release_bs` statistics), ``"adassp"``
        (App. C.2; :func:`release_adassp` statistics, a point estimate),
        ``"normalx-intercept"`` (App. B.2; ``release(..., intercept=True)``).
    prior : a :class:`Prior`, a :class:`ModelSpec` or a TOML path; default ``Prior()``, its ``"auto"``
        scales from the declared ``y_bound`` and the released ``S~_j`` (:meth:`Prior.autoscaled`).
    num_samples, num_warmup : draws and warm-up iterations per chain (default: the method's).
    num_chains : chains (MCMC) or draw groups (exact methods).
    seed : seed of the analyst's sampling (the releases' noise is already fixed).
    coef_names : labels of the ``coef`` dimension.
    options : method options (``bayes_dpreg.samplers.SAMPLERS[method].options``), e.g.
        ``target_accept_prob`` for ``normalx-nuts``, ``sigma2="text" | "code" | float`` for
        ``fast``, ``p`` for ``adassp``, ``progress_bar`` for all, ``extend`` for the NUTS methods
        (chains that mix too slowly draw ``num_samples`` more, up to that many times; for ``normalx-clt``
        and ``normalx-pooled``, whose chains draw 250 at a time until R-hat and ESS pass, as many rounds as stay
        within 2,000 draws a chain, 1,500 from d = 24, and at least one
        (:func:`~bayes_dpreg.samplers.normalx_clt.extend_rounds`); 0 for the others), ``retry`` for the NUTS methods
        (default ``True``: chains with a divergent transition after warm-up run again once, from the start, at a
        higher target acceptance, :func:`~bayes_dpreg.samplers.normalx_nuts.retry_target`).

    Returns
    -------
    ``arviz.InferenceData`` (:mod:`bayes_dpreg.posterior.idata`): ``posterior`` (``theta`` with dims
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
    :class:`ConvergenceWarning` when an MCMC fit has not converged; :class:`NoiseWarning` when ``fast`` or
    ``fixeds`` is used where the release noise matters; :class:`UnusedStatisticWarning` when some party
    released ``y^T y`` and the fit does not read it; :class:`~bayes_dpreg.privacy.gaussian.NotPrivateWarning`
    for statistics released with the authors' "as published" noise and
    :class:`~bayes_dpreg.privacy.SeededReleaseWarning` for statistics whose noise came from a caller's seed.

    Raises
    ------
    ValueError when the same release appears twice (same ``release_id`` or identical
    statistics) or two parties share a name.
    """
    enable_compilation_cache()
    stats = as_stats_list(stats)
    sampler = get_sampler(default_method(stats[0].d, len(stats), min(s.n for s in stats)) if method is None else method)
    check_distinct(stats)
    for s in stats:
        warn_if_not_private(s, stacklevel=3)
    num_chains = positive_int("num_chains", num_chains)
    num_samples = positive_int("num_samples", sampler.num_samples if num_samples is None else num_samples)
    num_warmup = positive_int("num_warmup", sampler.num_warmup if num_warmup is None else num_warmup, 0)
    st = stack_stats(stats)
    d = st.d
    _check_statistics(sampler, st, stats)
    names = _coef_names(coef_names, st)
    prior_obj = resolve_prior(prior).for_sampler(sampler)
    scales = prior_scales(st)
    pr = prior_obj.resolve_intercept(d - 1, scales) if sampler.needs_intercept else prior_obj.resolve(d, scales)
    unknown = set(options) - set(sampler.options)
    if unknown:
        raise TypeError(
            f"method {sampler.name!r}: unexpected options {sorted(unknown)}; it takes {sorted(sampler.options)}"
        )
    warn_if_slow_device(sampler.name, sampler.kernel is not None and not sampler.kernel.vectorize, stacklevel=2)
    res = sampler.run(st, pr, seed_key(seed), num_chains, num_samples, num_warmup, **options)
    _check_finite(sampler.name, res.posterior)
    features = names[1:] if sampler.needs_intercept else names
    idata = build_idata(res, st, pr, sampler, names, list(st.parties), features, seed_key(seed + 1))
    theta_cov = fitted_theta_prior_cov(idata, pr)
    attrs = _fit_attrs(sampler, st, prior_obj, pr, names, seed, num_samples, num_chains, theta_cov)
    attrs.update(res.attrs)
    idata.posterior.attrs.update(attrs)
    run_checks(idata, st, sampler, pr)
    return idata


def _fit_attrs(
    sampler: Sampler,
    st: StackedStats,
    prior_obj: Prior,
    pr: Any,
    names: list[str],
    seed: int,
    num_samples: int,
    num_chains: int,
    theta_cov: np.ndarray,
) -> dict[str, Any]:
    """The posterior's attributes: the method, the release, the prior (``theta``'s sd from ``theta_cov``,
    its prior covariance at the fitted feature scales: :func:`~bayes_dpreg.model.prior.fitted_theta_prior_cov`)
    and the run."""
    return {
        "method": sampler.name,
        "method_label": sampler.label,
        "epsilon": float(st.epsilon.max()),
        "delta": float(st.delta.max()),
        "epsilon_per_party": st.epsilon.tolist(),
        "delta_per_party": st.delta.tolist(),
        "J": st.J,
        "yty_used": int(sampler.reads_yty(st)),
        "yty_released": int(st.u is not None),
        "n": int(st.n.sum()),
        "n_per_party": st.n.tolist(),
        "d": st.d,
        "seed": int(seed),
        "num_samples": num_samples,
        "num_chains": num_chains,
        "intercept": int(st.intercept),
        "prior": repr(prior_obj),
        "prior_description": describe_prior(pr, names, sampler.needs_intercept),
        "prior_autoscaled": int(prior_obj.is_auto),
        "prior_theta_sd": np.sqrt(np.diag(theta_cov)).tolist(),
        "prior_sigma2_a_b": [float(pr.a), float(pr.b)],
        "prior_sigma2_max": float("inf") if pr.sigma2_max is None else float(pr.sigma2_max),
        "inference_library": "bayes_dpreg",
        "release_ids": list(st.release_ids),
    }


def _coef_names(coef_names: Sequence[str] | None, st: StackedStats) -> list[str]:
    """``coef_names``, else the features' names the releases carry, else ``theta_k``."""
    if coef_names is None:
        released = st.feature_names()
        feats = list(released) if released else [f"theta_{k}" for k in range(st.d - st.intercept)]
        names = (["intercept"] if st.intercept else []) + feats
    else:
        names = [str(c) for c in coef_names]
    if len(names) != st.d:
        raise ValueError(f"coef_names has {len(names)} entries but d = {st.d}")
    return names


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
