"""Diagnostics: convergence of MCMC output (R-hat, ESS), the release's noise against the signal,
and the maximum mean discrepancy between posterior samples (paper App. D).

The unbiased estimator of the squared MMD with the Gaussian kernel
``k(a, b) = exp(-||a - b||^2 / (2 h^2))`` (Gretton et al. 2012, eq. 3):

.. math::
    \\widehat{MMD}^2 = \\frac{1}{m(m-1)}\\sum_{i \\ne j} k(x_i, x_j)
    + \\frac{1}{n(n-1)}\\sum_{i \\ne j} k(y_i, y_j) - \\frac{2}{mn}\\sum_{i,j} k(x_i, y_j),

computed in row blocks (``lax.map``) so that 10^4 x 10^4 samples never hold a
full kernel matrix in memory.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .precision import x64

__all__ = [
    "mmd2_unbiased",
    "median_bandwidth",
    "calibration",
    "ConvergenceWarning",
    "Convergence",
    "convergence",
    "separated_chains",
    "BoundsMisfitWarning",
    "sigma2_over_bound",
    "bounds_summary",
    "convergence_summary",
    "noise_to_signal",
    "HeterogeneityWarning",
    "Heterogeneity",
    "party_heterogeneity",
    "heterogeneous",
    "heterogeneity_summary",
    "PriorSensitivityWarning",
    "PriorSensitivity",
    "prior_sensitivity",
    "prior_sensitivity_summary",
    "sigma_x_sensitive",
    "PRIOR_SENSITIVITY_MAX",
]


@functools.partial(jax.jit, static_argnames=("block",))
def _kernel_sum(x: Array, y: Array, bandwidth: float, block: int) -> Array:
    """``sum_{i,j} k(x_i, y_j)`` over row blocks of ``x`` (padded rows contribute zero)."""
    m = x.shape[0]
    nb = -(-m // block)
    pad = nb * block - m
    xp = jnp.concatenate([x, jnp.zeros((pad, x.shape[1]), x.dtype)]).reshape(nb, block, x.shape[1])
    mask = (jnp.arange(nb * block) < m).reshape(nb, block)
    y2 = (y * y).sum(1)

    def one(args):
        xb, mb = args
        d2 = (xb * xb).sum(1)[:, None] + y2[None, :] - 2.0 * xb @ y.T
        return (jnp.exp(-jnp.maximum(d2, 0.0) / (2.0 * bandwidth**2)) * mb[:, None]).sum()

    return jax.lax.map(one, (xp, mask)).sum()


@x64
def mmd2_unbiased(x: Any, y: Any, bandwidth: float, block: int = 1024) -> float:
    """Unbiased squared MMD between samples ``x`` (m, d) and ``y`` (n, d), Gaussian kernel.

    Can be negative (it is unbiased); ``m, n >= 2``."""
    x = jnp.atleast_2d(jnp.asarray(x, jnp.float64))
    y = jnp.atleast_2d(jnp.asarray(y, jnp.float64))
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"samples must be (m, d) and (n, d) with the same d, got {x.shape} and {y.shape}")
    m, n = x.shape[0], y.shape[0]
    if m < 2 or n < 2:
        raise ValueError("need at least two draws from each distribution")
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
    kxx = (_kernel_sum(x, x, bandwidth, block) - m) / (m * (m - 1))  # k(x_i, x_i) = 1
    kyy = (_kernel_sum(y, y, bandwidth, block) - n) / (n * (n - 1))
    kxy = _kernel_sum(x, y, bandwidth, block) / (m * n)
    return float(kxx + kyy - 2.0 * kxy)


@x64
def median_bandwidth(x: Any, y: Any, max_points: int = 2000, seed: int = 0) -> float:
    """The median heuristic: median pairwise distance in the pooled sample (subsampled)."""
    z = np.vstack([np.atleast_2d(x), np.atleast_2d(y)])
    rng = np.random.default_rng(seed)
    if z.shape[0] > max_points:
        z = z[rng.choice(z.shape[0], max_points, replace=False)]
    d = np.sqrt(((z[:, None, :] - z[None, :, :]) ** 2).sum(-1))
    return float(np.median(d[np.triu_indices(z.shape[0], 1)]))


@x64
def calibration(
    idata: Any,
    reference: Any,
    *,
    bandwidth: float | None = None,
    thin: int = 50,
    num_reference: int = 2000,
    seed: int = 0,
) -> float:
    """Squared MMD between ``idata``'s posterior of ``theta`` and a reference posterior.

    ``reference`` is an array of draws ``(k, d)`` or an object with ``sample(key, num)``
    (e.g. :class:`~bayes_dpreg.closed_form.NIGPosterior`, the exact non-private
    posterior; its first output is ``theta``). As in App. D, every ``thin``-th MCMC
    draw is used and ``num_reference`` reference draws; ``bandwidth`` defaults to the
    median heuristic.
    """
    theta = np.asarray(idata.posterior["theta"].values)
    draws = theta[:, ::thin].reshape(-1, theta.shape[-1])
    if hasattr(reference, "sample"):
        ref = reference.sample(jax.random.key(seed), num_reference)
        ref = np.asarray(ref[0] if isinstance(ref, tuple) else ref)
    else:
        ref = np.asarray(reference)
    h = median_bandwidth(draws, ref, seed=seed) if bandwidth is None else bandwidth
    return mmd2_unbiased(draws, ref, h)


# -- convergence ------------------------------------------------------------------------------


class ConvergenceWarning(UserWarning):
    """MCMC chains that have not mixed (R-hat, ESS) or that diverged: the intervals are not to be trusted."""


class Convergence(NamedTuple):
    """Rank-normalised split R-hat and bulk/tail ESS (Vehtari et al. 2021, via ArviZ) of the
    scalar quantities in ``var_names``, the worst of each, and the verdict; ``separated``: the
    scalars whose chains sit in separate modes (:func:`separated_chains`), with ``sigma2_bound``
    (``y_bound^2``, above which the declared bound rules ``sigma_y^2`` out) for the message."""

    r_hat: dict[str, float]
    ess_bulk: dict[str, float]
    ess_tail: dict[str, float]
    divergences: int
    num_chains: int
    rhat_max: float
    ess_min: float
    separated: dict[str, list[float]] | None = None
    sigma2_bound: float | None = None

    @property
    def max_rhat(self) -> float:
        return max(self.r_hat.values())

    @property
    def min_ess_bulk(self) -> float:
        return min(self.ess_bulk.values())

    @property
    def min_ess_tail(self) -> float:
        return min(self.ess_tail.values())

    @property
    def ok(self) -> bool:
        return (
            self.max_rhat <= self.rhat_max
            and min(self.min_ess_bulk, self.min_ess_tail) >= self.ess_min
            and self.divergences == 0
            and not self.separated
        )

    def message(self, method: str) -> str:
        """What went wrong and what to do (empty when :attr:`ok`)."""
        problems = []
        worst = lambda d, f: f(d, key=d.get)
        if self.max_rhat > self.rhat_max:
            problems.append(f"max R-hat {self.max_rhat:.3f} ({worst(self.r_hat, max)}) > {self.rhat_max}")
        for kind, vals in (("bulk", self.ess_bulk), ("tail", self.ess_tail)):
            if min(vals.values()) < self.ess_min:
                problems.append(
                    f"min {kind} ESS {min(vals.values()):.0f} ({worst(vals, min)}) < {self.ess_min:.0f} (100 per chain)"
                )
        if self.divergences:
            problems.append(f"{self.divergences} divergent transitions after warm-up")
        if self.separated:
            problems.append(_modes_message(self.separated, self.sigma2_bound))
        if not problems:
            return ""
        advice = (
            "raise num_warmup and num_samples (and num_chains; CLI --num-warmup, --num-samples), or for the NUTS "
            "methods pass extend=2 (CLI --extend 2) to continue the chains, and check the prior's scale against the "
            "declared bounds"
        )
        if self.divergences:
            advice = "raise target_accept_prob (e.g. 0.95); " + advice
        if self.separated:
            advice = (
                "more draws will not join separate modes. Compare with method='fixeds', check whether the parties' "
                "features differ (HeterogeneityWarning), and do not report either mode's intervals alone"
            )
        return (
            f"method {method!r}: {'; '.join(problems)}. The chains have not converged: do not report these "
            f"intervals. To fix: {advice}."
        )


def _modes_message(separated: dict[str, list[float]], sigma2_bound: float | None) -> str:
    name, means = next(iter(separated.items()))
    text = f"the chains sit in separate modes of {name} (chain means {', '.join(f'{m:.3g}' for m in means)})"
    if "sigma2" in separated and sigma2_bound is not None and max(separated["sigma2"]) > sigma2_bound:
        text += (
            f", some with sigma2 above y_bound^2 = {sigma2_bound:.3g}, which the declared bound on |y| rules out: "
            "the model does not fit these statistics there (seen with parties whose feature distributions differ)"
        )
    return text


def convergence_summary(attrs: Any) -> str | None:
    """One line on convergence for the CLI and reports, from the attrs ``fit`` records (``None``
    when the fit recorded none: closed-form methods)."""
    if "max_rhat" not in attrs:
        return None
    text = (
        f"Convergence: max R-hat {attrs['max_rhat']:.3f}, min bulk ESS {attrs['min_ess_bulk']:.0f}, "
        f"min tail ESS {attrs['min_ess_tail']:.0f}"
        + (f", {attrs['divergences']} divergent transitions" if attrs.get("divergences") else "")
    )
    if bool(attrs.get("converged", 1)):
        return text + ": ok."
    if attrs.get("separated_modes"):
        return (
            f"{text}: NOT CONVERGED: the chains sit in separate modes of {attrs['separated_modes']}, which more "
            "draws will not join; do not use these intervals (compare with method='fixeds')."
        )
    return text + ": NOT CONVERGED; rerun with more draws before using these intervals."


SEPARATION = 5.0  # chain means this many pooled within-chain sds apart: separate modes, not slow mixing


def separated_chains(post: Any, names: Sequence[str], gap: float = SEPARATION) -> dict[str, list[float]]:
    """Scalars whose chains sit in separate modes: two chain means (of ``log`` for the positive
    ``sigma2``) more than ``gap`` pooled within-chain standard deviations apart, the most separated
    first, as ``{label: chain means}`` (labelled like :func:`convergence`'s R-hat). Slow mixing
    gives R-hat above 1.01 with chain means a fraction of a standard deviation apart; separate
    modes do not merge with more draws."""
    found = []
    for name in names:
        if name not in post:
            continue
        da = post[name]
        x = np.asarray(da.values, dtype=np.float64).reshape(da.shape[0], da.shape[1], -1)
        y = np.log(x) if name == "sigma2" and np.all(x > 0) else x
        sd = np.sqrt(y.var(axis=1, ddof=1).mean(0))
        m = y.mean(1)
        z = (m.max(0) - m.min(0)) / np.where(sd > 0, sd, np.inf)
        for k in np.flatnonzero(z > gap):
            label = _scalar_label(name, da, da.dims[2:], np.unravel_index(k, da.shape[2:]))
            found.append((float(z[k]), label, [float(v) for v in x[:, :, k].mean(1)]))
    return {label: means for _, label, means in sorted(found, key=lambda t: -t[0])}


def _scalar_values(ds: Any, var_names: Sequence[str]) -> dict[str, float]:
    out = {}
    for name in var_names:
        if name not in ds:
            continue
        da = ds[name]
        if da.ndim == 0:
            out[name] = float(da)
            continue
        for idx in np.ndindex(*da.shape):
            out[_scalar_label(name, da, da.dims, idx)] = float(da.values[idx])
    return out


def _scalar_label(name: str, da: Any, dims: Sequence[str], idx: tuple) -> str:
    """``name[coord,...]`` of element ``idx`` over ``dims`` (coordinate values where ``da`` has them)."""
    labels = [str(da.coords[dim].values[i]) if dim in da.coords else str(i) for dim, i in zip(dims, idx)]
    return f"{name}[{','.join(labels)}]" if labels else name


def convergence(
    idata: Any,
    var_names: Sequence[str] = ("theta", "sigma2"),
    *,
    rhat_max: float = 1.01,
    ess_per_chain: float = 100.0,
    sigma2_bound: float | None = None,
) -> Convergence:
    """R-hat and ESS of ``var_names`` in ``idata.posterior``; the thresholds are those of
    Vehtari et al. (2021): R-hat <= 1.01 and ESS >= 100 per chain."""
    import arviz as az

    names = [v for v in var_names if v in idata.posterior]
    post = idata.posterior[names]
    div = (
        int(idata.sample_stats["diverging"].sum())
        if "sample_stats" in idata and "diverging" in idata.sample_stats
        else 0
    )
    num_chains = int(post.sizes["chain"])
    return Convergence(
        _scalar_values(az.rhat(post, method="rank"), names),
        _scalar_values(az.ess(post, method="bulk"), names),
        _scalar_values(az.ess(post, method="tail"), names),
        div,
        num_chains,
        rhat_max,
        ess_per_chain * num_chains,
        separated_chains(post, names) if num_chains > 1 else {},
        sigma2_bound,
    )


def needs_more_draws(draws: dict, var_names: Sequence[str] = ("theta", "sigma2")) -> bool:
    """For the chain driver's ``extend``: the chains of ``var_names`` (arrays ``(chain, draw, ...)``)
    mix too slowly (R-hat above 1.01, or bulk or tail ESS below 100 per chain, :func:`convergence`)
    but do not sit in separate modes, which more draws would not join. Divergences do not count:
    more draws do not remove them."""
    import arviz as az

    post = {k: np.asarray(draws[k]) for k in var_names if k in draws}
    c = convergence(az.from_dict(posterior=post), tuple(post))
    slow = c.max_rhat > c.rhat_max or min(c.min_ess_bulk, c.min_ess_tail) < c.ess_min
    return slow and not c.separated


# -- the posterior against the declared bounds -------------------------------------------------


class BoundsMisfitWarning(UserWarning):
    """The posterior contradicts the declared bounds: ``sigma_y^2`` above ``y_bound^2``, which
    ``|y| <= y_bound`` rules out (``sigma_y^2 = Var(y | x) <= E[y^2] <= y_bound^2`` for the clipped
    responses the release saw). The model does not fit the released statistics."""


def sigma2_over_bound(idata: Any, y_bound: float) -> float:
    """Posterior median of ``sigma_y^2`` over ``y_bound^2`` (``nan`` without ``sigma2`` draws)."""
    if "sigma2" not in idata.posterior:
        return float("nan")
    return float(np.median(np.asarray(idata.posterior["sigma2"].values))) / float(y_bound) ** 2


def bounds_misfit_message(method: str, ratio: float, y_bound: float) -> str:
    return (
        f"method {method!r}: the posterior median of sigma2 is {ratio:.3g} times y_bound^2 = {y_bound**2:.3g}, "
        "which the declared bound on |y| rules out (Var(y | x) <= y_bound^2): the model does not fit these "
        "statistics, and theta's intervals are not to be trusted (too wide where sigma2 is overstated). Seen with "
        "parties whose feature distributions differ (HeterogeneityWarning); compare with method='fixeds'."
    )


def bounds_summary(attrs: Any) -> str | None:
    """One line on ``sigma_y^2`` against ``y_bound^2`` for the CLI and reports, when it is exceeded."""
    ratio = attrs.get("sigma2_over_bound")
    if ratio is None or not ratio > 1.0:
        return None
    return (
        f"Bounds: the posterior median of sigma2 is {ratio:.3g} times y_bound^2, which the declared bound on |y| "
        "rules out: the model does not fit these statistics (BoundsMisfitWarning)."
    )


# -- release noise against signal ----------------------------------------------------------------


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


# -- parties against one shared Sigma_x --------------------------------------------------------


class HeterogeneityWarning(UserWarning):
    """The parties' released ``S~_j`` differ more than one ``Sigma_x`` shared by all parties allows:
    the model ``S_j ~ W(Sigma_x, n_j)`` of MCMC-normalX is strained (e.g. parties split by time or site)."""


HETEROGENEITY_MAX = 2.0  # dispersion above which fit warns (about 1 under the model)
HETEROGENEITY_P = 0.01


def heterogeneous(dispersion: float, p_value: float) -> bool:
    """The verdict behind ``HeterogeneityWarning``: dispersion above 2 with bootstrap p <= 0.01."""
    return dispersion > HETEROGENEITY_MAX and p_value <= HETEROGENEITY_P


def heterogeneity_summary(attrs: Any) -> str | None:
    """One line on the parties' spread for reports (``None`` when the fit did not record it)."""
    if "party_dispersion" not in attrs:
        return None
    disp, p = float(attrs["party_dispersion"]), float(attrs["party_dispersion_p"])
    verdict = (
        "the parties' feature distributions differ, so one shared Sigma_x does not hold (HeterogeneityWarning)"
        if heterogeneous(disp, p)
        else "consistent with one shared Sigma_x"
    )
    spread = f"the released S~_j spread {disp:.2f} times what the model allows (bootstrap p = {p:.3g})"
    return f"Parties: {spread}: {verdict}."


class Heterogeneity(NamedTuple):
    """:func:`party_heterogeneity`'s result: ``dispersion`` = ``statistic / null_mean`` (about 1 when
    the parties share ``Sigma_x``), its parametric-bootstrap ``p_value`` and the ``draws`` behind it."""

    statistic: float
    null_mean: float
    dispersion: float
    p_value: float
    draws: int


def _upper(S: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(S.shape[-1])
    return S[..., iu[0], iu[1]]


def _wishart_cov(Sigma: np.ndarray) -> np.ndarray:
    """``Cov(S_ab, S_ce) / n = Sigma_ac Sigma_be + Sigma_ae Sigma_bc`` for ``S ~ W(Sigma, n)``, over the
    upper triangle (row-major, diagonal included)."""
    a, b = np.triu_indices(Sigma.shape[-1])
    return Sigma[np.ix_(a, a)] * Sigma[np.ix_(b, b)] + Sigma[np.ix_(a, b)] * Sigma[np.ix_(b, a)]


def _whitened_spread(S: np.ndarray, n: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``sum_j ||W_j r_j||^2`` with ``r_j = upper(S_j) - n_j upper(sum_k S_k / sum_k n_k)``; ``S`` may
    carry leading batch axes before the party axis."""
    pooled = S.sum(-3, keepdims=True) / n.sum()
    r = _upper(S - n[:, None, None] * pooled)
    return (np.einsum("jpq,...jq->...jp", W, r) ** 2).sum((-1, -2))


def _bartlett_wishart(rng: np.random.Generator, L: np.ndarray, dof: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of ``S_j ~ W(L L^T, dof_j)`` per party (Bartlett: ``S = L A A^T L^T``)."""
    J, d = dof.shape[0], L.shape[-1]
    A = np.tril(rng.standard_normal((size, J, d, d)), -1)
    chi = rng.chisquare(dof[:, None] - np.arange(d), size=(size, J, d))
    A[..., np.arange(d), np.arange(d)] = np.sqrt(chi)
    LA = L @ A
    return LA @ np.swapaxes(LA, -1, -2)


def party_heterogeneity(S_tilde: Any, n: Any, sigma_S: Any, *, draws: int = 200, seed: int = 0) -> Heterogeneity:
    """Do the parties' released Gram matrices look like draws around one shared ``Sigma_x``?

    MCMC-normalX models ``S_j ~ W(Sigma_x, n_j)`` with one ``Sigma_x`` (eq. 4), released as
    ``S~_j = S_j + sigma_S,j M_j`` (eq. 8). With the pooled estimate
    ``Sigma^ = sum_j S~_j / sum_j n_j`` and the residuals ``r_j = upper(S~_j - n_j Sigma^)``,
    the statistic is

    .. math::
        Q = \\sum_j r_j^T V_j^{-1} r_j, \\quad
        V_j = (1 - n_j / N) (n_j \\Gamma(\\hat\\Sigma) + \\sigma_{S,j}^2 I),

    ``Gamma`` the Wishart covariance of the entries (:func:`_wishart_cov`). Its null
    distribution is taken by parametric bootstrap: ``draws`` releases simulated from the model
    at ``Sigma_x = Sigma^`` (eigenvalues floored at a millionth of the largest), the same ``n_j``
    and noise, weighted by the same ``V_j``. ``dispersion = Q / mean(Q*)`` is how many times
    more the parties' ``S~_j`` spread than the model allows (about 1 under the model; 1.0-1.5 on
    random splits of power plant and bike sharing, about 4-6 on bike sharing split into
    consecutive blocks, whose seasons differ), ``p_value = (1 + #{Q* >= Q}) / (draws + 1)``.
    Release-only: post-processing, no privacy cost. Needs ``J >= 2``.
    """
    S = np.asarray(S_tilde, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    sig = np.broadcast_to(np.asarray(sigma_S, dtype=np.float64), n.shape)
    J, d = S.shape[0], S.shape[-1]
    if J < 2:
        raise ValueError(f"party_heterogeneity needs at least 2 parties, got {J}")
    lam, U = np.linalg.eigh(0.5 * (S + np.swapaxes(S, -1, -2)).sum(0) / n.sum())
    lam = np.maximum(lam, 1e-6 * max(lam[-1], np.finfo(float).tiny))
    Sigma = (U * lam) @ U.T
    G, p = _wishart_cov(Sigma), d * (d + 1) // 2
    V = (1.0 - n / n.sum())[:, None, None] * (n[:, None, None] * G + sig[:, None, None] ** 2 * np.eye(p))
    W = np.linalg.inv(np.linalg.cholesky(V))
    q = float(_whitened_spread(S, n, W))
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((draws, J, d, d))
    noise = np.triu(noise) + np.swapaxes(np.triu(noise, 1), -1, -2)
    S_star = _bartlett_wishart(rng, U * np.sqrt(lam), n, draws) + sig[:, None, None] * noise
    q_star = _whitened_spread(S_star, n, W)
    null_mean = float(q_star.mean())
    return Heterogeneity(q, null_mean, q / null_mean, float((1 + (q_star >= q).sum()) / (draws + 1)), draws)


# -- prior sensitivity (power-scaling) ---------------------------------------------------------


class PriorSensitivityWarning(UserWarning):
    """Some coefficient's interval depends on the prior of ``Sigma_x``: the release does not pin the
    features' covariance in some direction (often nearly collinear features), and there the
    intervals are the prior's, not the data's."""


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
    import arviz as az

    s = az.psens(idata, component=component, component_var_names=component_var_names, var_names=["theta"], delta=delta)
    return np.asarray(getattr(s, "theta", s), dtype=np.float64)


def _noise_level(idata: Any, name: str, delta: float, permutations: int, rng: np.random.Generator) -> float:
    """The ``1 - 1/(permutations + 1)`` point of the largest sensitivity over coefficients when the
    factor's log density is shuffled across draws (so it cannot depend on ``theta``): the level
    that Monte Carlo noise alone reaches. The estimate's noise grows with the spread of the log
    density over the draws (an inverse-Wishart over many entries varies by tens of nats)."""
    import arviz as az

    lp = idata.log_prior[name]
    flat = lp.values.reshape(-1)
    peaks = []
    for _ in range(permutations):
        shuffled = lp.copy(data=rng.permutation(flat).reshape(lp.shape))
        null = az.InferenceData(posterior=idata.posterior[["theta"]], log_prior=shuffled.to_dataset(name=name))
        peaks.append(float(np.max(_psens(null, "prior", name, delta))))
    return max(peaks)


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


def _sigma_x_cutoff(attrs: Any) -> float:
    return max(PRIOR_SENSITIVITY_MAX, float(attrs.get("prior_sensitivity_Sigma_x_noise", 0.0)))


def sigma_x_sensitive(attrs: Any) -> bool:
    """Whether a fit's recorded ``Sigma_x`` sensitivity reaches 0.05 and its noise level."""
    return "prior_sensitivity_Sigma_x" in attrs and float(attrs["prior_sensitivity_Sigma_x"]) >= _sigma_x_cutoff(attrs)


def prior_sensitivity_summary(attrs: Any) -> str | None:
    """One line on ``Sigma_x``'s prior sensitivity for reports (``None`` when the fit did not record it)."""
    if "prior_sensitivity_Sigma_x" not in attrs:
        return None
    s, cut = float(attrs["prior_sensitivity_Sigma_x"]), _sigma_x_cutoff(attrs)
    measured = f"largest power-scaling sensitivity {s:.3f}, counted from {cut:.3f} (0.05 or Monte Carlo noise)"
    if not sigma_x_sensitive(attrs):
        return f"Prior of Sigma_x: the intervals do not depend on it ({measured})."
    return (
        f"Prior of Sigma_x: the intervals depend on it ({measured}): the release does not pin the features' "
        "covariance in some direction, and there the intervals are the prior's (see the release resolution)."
    )
