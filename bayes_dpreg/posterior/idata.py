"""The ``arviz.InferenceData`` that :func:`bayes_dpreg.fit` returns, in ArviZ's schema.

Groups:

* ``posterior``: the model parameters, ``theta`` (dims ``coef``) and ``sigma2`` where
  the method infers it, so that ``az.summary(idata)`` is short;
* ``latent_posterior``: the latent ``S_j`` (``party, row, col``), ``Sigma_x`` and, for
  the intercept model, ``mu_x``, ``b``, ``Sx`` (methods that infer them);
* ``sample_stats``: the sampler's statistics in ArviZ's names where they exist
  (``lp``, ``diverging``, ``acceptance_rate``, ``energy``, ``step_size``, ``tree_depth``);
* ``observed_data``: the released ``z_tilde`` per party, the variable ``posterior_predictive``
  replicates, so that ``az.plot_ppc(idata)`` works with no arguments;
* ``constant_data``: the released ``S_tilde`` (which the normalX methods also model: their
  latent ``S_j`` are in ``latent_posterior``), ``n``, ``sigma_S``, ``sigma_z``, ``x_bound``,
  ``y_bound``, ``epsilon``, ``delta`` per party;
* ``log_likelihood``: ``z_tilde`` (``chain, draw, party``), the log density of each
  party's released ``z~_j`` given the draw, ``log N(z~_j; S_j theta, sigma_y^2 S_j +
  sigma_z,j^2 I)`` (:func:`bayes_dpreg.model.densities.z_dist`), with ``S_j`` the draw's latent
  ``S_j`` where the method infers it and ``nearestPSD(S~_j)`` otherwise (then evaluated in that
  matrix's eigenbasis, :func:`~bayes_dpreg.model.densities.z_dist_eigen`). One value per
  party: the natural unit of leave-one-out here (``az.loo``; for the normalX methods it is
  leave-one-party-out *given* the latent ``S_j``). The same observation model for every
  method, so ``az.compare`` can rank methods on one release;
* ``posterior_predictive``: ``z_tilde`` drawn from that density (``az.plot_ppc``);
* ``prior`` (``theta``, ``sigma2``) and ``prior_predictive`` (``z_tilde`` at
  ``S_j = nearestPSD(S~_j)``), 500 draws;
* ``log_prior``: each top-level prior factor of eq. (4) at every posterior draw
  (:func:`bayes_dpreg.model.densities.prior_dists`): ``theta`` (``log N(theta; m, C)``),
  ``sigma2`` and ``Sigma_x`` where the method infers them. With ``log_likelihood`` it is
  what ``az.psens`` power-scales (:func:`bayes_dpreg.posterior.diagnostics.prior_sensitivity`); the
  intercept model's prior of ``mu_x`` is not among them.

``adassp`` (a point estimate, one draw) gets no likelihood or predictive groups.
Every group's ``attrs`` carry ``created_by``, ``bayes_dpreg_version``, ``method``,
``epsilon`` and ``delta``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ..model.densities import prior_dist, sigma_x_diagonal_draws, theta_prior, z_dist, z_dist_eigen
from ..model.linalg import nearest_psd
from ..model.prior import theta_feature_scale
from ..runtime.cache import fit_jit
from ..runtime.keys import fold_in, split_keys
from ..stats import StackedStats

if TYPE_CHECKING:
    import arviz as az

__all__ = ["DIMS", "LATENT", "PRIOR_DRAWS", "build"]

DIMS = {
    "theta": ["coef"],
    "Sigma_x": ["row", "col"],
    "S": ["party", "row", "col"],
    "mu_x": ["row"],
    "b": ["party", "row"],
    "Sx": ["party", "row", "col"],
    "S_tilde": ["party", "coef", "coef_col"],
    "z_tilde": ["party", "coef"],
    "n": ["party"],
    "sigma_S": ["party"],
    "sigma_z": ["party"],
    "x_bound": ["party"],
    "y_bound": ["party"],
    "epsilon": ["party"],
    "delta": ["party"],
    "accept_prob_S": ["party"],
    "alpha": ["party"],
    "accept_prob_eigen": ["direction"],
}
LATENT = ("S", "Sigma_x", "mu_x", "b", "Sx")
PRIOR_DRAWS = 500
CHUNK_DRAWS = 500  # draws per call of a post-processing program: one compiled shape, however many draws


def _chunked(fn: Any, arrays: Sequence[np.ndarray], size: int = CHUNK_DRAWS) -> Any:
    """``fn(i, *chunk_i)`` over chunks of ``size`` rows of ``arrays`` (the last padded with copies
    of its final row), outputs trimmed and concatenated: a compiled ``fn`` sees one shape whatever
    the number of draws, so a fit that extends its chains (twice the draws) or has other chain
    counts reuses the program the last fit compiled instead of tracing and lowering it again."""
    n = np.shape(arrays[0])[0]
    outs = []
    for i, start in enumerate(range(0, n, size)):
        part = [np.asarray(a[start : start + size]) for a in arrays]
        m = part[0].shape[0]
        part = [np.concatenate([p, np.repeat(p[-1:], size - m, axis=0)]) if m < size else p for p in part]
        outs.append(jax.tree.map(lambda r, m=m: np.asarray(r)[:m], fn(i, *part)))
    return jax.tree.map(lambda *r: np.concatenate(r), *outs)


def _predictive_draws(
    theta: jax.Array, sigma2: jax.Array, S: jax.Array, z: jax.Array, sigma_z: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Per draw ``(log p(z~_j | draw) for each party, a replicate of z~)``, ``S`` per draw ``(N, J, d, d)``."""
    keys = jax.random.split(key, theta.shape[0])

    def one(th, s2, Sd, k):
        dz = z_dist(Sd, th, s2, sigma_z)
        return dz.log_prob(z), dz.sample(k)

    return jax.vmap(one)(theta, sigma2, S, keys)


