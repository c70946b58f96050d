"""``fit``: one entry point from released statistics to an ``arviz.InferenceData``.

Methods are registered in ``METHODS`` (name -> function); each receives the
stacked statistics, the resolved prior, a JAX key and the draw counts, and
returns the posterior variables as arrays with leading ``(chain, draw)`` axes
plus method-specific attributes.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Literal, NamedTuple, Sequence

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

from numpyro.infer import MCMC

from .closed_form import adassp_estimate, adassp_ridge, fast_posterior
from .bs import BS, bs_data
from .kernels import FixedS, NormalX, Settings, normalx_hmc, normalx_intercept_hmc
from .models import fixeds_data, model_data
from .prior import ModelSpec, Prior, ResolvedPrior, load_model
from .release import NoisyStats, StackedStats, as_stats_list, stack_stats

__all__ = ["fit", "fast_sigma2", "METHODS", "resolve_prior"]

PriorLike = Prior | ModelSpec | str | os.PathLike | None


class MethodResult(NamedTuple):
    """What a method returns: arrays with leading ``(chain, draw)`` axes."""

    posterior: dict[str, np.ndarray]
    attrs: dict[str, Any]
    sample_stats: dict[str, np.ndarray] | None = None


MethodFn = Callable[..., MethodResult]


def resolve_prior(prior: PriorLike) -> Prior:
    """``None`` -> default :class:`Prior`; a path -> its TOML ``[prior]`` table."""
    if prior is None:
        return Prior()
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, ModelSpec):
        return prior.prior
    if isinstance(prior, (str, os.PathLike)):
        return load_model(prior).prior
    raise TypeError(f"prior must be a Prior, a ModelSpec or a TOML path, got {type(prior).__name__}")


def fast_sigma2(y_bound: float, rule: Literal["text", "code"] | float = "text") -> float:
    """The fixed ``sigma_y^2`` of Bayes-fixedS-fast (Alg. 3).

    ``"text"``: the paper's text, ``sigma_y = ||Y||/3`` so ``sigma_y^2 = (||Y||/3)^2``;
    ``"code"``: the authors' code, ``sigma_y^2 = ||Y||/3``; a number: that variance.
    ``||Y||`` is the declared ``y_bound`` (public), not the data's maximum.
    """
    if isinstance(rule, str):
        if rule == "text":
            return (y_bound / 3.0) ** 2
        if rule == "code":
            return y_bound / 3.0
        raise ValueError(f"sigma2 must be 'text', 'code' or a positive number, got {rule!r}")
    value = float(rule)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"sigma2 must be a positive number, got {rule!r}")
    return value


def _fast(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int,
    num_warmup: int, sigma2: Literal["text", "code"] | float = "text",
) -> MethodResult:
    s2 = fast_sigma2(float(st.y_bound.max()), sigma2)
    post = jax.jit(fast_posterior)(
        jnp.asarray(st.S), jnp.asarray(st.z), jnp.asarray(st.sigma_z**2), s2, jnp.asarray(pr.m), jnp.asarray(pr.C)
    )
    theta = post.sample(key, (num_chains, num_samples))
    attrs = {
        "sigma2_fixed": s2,
        "sigma2_rule": sigma2 if isinstance(sigma2, str) else "user",
        "exact_draws": 1,
        "posterior_mean": np.asarray(post.mean).tolist(),
        "posterior_cov": np.asarray(post.cov).ravel().tolist(),
    }
    return MethodResult({"theta": np.asarray(theta)}, attrs)


def _adassp(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    p: float = 0.05,
) -> MethodResult:
    del pr, key, num_chains, num_samples, num_warmup  # a point estimate: no prior, no draws
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    ridge = adassp_ridge(jnp.asarray(st.lambda_min), jnp.asarray(st.epsilon), jnp.asarray(st.delta),
                         jnp.asarray(st.x_bound), st.d, p)
    theta = adassp_estimate(jnp.asarray(st.S), jnp.asarray(st.z), ridge)
    attrs = {"point_estimate": 1, "ridge": np.asarray(ridge).tolist(), "p": p}
    return MethodResult({"theta": np.asarray(theta)[None, None, :]}, attrs)


def _mcmc(
    kernel: Any, model_args: tuple, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    thinning: int = 1, progress_bar: bool = False, chain_method: Any = "vectorized",
    extra_fields: tuple[str, ...] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run a kernel with ``numpyro.infer.MCMC``; samples and extra fields grouped by chain."""
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                thinning=thinning, chain_method=chain_method, progress_bar=progress_bar)
    mcmc.run(key, *model_args, extra_fields=extra_fields if extra_fields is not None
             else getattr(kernel, "extra_fields", ()))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    return samples, extra


