"""NumPyro models of Alparslan et al. (2023): the single source of the log-density.

:func:`normalx_model` is the hierarchical model with ``z`` integrated out (eq. 10):

.. math::
    \\theta \\sim N(m, C),\\quad \\sigma_y^2 \\sim IG(a, b),\\quad \\Sigma_x \\sim IW(\\Lambda, \\kappa)
    \\ \\text{or}\\ \\mathrm{ScaledLKJ},\\\\
    S_j \\mid \\Sigma_x \\sim W(\\Sigma_x, n_j),\\quad
    \\tilde S_{j,kl} \\mid S_j \\sim N(S_{j,kl}, \\sigma_{S,j}^2)\\ (k \\le l),\\\\
    \\tilde z_j \\mid S_j, \\theta, \\sigma_y^2 \\sim N(S_j\\theta, \\sigma_y^2 S_j + \\sigma_{z,j}^2 I).

:func:`fixeds_model` fixes ``S_j`` at ``nearestPSD(S~_j)`` (Sec. 4.2) and keeps
the ``theta``, ``sigma_y^2`` and ``z~`` sites.

The per-party conditional distributions are built in one place,
:func:`party_dists`; the models sample from them and the Metropolis-Hastings
kernels (:mod:`bayes_dpreg.samplers.normalx`, :mod:`bayes_dpreg.samplers.fixeds`) evaluate their ``log_prob``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import Array
from numpyro.infer.util import log_density

from ..stats import StackedStats
from .closed_form import EigenParties, eigen_parties
from .linalg import nearest_psd, spd_inverse
from .prior import ResolvedPrior, theta_feature_scale

# NumPyro validates a distribution's arguments when it is built (on by default). The densities
# below are built inside traced code, where the checks see tracers and decide nothing, yet are
# traced all the same: 0.7 s and 27 small compiled programs of a cold fit. The inputs are checked
# where they enter (Prior.resolve, the release checks), so these factors skip NumPyro's.
_NO_CHECK = {"validate_args": False}

__all__ = [
    "ModelData",
    "model_data",
    "upper",
    "party_dists",
    "S_prior_dist",
    "fixeds_data",
    "prior_dist",
    "prior_dists",
    "TruncatedInverseGamma",
    "sigma2_of",
    "sigma2_coordinate",
    "sigma2_start",
    "sigma_x_conditional",
    "log_marginal_S",
    "normalx_model",
    "fixeds_model",
    "log_joint",
    "log_target_S",
    "log_local_S",
    "S_tilde_dist",
    "z_dist",
    "z_dist_eigen",
    "log_lik_z",
    "intercept_design",
    "normalx_intercept_model",
]


class ModelData(NamedTuple):
    """Released statistics as the models and kernels consume them (a pytree)."""

    S_tilde: Array  # (J, d, d) noisy S~_j (for fixedS: the fixed nearestPSD(S~_j))
    z_tilde: Array  # (J, d)
    n: Array  # (J,) rows per party (float)
    sigma_S: Array  # (J,)
    sigma_z: Array  # (J,)
    y_bound: Array  # () largest declared |y| bound, for initialisation
    eig: EigenParties | None = None  # fixedS only: the fixed S_j's eigendecompositions (fixeds_data)
    u_tilde: Array | None = None  # (J,) noisy y_j^T y_j where every party released it (release_bs), else None
    sigma_u: Array | None = None  # (J,) its noise sd


def model_data(st: StackedStats) -> ModelData:
    """The release as float64 device arrays (``device_put`` of NumPy arrays: ``jnp.asarray`` would
    run a program of its own for each); ``y_bound`` a weakly typed scalar, as ``jnp.asarray`` makes it.
    ``u_tilde``, ``sigma_u``: the parties' noisy ``y^T y`` where every party released one."""
    put = lambda a: jax.device_put(np.asarray(a, np.float64))
    y_bound = jax.device_put(float(st.y_bound.max()))
    yty = {} if st.u is None or st.sigma_u is None else {"u_tilde": put(st.u), "sigma_u": put(st.sigma_u)}
    return ModelData(put(st.S), put(st.z), put(st.n), put(st.sigma_S), put(st.sigma_z), y_bound, **yty)


