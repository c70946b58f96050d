r"""Model comparison from one release: evidence, Bayes factors, inclusion probabilities and
exact leave-one-party-out, all post-processing of the released statistics (no privacy cost).

The model compared is MCMC-fixedS's (Alg. 2): ``S_j = nearestPSD(S~_j)`` held fixed,

.. math::
    \tilde z_j \mid \theta, \sigma_y^2 \sim N(S_j \theta,\ \sigma_y^2 S_j + \sigma_{z,j}^2 I),
    \quad \theta \sim N(m, C), \quad \sigma_y^2 \sim IG(a, b).

A candidate model ``K`` (a subset of the features) sets ``theta_k = 0`` for ``k`` not in
``K`` and keeps ``theta_K ~ N(m_K, C_KK)``; every candidate explains the same released
vector ``z~`` (all ``d`` coordinates), so their evidences are comparable. For a fixed
``sigma_y^2`` the evidence is Gaussian in ``theta_K`` and integrates in closed form
(:func:`~bayes_dpreg.model.closed_form.collapsed_log_lik` on the ``K`` block, embedded in ``d x d``
with an identity on the excluded block so that every candidate has the same shapes);
``sigma_y^2`` is integrated numerically on ``t = log sigma_y^2`` by the trapezoid rule
on a grid fitted to the integrand (two passes: a wide grid locates where the integrand
is within ``e^-60`` of its peak, a fine grid of 4,097 points covers that range;
the rule converges geometrically for such smooth, light-tailed integrands, tested against
brute-force integration over ``theta`` and ``sigma_y^2`` for ``d <= 2``).

The same closed form with party weights ``w_j`` (the likelihood raised to ``w_j``) gives
exact leave-one-party-out: ``elpd_j = log p(z~_j | z~_{-j}) = log Z(1) - log Z(1 - e_j)``,
and the posterior predictive density of party ``j``'s release,
``lppd_j = log Z(1 + e_j) - log Z(1)``, so ``p_lopo = sum_j (lppd_j - elpd_j)``
(ArviZ's ``p_loo``). :func:`compare` returns them as :class:`arviz.ELPDData` as well, so
``az.compare`` ranks the candidates by exact leave-one-party-out.

Caveat: by default the evidence is the fixed-S model's, which ignores the release noise in
``S~`` (``docs/prior.md``, the coverage study): where that noise is large against ``S_j``
(``bayes_dpreg.NoiseWarning``), its Bayes factors are over-confident. ``model="normalx"``
compares under the normalX model (eq. 10) instead: a ``normalx-nuts`` fit and a
bridge-sampling estimate of ``log p(S~, z~ | K)`` per candidate (:func:`normalx_evidence`).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

from ..model.closed_form import collapsed_log_lik, party_terms
from ..model.densities import S_tilde_dist, log_marginal_S, upper
from ..model.linalg import from_log_cholesky, log_cholesky, log_cholesky_log_jacobian, spd_inverse
from ..privacy.noisy_stats import NoisyStats
from ..runtime.entry import public

__all__ = ["log_evidence", "normalx_evidence", "compare", "inclusion", "MAX_ENUMERATE_D"]

MAX_ENUMERATE_D = 10
"""Largest ``d`` for which :func:`inclusion` enumerates every subset (``2^d`` models)."""

_COARSE, _FINE, _DROP = 1025, 4097, 60.0


def _log_ig_t(t: jax.Array, a: float, b: float) -> jax.Array:
    """``log IG(e^t; a, b) + t``: the model's prior of ``sigma_y^2`` as a density of ``t = log sigma^2``."""
    return dist.InverseGamma(a, b).log_prob(jnp.exp(t)) + t