LEVEL_MOVES_MAX_D = 8


def _kernel_settings(options: dict[str, Any], d: int) -> tuple[Settings, dict[str, Any]]:
    """Split kernel settings from run options. ``level_moves="auto"`` (default) turns the level
    moves on for ``d <= 8``: at d = 5 they raise the ESS of theta 35-250x on ill-conditioned
    problems (``benchmarks/convergence.py``), while at d = 10-20 each iteration costs 3-20x
    more and the adaptive proposal does not learn within a normal warm-up
    (``benchmarks/bench_samplers.py``)."""
    fields = {k: options.pop(k) for k in list(options) if k in Settings._fields and k != "num_warmup"}
    if fields.get("level_moves", "auto") == "auto":
        fields["level_moves"] = d <= LEVEL_MOVES_MAX_D
    return Settings(**fields), options


def _normalx(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    **options: Any,
) -> MethodResult:
    settings, run_opts = _kernel_settings(options, st.d)
    samples, extra = _mcmc(NormalX(pr, settings), (model_data(st),), key, num_chains, num_samples, num_warmup,
                           **run_opts)
    stats = {
        "accept_prob_S": extra["accept_S"],
        "alpha": np.exp(extra["log_alpha"]),
        "accept_prob_sigma2": extra["accept_sigma2"],
        "step_size_sigma2": np.exp(extra["log_step"]),
    }
    if settings.collapse_theta and settings.level_moves:
        stats.update(accept_prob_group=extra["accept_group"], accept_prob_eigen=extra["accept_eigen"],
                     accept_prob_noncentred=extra["accept_noncentred"])
    attrs = {"num_warmup": num_warmup, "target_accept_S": settings.target_accept_S,
             "target_accept_sigma2": settings.target_accept_sigma2,
             "collapse_theta": int(settings.collapse_theta), "level_moves": int(settings.level_moves),
             "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included)",
             "alpha_final": np.exp(extra["log_alpha"][:, -1]).ravel().tolist()}
    return MethodResult(samples, attrs, stats)


def _fixeds(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    **options: Any,
) -> MethodResult:
    settings, run_opts = _kernel_settings(options, st.d)
    samples, extra = _mcmc(FixedS(pr, settings), (fixeds_data(model_data(st)),), key, num_chains, num_samples,
                           num_warmup, **run_opts)
    stats = {"accept_prob_sigma2": extra["accept_sigma2"], "step_size_sigma2": np.exp(extra["log_step"])}
    attrs = {"num_warmup": num_warmup, "target_accept_sigma2": settings.target_accept_sigma2,
             "sigma2_move": "Gaussian random walk on log sigma2 (Jacobian included)"}
    return MethodResult(samples, attrs, stats)


def _normalx_hmc(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    gibbs_sigma_x: bool = False, dense_mass: bool = True, target_accept_prob: float = 0.8, max_tree_depth: int = 10,
    build: Callable[..., Any] = normalx_hmc, **run_opts: Any,
) -> MethodResult:
    data = model_data(st)
    kernel = build(data, pr, gibbs_sigma_x=gibbs_sigma_x, dense_mass=dense_mass,
                   target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth)
    run_opts.setdefault("chain_method", jax.vmap)  # numpyro's Gibbs takes a callable for vectorised chains
    fields = ("diverging", "accept_prob", "num_steps")
    samples, extra = _mcmc(kernel, (data, pr), key, num_chains, num_samples, num_warmup,
                           extra_fields=tuple(f"block_states.1.{f}" for f in fields), **run_opts)
    stats = {f: extra[f"block_states.1.{f}"] for f in fields}
    attrs = {"num_warmup": num_warmup, "gibbs_sites": "theta, Sigma_x" if gibbs_sigma_x else "theta",
             "dense_mass": int(dense_mass), "target_accept_prob": target_accept_prob,
             "divergences": int(stats["diverging"].sum())}
    return MethodResult(samples, attrs, stats)