def released_yty(data: ModelData) -> tuple[Array, Array] | None:
    """``(u~, sigma_u)``: the parties' noisy ``y_j^T y_j`` and its noise sd, or ``None`` where not released."""
    if data.u_tilde is None or data.sigma_u is None:
        return None
    return data.u_tilde, data.sigma_u


def upper(S: Array) -> Array:
    """Upper triangle with the diagonal, row-major: ``(..., d, d) -> (..., d(d+1)/2)``."""
    iu = np.triu_indices(S.shape[-1])
    return S[..., iu[0], iu[1]]


PRIOR_SITES = ("theta", "sigma2", "Sigma_x")


class ScaledLKJ(dist.Distribution):
    r"""The separation-strategy prior of ``Sigma_x`` (Barnard, McCulloch & Meng 2000):
    ``Sigma_x = D R D`` with ``D = diag(s)``, ``log s_k ~ N(log Lambda_kk / 2, scale_sd^2)``
    independently and the correlation matrix ``R ~ LKJ(eta)`` (Lewandowski, Kurowicka & Joe 2009).

    Unlike ``IW(Lambda, d + 1)``, whose variance along a direction ``u`` is
    ``u^T Lambda u / chi2_2`` (a direction 100 times smaller than the features' own variance has
    prior probability about ``e^{-50}``), the scales and the correlations are independent, and
    ``LKJ(1)`` is uniform over correlation matrices: nearly collinear features keep polynomial
    prior mass (about ``t^eta`` for a direction of relative variance ``t``; ``eta = 2`` has density
    proportional to ``det R``, zero at singular ``R``; the default is ``eta = 1``, ``docs/prior.md``).
    The density, with the Jacobian ``|d Sigma / d(s, R)| = 2^d prod_k s_k^d``:

    .. math::
        \log p(\Sigma) = \sum_k [\log N(\log s_k; \mu_k, \tau^2) - (d + 1) \log s_k]
        + \log \mathrm{LKJ}(R; \eta) - d \log 2,\qquad s_k = \Sigma_{kk}^{1/2}.
    """

    arg_constraints: dict[str, Any] = {}
    support = dist.constraints.positive_definite
    pytree_data_fields = ("loc", "eta", "scale_sd")

    def __init__(self, Lambda: Array, eta: Array | float = 1.0, scale_sd: Array | float = 1.0) -> None:
        self.loc = 0.5 * jnp.log(jnp.diagonal(jnp.asarray(Lambda), axis1=-2, axis2=-1))
        self.eta, self.scale_sd = jnp.asarray(eta), jnp.asarray(scale_sd)
        d = self.loc.shape[-1]
        super().__init__(batch_shape=self.loc.shape[:-1], event_shape=(d, d), validate_args=False)

    def _lkj(self) -> dist.LKJ | None:
        d = self.event_shape[-1]
        return dist.LKJ(d, self.eta, validate_args=False) if d > 1 else None

    def sample(self, key: Array, sample_shape: tuple[int, ...] = ()) -> Array:
        k_s, k_r = jax.random.split(key)
        shape = sample_shape + self.batch_shape
        s = jnp.exp(self.loc + self.scale_sd * jax.random.normal(k_s, shape + self.loc.shape[-1:], self.loc.dtype))
        lkj = self._lkj()
        R = jnp.ones(shape + (1, 1), self.loc.dtype) if lkj is None else lkj.sample(k_r, shape)
        return s[..., :, None] * R * s[..., None, :]

    def log_prob(self, value: Array) -> Array:
        log_s = 0.5 * jnp.log(jnp.diagonal(value, axis1=-2, axis2=-1))
        out = self._scales_log_prob(log_s)
        lkj = self._lkj()
        if lkj is not None:
            s = jnp.exp(log_s)
            out = out + lkj.log_prob(value / (s[..., :, None] * s[..., None, :]))
        return out

    def log_prob_sqrt(self, F: Array, log_det: Array) -> Array:
        r"""``log_prob(F F^T)`` from any square root ``F`` of ``Sigma`` and ``log det Sigma``,
        with no factorisation of ``R``: ``s_k^2 = sum_i F_ki^2`` and, as ``LKJ(R; eta) = c_eta
        det(R)^{eta - 1}`` (the density of ``LKJCholesky`` over its Jacobian ``prod_i
        L_ii^{d - i}``), ``log LKJ(R) = (eta - 1) (log det Sigma - 2 sum_k log s_k) + log c_eta``.
        The samplers' gradient evaluates it (one Cholesky and its derivative fewer)."""
        log_s = 0.5 * jnp.log((F**2).sum(-1))
        out = self._scales_log_prob(log_s)
        d = self.event_shape[-1]
        if d > 1:
            log_c = dist.LKJCholesky(d, self.eta, validate_args=False).log_prob(jnp.eye(d, dtype=F.dtype))
            out = out + (self.eta - 1.0) * (log_det - 2.0 * log_s.sum(-1)) + log_c
        return out

    def _scales_log_prob(self, log_s: Array) -> Array:
        """The scales' log-normal factor with the Jacobian of ``(s, R) -> Sigma``."""
        d = self.event_shape[-1]
        log_scales = dist.Normal(self.loc, self.scale_sd, validate_args=False).log_prob(log_s)
        return (log_scales - (d + 1.0) * log_s).sum(-1) - d * jnp.log(2.0)