def _masked_prior(mask: jax.Array, m: jax.Array, C: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(m', C'^-1)``: the prior of ``theta_K`` embedded in ``d`` coordinates (identity elsewhere)."""
    eye = jnp.eye(mask.shape[0], dtype=C.dtype)
    M = mask[:, None] * mask[None, :]
    Ck = C * M + eye * (1.0 - mask)[:, None]
    return m * mask, spd_inverse(Ck)


def _log_integrand(
    t: jax.Array,
    S: jax.Array,
    z: jax.Array,
    sz2: jax.Array,
    w: jax.Array,
    mask: jax.Array,
    m: jax.Array,
    C: jax.Array,
    a: float,
    b: float,
) -> jax.Array:
    """``log p(z~ | sigma^2 = e^t, K) + log p(t)`` with the parties' likelihoods raised to ``w``."""
    d = S.shape[-1]
    terms = party_terms(S, z, jnp.exp(t), sz2)
    M = mask[:, None] * mask[None, :]
    mk, Cinv = _masked_prior(mask, m, C)
    U = jnp.einsum("j,jik->ik", w, terms.U) * M
    u = jnp.einsum("j,ji->i", w, terms.u) * mask
    return collapsed_log_lik(U, u, w @ terms.c, mk, Cinv, d * w.sum()) + _log_ig_t(t, a, b)


# f[t, mask, weight]
_grid_fn = jax.jit(
    jax.vmap(
        jax.vmap(jax.vmap(_log_integrand, (None,) * 4 + (0,) + (None,) * 5), (None,) * 5 + (0,) + (None,) * 4),
        (0,) + (None,) * 9,
    )
)


def _log_evidences(
    S: np.ndarray,
    z: np.ndarray,
    sz2: np.ndarray,
    weights: np.ndarray,
    masks: np.ndarray,
    m: np.ndarray,
    C: np.ndarray,
    a: float,
    b: float,
) -> np.ndarray:
    """``log Z`` for every (weight vector, mask): array ``(len(masks), len(weights))``."""
    args = (
        jnp.asarray(S),
        jnp.asarray(z),
        jnp.asarray(sz2),
        jnp.asarray(weights, dtype=jnp.float64),
        jnp.asarray(masks, dtype=jnp.float64),
        jnp.asarray(m),
        jnp.asarray(C),
        float(a),
        float(b),
    )
    centre = math.log(b / a)
    t0 = np.linspace(centre - 60.0, centre + 60.0, _COARSE)
    f0 = np.array(_grid_fn(jnp.asarray(t0), *args))  # (T, M, W)
    bad = ~np.isfinite(f0).all(axis=(1, 2))  # at extreme sigma^2 a Cholesky can fail: the integrand is nil there
    f0[~np.isfinite(f0)] = -np.inf
    keep = (f0 > f0.max(axis=0, keepdims=True) - _DROP).any(axis=(1, 2))
    idx = np.flatnonzero(keep)
    near = np.flatnonzero(bad)
    if near.size and np.min(np.abs(near[:, None] - idx[None, :])) < 8:
        raise FloatingPointError("the evidence integrand is not finite where it matters on the sigma^2 grid")
    lo, hi = t0[max(idx[0] - 1, 0)], t0[min(idx[-1] + 1, _COARSE - 1)]
    t1 = np.linspace(lo, hi, _FINE)
    f1 = np.array(_grid_fn(jnp.asarray(t1), *args))
    if not np.all(np.isfinite(f1)):
        raise FloatingPointError("the evidence integrand is not finite on the sigma^2 grid")
    h = t1[1] - t1[0]
    f1[[0, -1]] += math.log(0.5)  # trapezoid end weights
    top = f1.max(axis=0)
    return top + np.log(np.exp(f1 - top).sum(axis=0)) + math.log(h)  # (M, W)


def _setup(
    stats: NoisyStats | Sequence[NoisyStats], prior: Any, coef_names: Sequence[str] | None = None
) -> tuple[Any, Any, list[str], list[str], np.ndarray, np.ndarray]:
    """``(resolved prior, fixed-S model data, coefficient names, party names, S, z~)``."""
    from ..model.densities import fixeds_data, model_data
    from ..model.prior import prior_scales
    from ..privacy.noisy_stats import check_distinct
    from ..stats import as_stats_list, stack_stats
    from .inference import _coef_names, resolve_prior

    stats = as_stats_list(stats)
    check_distinct(stats)
    st = stack_stats(stats)
    pr = (
        resolve_prior(prior)
        .for_sigma2_bound(False, "evidence")
        .for_theta_scale(("release",), "evidence")
        .resolve(st.d, prior_scales(st))
    )
    data = fixeds_data(model_data(st))
    names = _coef_names(coef_names, st)
    return pr, data, names, list(st.parties), np.asarray(data.S_tilde), np.asarray(data.z_tilde)


def _feature_mask(features: Sequence[Any] | None, names: list[str]) -> np.ndarray:
    d = len(names)
    if features is None:
        return np.ones(d, bool)
    mask = np.zeros(d, bool)
    for f in features:
        if isinstance(f, (int, np.integer)) and not isinstance(f, bool):
            if not 0 <= f < d:
                raise ValueError(f"feature index {f} out of range for d = {d}")
            mask[f] = True
        elif f in names:
            mask[names.index(f)] = True
        else:
            raise ValueError(f"unknown feature {f!r}; the features are {names}")
    return mask


@public
def log_evidence(
    stats: NoisyStats | Sequence[NoisyStats],
    features: Sequence[Any] | None = None,
    prior: Any = None,
    *,
    coef_names: Sequence[str] | None = None,
    model: str = "fixeds",
    **bridge_options: Any,
) -> float:
    """``log p(data | K)`` with the features ``K`` (names or indices; default all) and the
    others' coefficients 0. ``model="fixeds"``: the fixed-S model's ``log p(z~_{1:J} | K)`` in
    closed form (module docstring); ``model="normalx"``: the normalX model's
    ``log p(S~_{1:J}, z~_{1:J} | K)`` by bridge sampling (:func:`normalx_evidence`, which also
    returns its error and the fit; ``bridge_options`` go there). ``prior`` as for
    :func:`~bayes_dpreg.fit`."""
    if model == "normalx":
        return normalx_evidence(stats, features, prior, coef_names=coef_names, **bridge_options)[0].log_evidence
    if model != "fixeds":
        raise ValueError(f"model must be 'fixeds' or 'normalx', got {model!r}")
    if bridge_options:
        raise TypeError(f"options {sorted(bridge_options)} apply to model='normalx' only")
    pr, data, names, _, S, z = _setup(stats, prior, coef_names)
    mask = _feature_mask(features, names)
    J = S.shape[0]
    return float(
        _log_evidences(S, z, np.asarray(data.sigma_z) ** 2, np.ones((1, J)), mask[None], pr.m, pr.C, pr.a, pr.b)[0, 0]
    )


def _normalx_log_density(u: jax.Array, data: Any, mask: jax.Array, pr: Any) -> jax.Array:
    """``log p(S~, z~, S_{1:J}, sigma_y^2 | K)`` in the coordinates ``u = (log-Cholesky(S_j)_j,
    log sigma_y^2)``, with ``theta`` and ``Sigma_x`` integrated out (both conjugate), plus the
    log-Jacobian of ``u -> (S, sigma_y^2)``: the integrand whose integral is the evidence."""
    J, d = data.z_tilde.shape
    v, t = u[:-1].reshape(J, -1), u[-1]
    L = from_log_cholesky(v, d)
    S = L @ jnp.swapaxes(L, -1, -2)
    return (
        _log_integrand(
            t, S, data.z_tilde, data.sigma_z**2, jnp.ones(J), mask, jnp.asarray(pr.m), jnp.asarray(pr.C), pr.a, pr.b
        )
        + S_tilde_dist(S, data).log_prob(upper(data.S_tilde)).sum()
        + log_marginal_S(S, data, pr)
        + log_cholesky_log_jacobian(v, d).sum()
    )


def _submodel_prior(pr: Any, mask: np.ndarray) -> Any:
    """The sub-model's prior as a :class:`~bayes_dpreg.Prior` for the sampler: ``theta_k`` for
    ``k`` not in ``K`` pinned at 0 by a variance ``1e-10 C_kk`` (the evidence itself uses the
    exact sub-model)."""
    from ..model.prior import Prior

    keep = mask.astype(float)
    C = np.asarray(pr.C) * np.outer(keep, keep) + np.diag(1e-10 * np.diag(pr.C) * (1.0 - keep))
    return Prior(
        m=np.asarray(pr.m) * keep,
        C=C,
        a=pr.a,
        b=pr.b,
        Lambda=np.asarray(pr.Lambda),
        kappa=pr.kappa,
        Sigma_x_prior="iw",
        sigma2_max=math.inf if pr.sigma2_max is None else pr.sigma2_max,
    )


@public
def normalx_evidence(
    stats: NoisyStats | Sequence[NoisyStats],
    features: Sequence[Any] | None = None,
    prior: Any = None,
    *,
    coef_names: Sequence[str] | None = None,
    num_samples: int = 1000,
    num_chains: int = 4,
    num_warmup: int | None = None,
    seed: int = 0,
    **fit_options: Any,
) -> tuple[Any, Any]:
    """Evidence of the normalX model (eq. 10), ``log p(S~_{1:J}, z~_{1:J} | K)``, by bridge sampling.

    The model is sampled by ``fit(method="normalx-nuts")`` (``theta_k``, ``k`` not in ``K``,
    pinned at 0 by the prior); :func:`~bayes_dpreg.posterior.bridge.bridge_sampling` then works in the
    coordinates ``(log-Cholesky(S_j), log sigma_y^2)`` with ``theta`` and ``Sigma_x``
    integrated out in closed form (Gaussian; inverse-Wishart-Wishart, eq. 11), so the
    proposal covers ``J d (d + 1) / 2 + 1`` coordinates. Tested against brute-force
    integration (``d = 1``) and, through the same bridge code, against the fixed-S closed form.
    Returns ``(BridgeResult, idata)``: the estimate with its approximate standard deviation
    (``error``), and the fit (for ``az.loo`` and diagnostics). ``Sigma_x``'s prior is the
    inverse-Wishart (``Sigma_x_prior="auto"`` means ``"iw"`` here): the conjugate identity that
    integrates it out needs it."""
    from ..model.densities import model_data
    from ..stats import as_stats_list, stack_stats
    from .bridge import bridge_sampling
    from .inference import fit, resolve_prior

    prior = resolve_prior(prior).for_families(("iw",), "normalx evidence")
    pr, _, names, _, _, _ = _setup(stats, prior, coef_names)
    mask = _feature_mask(features, names)
    data = model_data(stack_stats(as_stats_list(stats)))
    idata = fit(
        stats,
        method="normalx-nuts",
        prior=_submodel_prior(pr, mask),
        num_samples=num_samples,
        num_chains=num_chains,
        num_warmup=num_warmup,
        seed=seed,
        coef_names=names,
        **fit_options,
    )
    S = np.asarray(idata.latent_posterior["S"])  # (chain, draw, J, d, d)
    t = np.log(np.asarray(idata.posterior["sigma2"]))[..., None]
    u = np.concatenate([np.asarray(log_cholesky(jnp.asarray(S))).reshape(S.shape[:2] + (-1,)), t], -1)
    m = jnp.asarray(mask, dtype=jnp.float64)
    res = bridge_sampling(lambda x: _normalx_log_density(x, data, m, pr), u, seed=seed)
    return res, idata


def _lopo_weights(J: int) -> np.ndarray:
    eye = np.eye(J)
    return np.vstack([np.ones(J), 1.0 - eye, 1.0 + eye])


def _model_log_prior(masks: np.ndarray, model_prior: str) -> np.ndarray:
    d = masks.shape[1]
    k = masks.sum(1)
    if model_prior == "uniform":
        return np.full(len(masks), -d * math.log(2.0))
    if model_prior == "beta-binomial":
        return -math.log(d + 1.0) - np.array([math.log(math.comb(d, int(kk))) for kk in k])
    raise ValueError(f"model_prior must be 'uniform' or 'beta-binomial', got {model_prior!r}")


def _elpd_data(elpd_i: np.ndarray, p_i: np.ndarray, party_names: list[str]) -> Any:
    import xarray as xr
    from arviz.stats.stats_utils import ELPDData

    J = len(elpd_i)
    loo_i = xr.DataArray(elpd_i, dims=["party"], coords={"party": party_names})
    return ELPDData(
        data=[
            float(elpd_i.sum()),
            float(math.sqrt(J * np.var(elpd_i))),
            float(p_i.sum()),
            0,
            J,
            False,
            loo_i,
            xr.zeros_like(loo_i),
            "log",
            None,
        ],
        index=[
            "elpd_loo",
            "se",
            "p_loo",
            "n_samples",
            "n_data_points",
            "warning",
            "loo_i",
            "pareto_k",
            "scale",
            "good_k",
        ],
    )


@public
def compare(
    stats: NoisyStats | Sequence[NoisyStats],
    models: Mapping[str, Sequence[Any] | None] | None = None,
    prior: Any = None,
    *,
    model_prior: str = "uniform",
    coef_names: Sequence[str] | None = None,
    model: str = "fixeds",
    **bridge_options: Any,
) -> tuple[Any, dict[str, Any]]:
    """Compare candidate models (feature subsets) on one release.

    ``models``: ``{name: features}`` (names or indices; ``None`` for all); default every
    subset when ``d <= MAX_ENUMERATE_D``. Returns ``(table, elpd)``: a pandas DataFrame, one
    row per model sorted by log evidence, with ``features``, ``log_evidence``,
    ``post_prob`` (under ``model_prior``: ``"uniform"`` over the candidates or
    ``"beta-binomial"`` over the subset size), ``log10_bf`` against the best model,
    ``elpd_lopo`` (leave-one-party-out), its ``se``, ``p_lopo``, ``elpd_diff`` and ``dse`` (the
    difference from the candidate with the best ``elpd_lopo`` and its standard error, as in
    ``arviz.compare``); and ``{name:
    arviz.ELPDData}`` for :func:`arviz.compare`.

    ``model="fixeds"`` (default): the fixed-S model, evidence and leave-one-party-out exact
    (module docstring), instant. ``model="normalx"``: the normalX model (eq. 10, the noise
    in ``S~`` modelled); each candidate is fitted by ``normalx-nuts`` and its evidence
    estimated by bridge sampling (:func:`normalx_evidence`; ``bridge_options`` such as
    ``num_samples``, ``seed`` go there), with the extra columns ``log_evidence_se`` (the
    estimate's approximate sd) and ``pareto_k_max``: leave-one-party-out is ArviZ's PSIS-LOO
    of each party's ``z~_j`` given the latent ``S_j`` (:mod:`bayes_dpreg.posterior.idata`). A fit per
    candidate: name the candidates rather than enumerating ``2^d``.
    """
    import pandas as pd

    pr, data, names, party, S, z = _setup(stats, prior, coef_names)
    d, J = len(names), S.shape[0]
    if models is None:
        if d > MAX_ENUMERATE_D:
            raise ValueError(f"d = {d} > {MAX_ENUMERATE_D}: name the candidate models (models={{name: features}})")
        models = {_subset_name(mask, names): [names[k] for k in np.flatnonzero(mask)] for mask in _all_masks(d)}
    if not models:
        raise ValueError("no candidate models")
    masks = np.array([_feature_mask(f, names) for f in models.values()])
    lp = _model_log_prior(masks, model_prior)
    extra: dict[str, Any] = {}
    if model == "fixeds":
        if bridge_options:
            raise TypeError(f"options {sorted(bridge_options)} apply to model='normalx' only")
        logz = _log_evidences(S, z, np.asarray(data.sigma_z) ** 2, _lopo_weights(J), masks, pr.m, pr.C, pr.a, pr.b)
        full, minus, plus = logz[:, 0], logz[:, 1 : J + 1], logz[:, J + 1 :]
        elpd_i = full[:, None] - minus
        p_i = (plus - full[:, None]) - elpd_i
        elpd = {name: _elpd_data(elpd_i[i], p_i[i], party) for i, name in enumerate(models)}
    elif model == "normalx":
        full, elpd, extra = _normalx_candidates(stats, list(models), masks, names, prior, coef_names, bridge_options)
    else:
        raise ValueError(f"model must be 'fixeds' or 'normalx', got {model!r}")
    post = full + lp
    post = np.exp(post - post.max())
    post /= post.sum()
    loo = [elpd[name] for name in models]
    table = pd.DataFrame(
        {
            "features": [", ".join(names[k] for k in np.flatnonzero(mk)) or "(none)" for mk in masks],
            "n_features": masks.sum(1),
            "log_evidence": full,
            **extra,
            "post_prob": post,
            "log10_bf": (full - full.max()) / math.log(10.0),
            "elpd_lopo": [float(e["elpd_loo"]) for e in loo],
            "se": [float(e["se"]) for e in loo],
            "p_lopo": [float(e["p_loo"]) for e in loo],
        },
        index=pd.Index(list(models), name="model"),
    ).sort_values("log_evidence", ascending=False)
    table["elpd_diff"], table["dse"] = _elpd_differences([elpd[m] for m in table.index])
    table.attrs["model"] = model
    return table, elpd


def _elpd_differences(loo: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """ArviZ's ``elpd_diff`` and ``dse`` against the candidate with the largest ``elpd_lopo``: how far
    each candidate's summed pointwise (per-party) elpd falls below the best's, and its standard error,
    ``sqrt(J var(elpd_i - elpd_i,best))``."""
    pointwise = [np.asarray(e["loo_i"]).ravel() for e in loo]
    best = int(np.argmax([p.sum() for p in pointwise]))
    diff = np.array([pointwise[best].sum() - p.sum() for p in pointwise])  # >= 0, as arviz.compare
    J = pointwise[best].size
    dse = np.array([math.sqrt(J * np.var(p - pointwise[best])) for p in pointwise])  # as arviz.compare
    return diff, dse


def _normalx_candidates(
    stats: NoisyStats | Sequence[NoisyStats],
    model_names: list[str],
    masks: np.ndarray,
    names: list[str],
    prior: Any,
    coef_names: Sequence[str] | None,
    options: dict[str, Any],
) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """Bridge-sampled evidence and PSIS leave-one-party-out of every candidate under the normalX model."""
    import arviz as az

    full, se, kmax, elpd = [], [], [], {}
    for name, mask in zip(model_names, masks):
        res, idata = normalx_evidence(
            stats, [names[k] for k in np.flatnonzero(mask)], prior, coef_names=coef_names, **options
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Pareto.*")
            elpd[name] = az.loo(idata, pointwise=True)
        full.append(res.log_evidence)
        se.append(res.error)
        kmax.append(float(np.max(elpd[name]["pareto_k"])))
    return np.array(full), elpd, {"log_evidence_se": np.array(se), "pareto_k_max": np.array(kmax)}


def _all_masks(d: int) -> np.ndarray:
    return np.array(list(itertools.product([False, True], repeat=d)))[:, ::-1]


def _subset_name(mask: np.ndarray, names: list[str]) -> str:
    return "{" + ", ".join(names[k] for k in np.flatnonzero(mask)) + "}"


@public
def inclusion(
    stats: NoisyStats | Sequence[NoisyStats],
    prior: Any = None,
    *,
    model_prior: str = "uniform",
    coef_names: Sequence[str] | None = None,
    method: str = "auto",
    num_sweeps: int = 200,
    seed: int = 0,
) -> Any:
    """Posterior inclusion probability and inclusion Bayes factor of every feature, from one
    release, in the fixed-S model.

    ``method="enumerate"`` sums over all ``2^d`` subsets (``d <= MAX_ENUMERATE_D``);
    ``"gibbs"`` runs a Gibbs sampler over the inclusion indicators (George & McCulloch 1997):
    each sweep visits the features in random order and draws indicator ``k`` from its exact
    conditional, ``P(k in | rest) = 1 / (1 + exp(log Z(K - k) + log p(K - k) - log Z(K + k)
    - log p(K + k)))``, with ``log Z`` the exact evidence of :func:`log_evidence` (cached per
    subset). The PIP is the Rao-Blackwellised average of those conditionals over the sweeps
    after the first 10%. ``"auto"``: enumerate when ``d <= MAX_ENUMERATE_D``, else Gibbs.

    ``model_prior``: ``"uniform"`` (each feature in with probability 1/2) or
    ``"beta-binomial"`` (uniform over the number of features, then over subsets of that
    size); both give every feature prior probability 1/2. The inclusion Bayes factor is the
    posterior odds of inclusion over the prior odds. Returns a pandas DataFrame indexed by
    feature: ``pip``, ``prior_ip``, ``bf``, ``log10_bf`` (and ``attrs["method"]``,
    ``attrs["models_evaluated"]``)."""
    import pandas as pd

    pr, data, names, _, S, z = _setup(stats, prior, coef_names)
    d, J = len(names), S.shape[0]
    _model_log_prior(np.ones((1, d), bool), model_prior)  # checks the name
    if method == "auto":
        method = "enumerate" if d <= MAX_ENUMERATE_D else "gibbs"
    args = (S, z, np.asarray(data.sigma_z) ** 2, np.ones((1, J)))
    if method == "enumerate":
        if d > MAX_ENUMERATE_D:
            raise ValueError(
                f"enumeration visits 2^d subsets and needs d <= {MAX_ENUMERATE_D}, got d = {d}; use method='gibbs'"
            )
        masks = _all_masks(d)
        logz = _log_evidences(*args, masks, pr.m, pr.C, pr.a, pr.b)[:, 0]
        lp = _model_log_prior(masks, model_prior)
        post = np.exp(logz + lp - (logz + lp).max())
        post /= post.sum()
        pip, evaluated = masks.T.astype(float) @ post, len(masks)
    elif method == "gibbs":
        if isinstance(num_sweeps, bool) or not isinstance(num_sweeps, int) or num_sweeps < 10:
            raise ValueError(f"num_sweeps must be an integer >= 10, got {num_sweeps!r}")
        pip, evaluated = _gibbs_pip(args, pr, d, model_prior, num_sweeps, seed)
    else:
        raise ValueError(f"method must be 'auto', 'enumerate' or 'gibbs', got {method!r}")
    pip = np.clip(pip, 1e-300, 1 - 1e-16)
    prior_ip = np.full(d, 0.5)
    bf = pip / (1 - pip)
    out = pd.DataFrame(
        {"pip": pip, "prior_ip": prior_ip, "bf": bf, "log10_bf": np.log10(bf)}, index=pd.Index(names, name="feature")
    )
    out.attrs.update(method=method, models_evaluated=int(evaluated))
    return out


def _gibbs_pip(args: tuple, pr: Any, d: int, model_prior: str, num_sweeps: int, seed: int) -> tuple[np.ndarray, int]:
    """Rao-Blackwellised inclusion probabilities from a Gibbs sampler over the indicators."""
    rng = np.random.default_rng(seed)
    cache: dict[bytes, float] = {}

    def log_post(masks: np.ndarray) -> np.ndarray:
        todo = [m for m in masks if m.tobytes() not in cache]
        if todo:
            arr = np.array(todo)
            S, z, sz2, w = args
            vals = _log_evidences(S, z, sz2, w, arr, pr.m, pr.C, pr.a, pr.b)[:, 0] + _model_log_prior(arr, model_prior)
            cache.update({m.tobytes(): float(v) for m, v in zip(arr, vals)})
        return np.array([cache[m.tobytes()] for m in masks])

    mask = rng.random(d) < 0.5
    burn = max(1, num_sweeps // 10)
    acc, kept = np.zeros(d), 0
    for sweep in range(num_sweeps):
        cond = np.zeros(d)
        for k in rng.permutation(d):
            on, off = mask.copy(), mask.copy()
            on[k], off[k] = True, False
            l_on, l_off = log_post(np.array([on, off]))
            cond[k] = 1.0 / (1.0 + math.exp(min(l_off - l_on, 700.0)))
            mask[k] = rng.random() < cond[k]
        if sweep >= burn:
            acc += cond
            kept += 1
    return acc / kept, len(cache)