def _normalx_intercept(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    **options: Any,
) -> MethodResult:
    res = _normalx_hmc(st, pr, key, num_chains, num_samples, num_warmup, build=normalx_intercept_hmc, **options)
    res.attrs["model"] = "intercept with non-centred normal features (App. B.2); theta[0] is the intercept"
    return res


def _bs(
    st: StackedStats, pr: ResolvedPrior, key: jax.Array, num_chains: int, num_samples: int, num_warmup: int,
    **run_opts: Any,
) -> MethodResult:
    data = bs_data(st.S, st.z, st.u, st.n, st.sigma_S)
    samples, extra = _mcmc(BS(pr), (data,), key, num_chains, num_samples, num_warmup, **run_opts)
    stats = {"psd_projected": extra["psd_projected"], "b_floored": extra["b_floored"]}
    attrs = {"num_warmup": num_warmup, "psd_projected_fraction": float((extra["psd_projected"] > 0).mean()),
             "b_floored_fraction": float(extra["b_floored"].mean()),
             "model": "CLT approximation of [upper(S), z, y^T y] (Bernstein & Sheldon 2019), NIG prior"}
    return MethodResult(samples, attrs, stats)


METHODS: dict[str, MethodFn] = {
    "fast": _fast, "adassp": _adassp, "normalx": _normalx, "fixeds": _fixeds, "normalx-hmc": _normalx_hmc,
    "bs": _bs, "normalx-intercept": _normalx_intercept,
}
# methods whose model has zero-mean normal features, so statistics of [1, x] (intercept) are invalid
CENTRED_FEATURES = {"normalx", "normalx-hmc", "bs"}
# methods whose model has S_j ~ Wishart(Sigma_x, n_j): need n_j > d + 1
NEEDS_WISHART = {"normalx", "normalx-hmc", "normalx-intercept"}
# the release mechanisms each method accepts (default: "ssp" and "bs", whose S~, z~ have the same form)
MECHANISM: dict[str, tuple[str, ...]] = {"adassp": ("adassp",), "bs": ("bs",)}
_SSP_MECHANISMS = ("ssp", "bs")
_RELEASE_FN = {"ssp": "bayes_dpreg.release", "adassp": "bayes_dpreg.release_adassp", "bs": "bayes_dpreg.release_bs"}


def _constant_data(st: StackedStats) -> dict[str, np.ndarray]:
    return {"S_tilde": st.S, "z_tilde": st.z, "n": st.n, "sigma_S": st.sigma_S, "sigma_z": st.sigma_z}