class TruncatedInverseGamma(dist.Distribution):
    r"""``IG(a, b)`` (shape ``a``, scale ``b``) restricted to ``(0, high]``: the prior of
    ``sigma_y^2`` under the bound ``sigma_y^2 <= sigma2_max`` (:class:`~bayes_dpreg.model.prior.Prior`).

    .. math::
        \log p(s) = \log \mathrm{IG}(s; a, b) - \log Q(a, b / h),\qquad 0 < s \le h,

    with ``Q`` the regularised upper incomplete gamma function (``P(s <= h)`` under ``IG(a, b)``).
    Draws invert the CDF of ``1 / s ~ Gamma(a, b)`` truncated to ``[1/h, inf)``: ``b / s`` solves
    ``Q(a, x) = (1 - u) Q(a, b / h)``, ``u ~ U(0, 1)``, by bisection in ``log x`` (JAX has no inverse
    incomplete gamma function; NumPyro's needs TensorFlow Probability)."""

    arg_constraints: dict[str, Any] = {}
    pytree_data_fields = ("a", "b", "high")

    def __init__(self, a: Array | float, b: Array | float, high: Array | float) -> None:
        self.a, self.b, self.high = jnp.asarray(a), jnp.asarray(b), jnp.asarray(high)
        super().__init__(batch_shape=jnp.shape(self.high), validate_args=False)

    @dist.constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return dist.constraints.interval(0.0, self.high)

    def log_prob(self, value: Array) -> Array:
        inside = dist.InverseGamma(self.a, self.b, validate_args=False).log_prob(value)
        inside = inside - jnp.log(jax.scipy.special.gammaincc(self.a, self.b / self.high))
        return jnp.where(value <= self.high, inside, -jnp.inf)

    def sample(self, key: Array, sample_shape: tuple[int, ...] = ()) -> Array:
        u = jax.random.uniform(key, sample_shape + self.batch_shape, jnp.result_type(float))
        x_lo = jnp.broadcast_to(self.b / self.high, u.shape)
        target = (1.0 - u) * jax.scipy.special.gammaincc(self.a, x_lo)
        lo, hi = jnp.log(x_lo), jnp.log(x_lo + self.a + 800.0)  # Q(a, a + 800) < 1e-300

        def halve(_: int, bracket: tuple[Array, Array]) -> tuple[Array, Array]:
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            above = jax.scipy.special.gammaincc(self.a, jnp.exp(mid)) > target
            return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

        lo, hi = jax.lax.fori_loop(0, 120, halve, (lo, hi))
        return self.b / jnp.exp(0.5 * (lo + hi))