def _predictive_draws_shared(
    theta: jax.Array, sigma2: jax.Array, lam: jax.Array, U: jax.Array, w: jax.Array, sigma_z: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """:func:`_predictive_draws` where one ``S_j = U_j diag(lam_j) U_j^T`` serves every draw, in its
    eigenbasis (:func:`~bayes_dpreg.model.densities.z_dist_eigen`; ``w_j = U_j^T z~_j``): ``O(J d^2)`` a
    draw instead of ``J`` Cholesky factors (at d = 50, J = 100, 5-6 s of a fit's 2,500 draws)."""
    keys = jax.random.split(key, theta.shape[0])

    def one(th, s2, k):
        dw = z_dist_eigen(lam, U, th, s2, sigma_z)
        return dw.log_prob(w), jnp.einsum("jkl,jl->jk", U, dw.sample(k))

    return jax.vmap(one)(theta, sigma2, keys)


_predictive = fit_jit(_predictive_draws, key="predictive")
_predictive_shared = fit_jit(_predictive_draws_shared, key="predictive_shared")


def _prior_theta_sigma2(pr: Any, sigma2_fixed: float | None, key: jax.Array) -> tuple[np.ndarray, np.ndarray]:
    """``PRIOR_DRAWS`` draws of :func:`~bayes_dpreg.model.densities.prior_dists`' ``theta ~ N(m, C)``
    (``theta | Sigma_x`` over ``Sigma_x``'s prior where the prior scales ``theta`` by the features)
    and ``sigma2 ~ IG(a, b)`` (``b / Gamma(a, 1)``, by inversion on ``(0, sigma2_max]`` where the
    prior bounds it; ``sigma2_fixed`` where the method fixes it), drawn by NumPy and SciPy: JAX's
    gamma sampler alone took 0.6 s of a cold fit to compile."""
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
    m, C = np.asarray(pr.m, dtype=float), np.asarray(pr.C, dtype=float)
    theta = m + rng.standard_normal((PRIOR_DRAWS, m.size)) @ np.linalg.cholesky(C).T
    if pr.theta_ms is not None:  # theta | Sigma_x ~ N(m, D^-1 C D^-1)
        theta = m + (theta - m) / theta_feature_scale(pr, sigma_x_diagonal_draws(pr, rng, PRIOR_DRAWS))
    if sigma2_fixed is not None:
        return theta, np.full(PRIOR_DRAWS, float(sigma2_fixed))
    if pr.sigma2_max is None:
        return theta, float(pr.b) / rng.gamma(float(pr.a), 1.0, PRIOR_DRAWS)
    from scipy.stats import invgamma

    ig = invgamma(float(pr.a), scale=float(pr.b))
    return theta, ig.ppf(rng.uniform(0.0, ig.cdf(float(pr.sigma2_max)), PRIOR_DRAWS))


def _flat(a: np.ndarray, lead: int) -> np.ndarray:
    return np.asarray(a).reshape((-1,) + np.shape(a)[lead:])


def _predictive_groups(
    post: dict, latent: dict, st: StackedStats, pr: Any, sigma2_fixed: float | None, key: jax.Array
) -> tuple[dict, dict, dict, dict]:
    """``log_likelihood``, ``posterior_predictive``, ``prior`` and ``prior_predictive``, the
    posterior's and the prior's draws of ``z~`` in one compiled program (:func:`_predictive_draws`)."""
    theta = np.asarray(post["theta"])
    chains, draws = theta.shape[:2]
    N = chains * draws
    s2 = np.full(N, sigma2_fixed) if "sigma2" not in post else _flat(post["sigma2"], 2)
    S_hat = np.asarray(nearest_psd(np.asarray(st.S)))  # NumPy in: jnp.asarray would be a program of its own
    S = S_hat  # one S for every draw (J d^2 numbers: (N, J, d, d) would be 5 GB at d = 50, J = 100)
    if "S" in latent and np.shape(latent["S"])[-1] == theta.shape[-1]:
        S = np.concatenate([_flat(latent["S"], 2), np.broadcast_to(S_hat, (PRIOR_DRAWS,) + S_hat.shape)])
    k_post, k_prior = split_keys(key, 2)
    theta_pr, s2_pr = _prior_theta_sigma2(pr, sigma2_fixed, k_prior)
    z, sigma_z = np.asarray(st.z, np.float64), np.asarray(st.sigma_z, np.float64)
    per_draw = [np.concatenate([_flat(theta, 2), theta_pr]), np.concatenate([s2, s2_pr])]
    if S.ndim == 4:
        ll, rep = _chunked(
            lambda i, th, s2_, S_i: _predictive(th, s2_, S_i, z, sigma_z, fold_in(k_post, i)), [*per_draw, S]
        )
    else:
        lam, U = np.linalg.eigh(S)
        lam, w = np.maximum(lam, 0.0), np.einsum("jkl,jk->jl", U, z)  # nearest_psd's zeros, up to rounding
        ll, rep = _chunked(
            lambda i, th, s2_: _predictive_shared(th, s2_, lam, U, w, sigma_z, fold_in(k_post, i)), per_draw
        )
    prior = {"theta": theta_pr[None]}
    if sigma2_fixed is None:
        prior["sigma2"] = s2_pr[None]
    return (
        {"z_tilde": ll[:N].reshape(chains, draws, -1)},
        {"z_tilde": rep[:N].reshape(chains, draws, *np.shape(st.z))},
        prior,
        {"z_tilde": rep[N:].reshape(1, PRIOR_DRAWS, *np.shape(st.z))},
    )


@functools.cache
def _log_prior_factor(name: str) -> Any:
    """The compiled ``log p(draws)`` of the prior factor ``name``, a function of ``(pr, draws)``."""
    return fit_jit(lambda pr, draws: prior_dist(pr, name).log_prob(draws), key=("log_prior", name))


def _log_prior(post: dict, latent: dict, pr: Any) -> dict:
    """The ``log_prior`` group: each factor of :func:`~bayes_dpreg.model.densities.prior_dists` at the
    draws of its variable, where the method infers it (shape ``chain, draw``), in one compiled
    program per factor (op by op, a cold process spent seconds compiling the inverse-Wishart's
    pieces; one program per factor, so that no two batched LAPACK calls run at once: see
    :mod:`bayes_dpreg.runtime.threads`)."""
    events = {"theta": np.shape(pr.m), "sigma2": (), "Sigma_x": np.shape(pr.Lambda)}
    sites = {"theta": post.get("theta"), "sigma2": post.get("sigma2"), "Sigma_x": latent.get("Sigma_x")}
    arrays = {k: np.asarray(v) for k, v in sites.items() if v is not None and np.shape(v)[2:] == events[k]}
    out = {
        k: _chunked(lambda i, x, k=k: _log_prior_factor(k)(pr, x), [_flat(v, 2)]).reshape(v.shape[:2])
        for k, v in arrays.items()
        if not (k == "theta" and pr.theta_ms is not None)
    }
    if "theta" in arrays and pr.theta_ms is not None and "Sigma_x" in arrays:  # theta | Sigma_x
        th, Sx = arrays["theta"], arrays["Sigma_x"]
        out["theta"] = _chunked(lambda i, t, s: _theta_given_sigma_x(pr, t, s), [_flat(th, 2), _flat(Sx, 2)])
        out["theta"] = out["theta"].reshape(th.shape[:2])
    return out


_theta_given_sigma_x = fit_jit(
    lambda pr, theta, Sigma_x: theta_prior(pr, Sigma_x).log_prob(theta), key=("log_prior", "theta_given_sigma_x")
)


def _attrs(sampler: Any, st: StackedStats) -> dict:
    from .._version import __version__

    return {
        "created_by": "bayes_dpreg",
        "bayes_dpreg_version": __version__,
        "inference_library": "bayes_dpreg",
        "inference_library_version": __version__,
        "method": sampler.name,
        "epsilon": float(np.max(st.epsilon)),
        "delta": float(np.max(st.delta)),
    }


def build(
    res: Any,
    st: StackedStats,
    pr: Any,
    sampler: Any,
    coef_names: Sequence[str],
    party_names: Sequence[str],
    features: Sequence[str],
    key: jax.Array,
) -> az.InferenceData:
    """Assemble the groups above from a sampler's :class:`~bayes_dpreg.samplers.base.MethodResult`."""
    import arviz as az

    post = {k: v for k, v in res.posterior.items() if k not in LATENT}
    latent = {k: v for k, v in res.posterior.items() if k in LATENT}
    coords = {
        "coef": list(coef_names),
        "party": list(party_names),
        "row": list(features),
        "col": list(features),
        "coef_col": list(coef_names),
        "direction": np.arange(len(features)),
    }
    groups: dict[str, Any] = dict(
        posterior=post,
        sample_stats=res.sample_stats,
        observed_data={"z_tilde": st.z},
        constant_data={
            "S_tilde": st.S,
            "n": st.n,
            "sigma_S": st.sigma_S,
            "sigma_z": st.sigma_z,
            "x_bound": st.x_bound,
            "y_bound": st.y_bound,
            "epsilon": st.epsilon,
            "delta": st.delta,
        },
    )
    if sampler.kind != "point":
        sigma2_fixed = res.attrs.get("sigma2_fixed") if "sigma2" not in post else None
        names = ("log_likelihood", "posterior_predictive", "prior", "prior_predictive")
        groups.update(zip(names, _predictive_groups(post, latent, st, pr, sigma2_fixed, key)))
    dims = dict(DIMS)
    idata = az.from_dict(**groups, coords=coords, dims=dims)
    extra = {"latent_posterior": (latent, dims)}
    if sampler.kind != "point":
        extra["log_prior"] = (_log_prior(post, latent, pr), {})  # one scalar per draw and factor
    for group, (values, group_dims) in extra.items():
        if values:
            ds = az.from_dict(posterior=values, coords=coords, dims=group_dims).posterior
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata.add_groups({group: ds})
    attrs = _attrs(sampler, st)
    for g in idata.groups():
        idata[g].attrs.update(attrs)
    return idata