def fit(
    stats: NoisyStats | Sequence[NoisyStats],
    method: str = "fast",
    prior: PriorLike = None,
    *,
    num_samples: int = 1000,
    num_chains: int = 4,
    num_warmup: int = 1000,
    seed: int = 0,
    coef_names: Sequence[str] | None = None,
    **options: Any,
) -> az.InferenceData:
    """Posterior of the regression coefficients from the parties' released statistics.

    Parameters
    ----------
    stats : one :class:`NoisyStats` per party (from :func:`release` or :func:`load_stats`).
    method : ``"fast"`` (Bayes-fixedS-fast, Alg. 3; exact Gaussian draws),
        ``"adassp"`` (distributed adaSSP point estimate, App. C.2; needs
        :func:`release_adassp` statistics), ``"normalx"`` (MCMC-normalX, Alg. 1),
        ``"fixeds"`` (MCMC-fixedS, Alg. 2), ``"normalx-hmc"`` (NUTS within Gibbs) or
        ``"bs"`` (MCMC-B&S, App. C.1; needs :func:`release_bs` statistics) or
        ``"normalx-intercept"`` (App. B.2, NUTS within Gibbs; needs ``release(...,
        intercept=True)`` statistics). ``fast``, ``fixeds`` and ``adassp`` treat an
        intercept column as one more feature.
    prior : a :class:`Prior`, a :class:`ModelSpec` or a TOML path; default ``Prior()``.
    num_samples, num_chains : draws per chain and number of chains.
    num_warmup : MCMC warm-up iterations per chain (adaptation; discarded).
    seed : seed of the analyst's sampling (the releases' noise is already fixed).
    coef_names : labels of the ``coef`` dimension.
    options : method options, e.g. ``sigma2="text" | "code" | float`` for ``"fast"``,
        ``p=0.05`` for ``"adassp"``, :class:`~bayes_dpreg.kernels.Settings` fields and
        ``progress_bar`` for the MCMC methods (README).

    Returns
    -------
    ``arviz.InferenceData`` with a ``posterior`` group (``theta`` with dims
    ``chain, draw, coef``; ``sigma2``, ``Sigma_x`` and ``S`` where the method infers
    them), ``sample_stats`` for the MCMC methods and a ``constant_data`` group
    holding the released statistics. The posterior's
    ``attrs`` record ``method``, ``epsilon``, ``delta``, ``J``, ``n`` and the
    method's settings.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; available: {sorted(METHODS)}")
    stats = as_stats_list(stats)
    accepted = MECHANISM.get(method, _SSP_MECHANISMS)
    wrong = [j for j, s in enumerate(stats) if s.mechanism not in accepted]
    if wrong:
        raise ValueError(
            f"method {method!r} needs statistics released with {_RELEASE_FN[accepted[0]]} "
            f"(mechanism {accepted[0]!r}); parties {wrong} used another mechanism"
        )
    for name, v in (("num_samples", num_samples), ("num_chains", num_chains), ("num_warmup", num_warmup + 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    st = stack_stats(stats)
    d = st.d
    intercept = _check_intercept(method, stats)
    if method in NEEDS_WISHART:
        small = [(j, int(n)) for j, n in enumerate(st.n) if n <= d + 1]
        if small:
            raise ValueError(f"method {method!r} models S_j ~ Wishart(Sigma_x, n_j) and needs n_j > d + 1 = {d + 1}; "
                             f"parties (index, n_j) {small} are too small (use 'fixeds' or 'fast')")
    if coef_names is None:
        names = (["intercept"] if intercept else []) + [f"theta_{k}" for k in range(d - intercept)]
    else:
        names = [str(c) for c in coef_names]
    if len(names) != d:
        raise ValueError(f"coef_names has {len(names)} entries but d = {d}")
    prior_obj = resolve_prior(prior)
    pr = prior_obj.resolve_intercept(d - 1) if method == "normalx-intercept" else prior_obj.resolve(d)
    features = names[1:] if method == "normalx-intercept" else names
    try:
        res = METHODS[method](st, pr, jax.random.key(seed), num_chains, num_samples, num_warmup, **options)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise TypeError(f"method {method!r}: {exc}") from None
        raise
    _check_finite(method, res.posterior)
    idata = az.from_dict(
        posterior=res.posterior,
        sample_stats=res.sample_stats,
        coords={"coef": names, "party": np.arange(st.J), "row": features, "col": features,
                "coef_col": names},
        dims=DIMS,
        constant_data=_constant_data(st),
    )
    attrs = {
        "method": method,
        "epsilon": float(st.epsilon.max()),
        "delta": float(st.delta.max()),
        "epsilon_per_party": st.epsilon.tolist(),
        "delta_per_party": st.delta.tolist(),
        "J": st.J,
        "n": int(st.n.sum()),
        "n_per_party": st.n.tolist(),
        "d": d,
        "seed": int(seed),
        "intercept": int(intercept),
        "prior": repr(prior_obj),
        "inference_library": "bayes_dpreg",
    }
    attrs.update(res.attrs)
    idata.posterior.attrs.update(attrs)
    return idata


DIMS = {
    "theta": ["coef"], "Sigma_x": ["row", "col"], "S": ["party", "row", "col"], "mu_x": ["row"],
    "b": ["party", "row"], "Sx": ["party", "row", "col"],
    "S_tilde": ["party", "coef", "coef_col"], "z_tilde": ["party", "coef"], "n": ["party"], "sigma_S": ["party"],
    "sigma_z": ["party"], "accept_prob_S": ["party"], "alpha": ["party"], "accept_prob_eigen": ["direction"],
}


def _check_intercept(method: str, stats: list[NoisyStats]) -> bool:
    """Whether the statistics are of ``[1, x]`` (all parties alike), and that ``method`` can use them."""
    flags = {bool(s.meta.get("intercept", False)) for s in stats}
    if len(flags) > 1:
        raise ValueError("some parties released with intercept=True and some without")
    intercept = flags.pop()
    if intercept and method in CENTRED_FEATURES:
        raise ValueError(f"method {method!r} assumes zero-mean features; for statistics released with "
                         "intercept=True use 'normalx-intercept', 'fixeds' or 'fast'")
    if method == "normalx-intercept" and not intercept:
        raise ValueError("method 'normalx-intercept' needs statistics released with intercept=True")
    return intercept


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