def sigma2_of(u: Array, pr: ResolvedPrior) -> tuple[Array, Array]:
    r"""``(sigma_y^2, log |d sigma_y^2 / d u|)`` from the NUTS samplers' coordinate ``u``:
    ``sigma_y^2 = e^u`` without a bound; under ``sigma_y^2 <= h`` (``pr.sigma2_max``)
    ``sigma_y^2 = h \, \mathrm{sigmoid}(u)``, i.e. ``u = \mathrm{logit}(sigma_y^2 / h)``, which is
    ``log(sigma_y^2 / h)`` well below the bound (the same geometry up to a shift) and has no wall
    at it (a density cut to zero there made every fit whose posterior reaches it diverge)."""
    if pr.sigma2_max is None:
        return jnp.exp(u), u
    log_s2 = jnp.log(pr.sigma2_max) + jax.nn.log_sigmoid(u)
    return jnp.exp(log_s2), log_s2 + jax.nn.log_sigmoid(-u)


def sigma2_coordinate(sigma2: Array, pr: ResolvedPrior) -> Array:
    """The inverse of :func:`sigma2_of`: ``log sigma_y^2``, or ``logit(sigma_y^2 / h)`` under a bound."""
    if pr.sigma2_max is None:
        return jnp.log(sigma2)
    return jnp.log(sigma2) - jnp.log(pr.sigma2_max - sigma2)


def sigma2_start(sigma2: Array, pr: ResolvedPrior) -> Array:
    """:func:`sigma2_coordinate` of a starting value, kept at most half the bound ``sigma2_max``
    (a start at or above it has no coordinate)."""
    if pr.sigma2_max is not None:
        sigma2 = jnp.minimum(sigma2, 0.5 * pr.sigma2_max)
    return sigma2_coordinate(sigma2, pr)


def prior_dist(pr: ResolvedPrior, name: str) -> dist.Distribution:
    """The prior of one of ``theta``, ``sigma2``, ``Sigma_x`` (eq. 4 and Fig. 1): ``N(m, C)``,
    ``IG(a, b)`` (on ``(0, sigma2_max]`` where the prior bounds ``sigma_y^2``:
    :class:`TruncatedInverseGamma`), ``IW(Lambda, kappa)`` or :class:`ScaledLKJ`. Densities that
    need one factor build only that one (building the inverse-Wishart added about 25 small
    programs to a cold fit's compilation)."""
    if name == "theta":
        return dist.MultivariateNormal(jnp.asarray(pr.m), covariance_matrix=jnp.asarray(pr.C), **_NO_CHECK)
    if name == "sigma2":
        if pr.sigma2_max is not None:
            return TruncatedInverseGamma(pr.a, pr.b, pr.sigma2_max)
        return dist.InverseGamma(pr.a, pr.b, **_NO_CHECK)
    if name == "Sigma_x":
        if pr.eta is not None:
            return ScaledLKJ(jnp.asarray(pr.Lambda), pr.eta, 1.0 if pr.scale_sd is None else pr.scale_sd)
        return dist.InverseWishart(pr.kappa, scale_matrix=jnp.asarray(pr.Lambda), **_NO_CHECK)
    raise KeyError(f"no prior factor {name!r}; the factors are {PRIOR_SITES}")


def sigma_x_diagonal_draws(pr: ResolvedPrior, rng: np.random.Generator, num: int) -> np.ndarray:
    """``(num, d)`` draws of ``Sigma_x``'s diagonal from its prior, by NumPy (no program to compile):
    under the separation prior ``Sigma_x,kk = D_kk^2`` (``R_kk = 1``), ``log D_kk ~ N(log Lambda_kk / 2,
    scale_sd^2)``; under ``IW(Lambda, kappa)`` the marginal ``Sigma_x,kk ~ IG((kappa - d + 1) / 2,
    Lambda_kk / 2)``."""
    lam = np.diag(np.asarray(pr.Lambda, dtype=np.float64))
    if pr.eta is not None:
        sd = 1.0 if pr.scale_sd is None else float(pr.scale_sd)
        return lam * np.exp(2.0 * sd * rng.standard_normal((num, lam.size)))
    return 0.5 * lam / rng.gamma(0.5 * (float(pr.kappa) - lam.size + 1.0), 1.0, (num, lam.size))


def theta_precision(pr: ResolvedPrior, Sigma_x: Array | None = None) -> Array:
    """``theta``'s prior precision: ``C^{-1}``, or ``D C^{-1} D`` at ``Sigma_x``
    (:func:`theta_feature_scale`)."""
    C_inv = spd_inverse(jnp.asarray(pr.C))
    s = theta_feature_scale(pr, None if Sigma_x is None else jnp.diagonal(Sigma_x, axis1=-2, axis2=-1))
    return C_inv if s is None else s[..., :, None] * C_inv * s[..., None, :]


def theta_prior(pr: ResolvedPrior, Sigma_x: Array | None = None) -> dist.MultivariateNormal:
    """``theta``'s prior: ``N(m, C)`` (:func:`prior_dist`), or ``N(m, D^-1 C D^-1)`` given ``Sigma_x``
    (batched) where the prior scales ``theta`` by the features (:func:`theta_feature_scale`)."""
    if pr.theta_ms is None:
        return prior_dist(pr, "theta")
    return dist.MultivariateNormal(jnp.asarray(pr.m), precision_matrix=theta_precision(pr, Sigma_x), **_NO_CHECK)


def prior_dists(pr: ResolvedPrior) -> dict[str, dist.Distribution]:
    """Priors of ``theta``, ``sigma2`` and ``Sigma_x`` (:func:`prior_dist`)."""
    return {name: prior_dist(pr, name) for name in PRIOR_SITES}


def sigma_x_conditional(S_sum: Array, n_total: Array, pr: ResolvedPrior) -> dist.InverseWishart:
    """``Sigma_x | S_{1:J} ~ IW(Lambda + sum_j S_j, kappa + sum_j n_j)`` (eq. 11): the conjugate
    update of :func:`prior_dists`' inverse-Wishart by the parties' Wishart ``S_j``."""
    if pr.eta is not None:
        raise ValueError(
            "this computation uses the inverse-Wishart's conjugate update of Sigma_x: give the prior "
            "Sigma_x_prior='iw' (the separation prior 'lkj' has no conjugate update)"
        )
    return dist.InverseWishart(pr.kappa + n_total, scale_matrix=jnp.asarray(pr.Lambda) + S_sum, **_NO_CHECK)


def log_marginal_S(S: Array, data: ModelData, pr: ResolvedPrior) -> Array:
    """``log p(S_{1:J})`` with ``Sigma_x`` integrated out, by the conjugate identity
    ``p(S) = p(S | Sigma) p(Sigma) / p(Sigma | S)`` (exact at any ``Sigma``; evaluated at the
    conditional's mode, where the three terms are best conditioned)."""
    post = sigma_x_conditional(S.sum(0), data.n.sum(), pr)
    d = S.shape[-1]
    Sigma = post.scale_matrix / (post.concentration + d + 1.0)
    return (
        S_prior_dist(Sigma, data).log_prob(S).sum() + prior_dist(pr, "Sigma_x").log_prob(Sigma) - post.log_prob(Sigma)
    )


def z_dist(S: Array, theta: Array, sigma2: Array, sigma_z: Array) -> dist.MultivariateNormal:
    """``z~_j | S_j, theta, sigma_y^2 ~ N(S_j theta, sigma_y^2 S_j + sigma_z^2 I)`` (eq. 10)."""
    d = S.shape[-1]
    cov = sigma2 * S + (sigma_z**2)[..., None, None] * jnp.eye(d, dtype=S.dtype)
    return dist.MultivariateNormal(S @ theta, covariance_matrix=cov, **_NO_CHECK)


def z_dist_eigen(lam: Array, U: Array, theta: Array, sigma2: Array, sigma_z: Array) -> dist.Independent:
    """:func:`z_dist` in the eigenbasis of ``S_j = U_j diag(lam_j) U_j^T``: the law of ``U_j^T z~_j``,
    ``N(lam_j o U_j^T theta, diag(sigma_y^2 lam_j + sigma_z,j^2))``, whose density at ``U_j^T z~_j`` is
    :func:`z_dist`'s at ``z~_j`` (``U_j`` is orthogonal). Where one ``S_j`` serves many draws of
    ``(theta, sigma_y^2)`` its eigendecomposition is computed once and a draw costs ``O(d^2)`` a party,
    not a ``d x d`` Cholesky factor. ``lam``, ``U``: ``(J, d)``, ``(J, d, d)``; ``sigma_z``: ``(J,)``."""
    mean = lam * jnp.einsum("...kl,k->...l", U, theta)
    sd = jnp.sqrt(sigma2 * lam + (sigma_z**2)[..., None])
    return dist.Normal(mean, sd, **_NO_CHECK).to_event(1)


def S_prior_dist(Sigma_x: Array, data: ModelData) -> dist.Wishart:
    """``S_j | Sigma_x ~ W(Sigma_x, n_j)``, batched over parties."""
    return dist.Wishart(data.n, scale_matrix=Sigma_x, **_NO_CHECK)


def party_dists(S: Array, theta: Array, sigma2: Array, data: ModelData) -> dict[str, dist.Distribution]:
    """The observation factors of eq. (10) given ``S_j``, batched over the party axis.

    ``"S_tilde"``: the noisy upper triangle; ``"z_tilde"``: ``z~_j`` given
    ``S_j, theta, sigma_y^2``.
    """
    return {"S_tilde": S_tilde_dist(S, data), "z_tilde": z_dist(S, theta, sigma2, data.sigma_z)}


def S_tilde_dist(S: Array, data: ModelData) -> dist.Distribution:
    """The noisy upper triangle ``S~_{j,kl} ~ N(S_{j,kl}, sigma_{S,j}^2)``, ``k <= l`` (eq. 8)."""
    return dist.Normal(upper(S), data.sigma_S[:, None], **_NO_CHECK).to_event(1)


def log_local_S(S: Array, Sigma_x: Array, data: ModelData) -> Array:
    """``log p(S_j | Sigma_x) + log p(S~_j | S_j)`` per party (J,): the factors of eq. (10)
    that involve ``S_j`` but not ``theta`` or ``sigma_y^2``."""
    return S_prior_dist(Sigma_x, data).log_prob(S) + S_tilde_dist(S, data).log_prob(upper(data.S_tilde))


def log_target_S(S: Array, theta: Array, sigma2: Array, Sigma_x: Array, data: ModelData) -> Array:
    """``log p(S_j | Sigma_x) + log p(S~_j | S_j) + log p(z~_j | S_j, theta, sigma2)`` per party (J,):
    the unnormalised full conditional of each ``S_j``."""
    return log_local_S(S, Sigma_x, data) + z_dist(S, theta, sigma2, data.sigma_z).log_prob(data.z_tilde)


def log_lik_z(S: Array, theta: Array, sigma2: Array, data: ModelData) -> Array:
    """``sum_j log p(z~_j | S_j, theta, sigma_y^2)``: the part of eq. (10) that involves ``sigma_y^2``."""
    return z_dist(S, theta, sigma2, data.sigma_z).log_prob(data.z_tilde).sum(-1)


def normalx_model(data: ModelData, prior: ResolvedPrior, observe: bool = True) -> None:
    """The model for MCMC-normalX (Algorithm 1). With ``observe=False`` the
    ``S_tilde`` and ``z_tilde`` sites are sampled (prior predictive)."""
    pd = prior_dists(prior)
    theta = numpyro.sample("theta", pd["theta"])
    sigma2 = numpyro.sample("sigma2", pd["sigma2"])
    Sigma_x = numpyro.sample("Sigma_x", pd["Sigma_x"])
    J = data.n.shape[0]
    with numpyro.plate("party", J):
        S = numpyro.sample("S", S_prior_dist(Sigma_x, data))
        dd = party_dists(S, theta, sigma2, data)
        numpyro.sample("S_tilde", dd["S_tilde"], obs=upper(data.S_tilde) if observe else None)
        numpyro.sample("z_tilde", dd["z_tilde"], obs=data.z_tilde if observe else None)


def fixeds_model(data: ModelData, prior: ResolvedPrior, observe: bool = True) -> None:
    """The model for MCMC-fixedS (Algorithm 2): ``S_j`` given as ``data.S_tilde``."""
    pd = prior_dists(prior)
    theta = numpyro.sample("theta", pd["theta"])
    sigma2 = numpyro.sample("sigma2", pd["sigma2"])
    with numpyro.plate("party", data.n.shape[0]):
        numpyro.sample(
            "z_tilde", z_dist(data.S_tilde, theta, sigma2, data.sigma_z), obs=data.z_tilde if observe else None
        )


@jax.jit  # one program, where run op by op it was three
def fixeds_data(data: ModelData) -> ModelData:
    """Replace ``S~_j`` by the fixed estimate ``nearestPSD(S~_j)`` (Higham; Sec. 4.2), with its
    eigendecompositions for MCMC-fixedS's kernel."""
    S = nearest_psd(data.S_tilde)
    return data._replace(S_tilde=S, eig=eigen_parties(S, data.z_tilde))


def intercept_design(b: Array, Sx: Array, n: Array) -> Array:
    """App. B.2: the Gram matrix of ``[1, x_i]`` from the row mean ``b_j`` and the centred
    scatter ``Sx_j = (n_j - 1) Sigma^_j``: ``[[n, n b^T], [n b, Sx + n b b^T]]`` (batched over parties)."""
    nn = n[:, None]
    nb = nn * b
    top = jnp.concatenate([nn, nb], -1)[:, None, :]
    bottom = jnp.concatenate([nb[..., None], Sx + nn[..., None] * b[:, :, None] * b[:, None, :]], -1)
    return jnp.concatenate([top, bottom], -2)


def normalx_intercept_model(data: ModelData, prior: ResolvedPrior, observe: bool = True) -> None:
    """MCMC-normalX with an intercept and non-centred normal features (App. B.2).

    ``x_i ~ N(mu_x, Sigma_x)``: per party the row mean ``b_j ~ N(mu_x, Sigma_x/n_j)`` and the
    centred scatter ``Sx_j ~ W(Sigma_x, n_j - 1)`` are independent, ``S0_j`` =
    :func:`intercept_design` replaces ``S_j`` in eq. (10), and ``theta`` (first entry the
    intercept) has ``d + 1`` entries. ``prior`` comes from :meth:`Prior.resolve_intercept`;
    ``mu_x ~ N(prior.mu_x, prior.mu_x_cov)``. ``data`` holds the released statistics of
    ``[1, x_i]`` (``bayes_dpreg.release(..., intercept=True)``)."""
    pd = prior_dists(prior)
    theta = numpyro.sample("theta", pd["theta"])
    sigma2 = numpyro.sample("sigma2", pd["sigma2"])
    Sigma_x = numpyro.sample("Sigma_x", pd["Sigma_x"])
    mu_x = numpyro.sample("mu_x", dist.MultivariateNormal(jnp.asarray(prior.mu_x), jnp.asarray(prior.mu_x_cov)))
    J = data.n.shape[0]
    with numpyro.plate("party", J):
        b = numpyro.sample("b", dist.MultivariateNormal(mu_x, Sigma_x / data.n[:, None, None]))
        Sx = numpyro.sample("Sx", dist.Wishart(data.n - 1.0, scale_matrix=Sigma_x))
        S = intercept_design(b, Sx, data.n)
        dd = party_dists(S, theta, sigma2, data)
        numpyro.sample("S_tilde", dd["S_tilde"], obs=upper(data.S_tilde) if observe else None)
        numpyro.sample("z_tilde", dd["z_tilde"], obs=data.z_tilde if observe else None)


@functools.partial(jax.jit, static_argnums=0)
def _log_joint(model: Callable, data: ModelData, prior: ResolvedPrior, samples: dict[str, Array]) -> Array:
    return jax.vmap(lambda s: log_density(model, (data, prior), {}, s)[0])(samples)


def log_joint(model: Callable, data: ModelData, prior: ResolvedPrior, samples: dict[str, Any]) -> np.ndarray:
    """ArviZ's ``lp``: the model's log joint density (all sites, observed included) at each draw
    of ``samples`` (``{site: (chain, draw, ...)}``, the model's latent sites)."""
    lead = next(iter(samples.values())).shape[:2]
    flat = {k: np.asarray(v).reshape((-1,) + tuple(np.shape(v)[2:])) for k, v in samples.items()}
    return np.asarray(_log_joint(model, data, prior, flat)).reshape(lead)
