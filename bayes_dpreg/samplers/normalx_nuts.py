r"""``normalx-nuts``: the model of MCMC-normalX (eq. 10) sampled by NUTS, non-centred, theta integrated out.

The model is exactly :func:`bayes_dpreg.model.densities.normalx_model`; only the sampler
differs from Algorithm 1. Three changes of variables make its posterior easy for
the No-U-Turn sampler (NumPyro's implementation, :func:`numpyro.infer.hmc.hmc`):

* **theta integrated out.** ``z~_j | S_j, theta, sigma_y^2`` is Gaussian and linear in
  ``theta ~ N(m, C)``, so NUTS targets
  ``p(Sigma_x, S_{1:J}, sigma_y^2 | S~, z~)`` with the collapsed likelihood
  (:func:`~bayes_dpreg.model.closed_form.collapsed_log_lik`), and every kept draw gets
  ``theta`` from its exact Gaussian conditional (eq. 12). The ridge along which
  ``S_j`` and ``theta`` trade off (``z~_j ~ S_j theta``) never enters the dynamics.
* **Non-centred Wishart.** ``S_j = L W_j L^T`` with ``Sigma_x = L L^T`` and
  ``W_j ~ W(I, n_j)`` a priori (Bartlett: ``W_j = R_j R_j^T``, ``R_j`` lower
  triangular). With ``n_j`` large, ``S_j | Sigma_x`` is tight (relative width
  ``n_j^{-1/2}``) while the level ``Sigma_x`` is fixed only by the noisy ``S~_j``; in
  the centred coordinates every Gibbs or Hamiltonian move of ``Sigma_x`` must drag
  all ``S_j`` along (the slow mixing Algorithm 1 shows). In ``(L, W_j)`` the prior of
  ``W_j`` does not depend on ``Sigma_x``.
* **Whitened coordinates.** ``v``: the log-Cholesky vector of ``Sigma_x`` (diagonal on
  the log scale), centred at the pooled estimate from the released ``S~_j`` and scaled
  by the expected posterior width ``sqrt(1/n + (noise/level)^2)``;
  ``c_j``: ``R_j = sqrt(n_j) (exp(c_ii / sqrt(2 n_j)) on the diagonal, c_ik / sqrt(n_j) below)``,
  about standard normal under the prior, partially centred by how precisely the
  release pins each entry (:func:`unpack`); ``log sigma_y^2``. The mass matrix
  (``dense_mass="auto"``) is dense up to 32 coordinates; beyond, dense on
  ``(v, log sigma_y^2)`` when ``d <= 7`` (an ill-conditioned ``Sigma_x`` correlates
  them: 24 leapfrog steps per iteration instead of 63 on the paper's simulation,
  d = 5, J = 5) and diagonal elsewhere. NumPyro's dense transitions cost several times
  more per step (8x at 61 coordinates for the same tree sizes), and a dense block of
  100 or more coordinates is not learnt in the default warm-up. ``"full"`` helps when
  the release is nearly exact (``epsilon`` in the thousands), where curvature leaves
  correlations the partial centring does not remove.

The density NUTS sees is the model's log-density (``prior_dist``, ``S_prior_dist``,
``S_tilde_dist`` from :mod:`bayes_dpreg.model.densities`; the collapsed ``z~`` likelihood from
:mod:`bayes_dpreg.model.closed_form`) plus the log-Jacobian of ``(v, c, log sigma_y^2) ->
(Sigma_x, S, sigma_y^2)``, simplified in closed form in :func:`log_density`:

.. math::
    \sum_i (d - i + 1) \log L_{ii} + J (d + 1) \log|L|
    + \sum_j \sum_i (d - i + 1) \log R_{j,ii} + \log \sigma_y^2 \quad (i = 0..d-1),

from ``Sigma = L L^T`` (``2^d prod L_ii^{d-i}``, times ``L_ii`` for the log-diagonal),
``S_j = L W_j L^T`` (``|L|^{d+1}``) and ``W_j = R_j R_j^T`` (likewise); constants dropped.
It is tested equal to the model's density plus a numerically computed log-Jacobian.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from numpyro.infer.hmc import hmc

from ..model.closed_form import collapsed_log_lik, party_terms, theta_conditional
from ..model.densities import (
    ModelData,
    S_tilde_dist,
    model_data,
    prior_dist,
    sigma2_coordinate,
    sigma2_of,
    sigma2_start,
    theta_precision,
    upper,
)
from ..model.linalg import from_log_cholesky, log_cholesky, nearest_psd, pooled_covariance, symmetrize
from ..model.prior import ResolvedPrior
from ..runtime.keys import fold_in
from ..stats import StackedStats
from .base import RUN_OPTIONS, ChainKernel, MethodResult, Sampler, positive_int, run_chains
from .convergence import needs_more_draws
from .sizes import clt_min_rows

__all__ = [
    "NutsSettings",
    "Reference",
    "NCState",
    "log_density",
    "unpack",
    "init",
    "step",
    "draws",
    "info",
    "KERNEL",
    "SAMPLER",
    "to_unconstrained",
    "sigma_x_of",
    "sigma_x_log_density",
    "settings",
    "run_nuts",
]


class NutsSettings(NamedTuple):
    """Static NUTS settings (part of the compilation key)."""

    num_warmup: int = 500
    target_accept_prob: float = 0.9
    max_tree_depth: int = 10
    dense_mass: str = "auto"  # "full", "level" (dense on v and log sigma2), "diagonal"; "auto": see _dense_mass


NUTS_OPTIONS = NutsSettings._fields[1:] + RUN_OPTIONS + ("extend", "retry")  # what fit passes to run_nuts


class Reference(NamedTuple):
    """Data-based constants of the coordinates (a fixed affine map: no Jacobian)."""

    v0: Array  # (p,) log-Cholesky vector of the pooled estimate of Sigma_x, in the frame Q
    v_scale: Array  # () expected posterior width of v
    F0: Array  # (J, d, d) Cholesky factors of the data's estimate of each S_j, in the frame Q
    omega: Array  # (J, p) how far each coordinate of c_j is centred (0: non-centred, 1: centred)
    Q: Array  # (d, d) orthogonal: the frame (eigenvectors of the pooled estimate, largest first)


class NCState(NamedTuple):
    """A chain's state: NumPyro's ``HMCState`` (``z`` holds the coordinates: ``v``, ``c``, ``ls2``
    here, also ``u`` and ``e`` for ``normalx-intercept``) and the data's reference point."""

    hmc: Any
    ref: Any  # Reference, or intercept.IReference


def _tril_indices(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, cols = np.tril_indices(d)
    return rows, cols, np.flatnonzero(rows == cols)


def reference(data: ModelData, rotate: bool = True) -> Reference:
    """Centre ``v`` at the pooled ``Sigma_x`` estimate; scale it by ``sqrt(1/n + r^2)``, ``r`` the
    release noise of the pooled scatter relative to its mean diagonal. The frame ``Q`` (``rotate``):
    the eigenvectors of the pooled estimate, largest eigenvalue first, so that the Cholesky factor
    of ``Q^T Sigma_x Q`` is nearly diagonal, its coordinates nearly independent, and a direction
    the release cannot resolve is one coordinate (the last ones) rather than a combination of
    many. ``Sigma_x -> Q^T Sigma_x Q`` preserves volume, so the frame changes the geometry, not
    the density. For the partial
    centring of the ``c_j`` (:func:`unpack`): ``S0_j = nearestPSD(S~_j) + 2 sqrt(d) sigma_S,j I``
    (within the noise of ``S_j``, positive definite) and
    ``omega_j,ik = 1 / (1 + rho_j,ik)``, ``rho`` the release-noise variance of the whitened entry
    ``(L^-1 S_j L^-T)_ik`` over its Wishart variance ``n_j (1 + [i = k])``, on the diagonal; below it
    the same where the release pins both the entry and its row's diagonal entry ``ii`` at least as
    tightly as the Wishart spreads them (``rho <= 1``, :data:`OFF_DIAGONAL_CENTRING_MIN`), and 0
    (non-centred) elsewhere. The centring term of an entry below the diagonal is ``(L^-1 F0_j)_ik``,
    which grows as ``1 / L_ii``: where the release leaves ``Sigma_x`` free to approach a singular
    matrix (the default separation prior's correlations are uniform, LKJ(1), up to +-1; the inverse
    Wishart's density vanishes there), a small ``omega`` buys little centring and shears the
    coordinates ever more steeply, and NUTS diverges (with small parties under the default prior, in
    most fits: ``docs/samplers.md``, *Small parties under the default prior*). The diagonal's term is a
    logarithm, linear in ``log L_ii``, and keeps its partial centring."""
    J, d = data.z_tilde.shape
    n = data.n.sum()
    Sx0 = pooled_covariance(data.S_tilde.sum(0), n, jnp.max(data.sigma_S))
    noise = jnp.sqrt((data.sigma_S**2).sum()) / (n * jnp.trace(Sx0) / d)
    eye = jnp.eye(d, dtype=Sx0.dtype)
    Q = jnp.linalg.eigh(Sx0)[1][:, ::-1] if rotate else eye
    Sx0 = _to_frame(Sx0, Q)
    S0 = nearest_psd(data.S_tilde) + (2.0 * jnp.sqrt(d) * data.sigma_S + 1e-9 * data.n)[:, None, None] * eye
    rows, cols, diag = _tril_indices(d)
    Linv = jax.scipy.linalg.solve_triangular(jnp.linalg.cholesky(Sx0), eye, lower=True)
    q = (Linv**2).sum(-1)
    rho = data.sigma_S[:, None] ** 2 * q[rows] * q[cols] / (data.n[:, None] * (1.0 + (rows == cols)))
    F0 = jnp.linalg.cholesky(_to_frame(S0, Q))
    omega = 1.0 / (1.0 + rho)
    pinned = jnp.minimum(omega, omega[:, diag][:, rows]) >= OFF_DIAGONAL_CENTRING_MIN  # the entry and its row's scale
    omega = jnp.where((rows == cols) | pinned, omega, 0.0)
    return Reference(log_cholesky(Sx0), jnp.sqrt(1.0 / n + noise**2), F0, omega, Q)


OFF_DIAGONAL_CENTRING_MIN = 0.5  # omega at which the release noise of an entry equals its Wishart spread (rho = 1)


def _to_frame(A: Array, Q: Array) -> Array:
    """``Q^T A Q`` (batched), symmetrised."""
    return symmetrize(Q.T @ A @ Q)


def _from_frame(A: Array, Q: Array) -> Array:
    """``Q A Q^T`` (batched), symmetrised."""
    return symmetrize(Q @ A @ Q.T)


def _c_of(xv: Array, F: Array, data: ModelData, ref: Reference) -> Array:
    """The raw Bartlett coordinates of ``S_j = F_j F_j^T`` in the frame of ``L(x_v)``."""
    d = F.shape[-1]
    rows, cols, diag = _tril_indices(d)
    L = from_log_cholesky(ref.v0 + ref.v_scale * xv, d)
    R = jax.scipy.linalg.solve_triangular(L, F, lower=True) / jnp.sqrt(data.n)[:, None, None]
    r = R[..., rows, cols]
    return r.at[..., diag].set(jnp.log(r[..., diag])) / _c_scale(data, d)


def _c_scale(data: ModelData, d: int) -> Array:
    _, _, diag = _tril_indices(d)
    return jnp.full(d * (d + 1) // 2, 1.0).at[diag].set(1.0 / jnp.sqrt(2.0)) / jnp.sqrt(data.n)[:, None]


def unpack(z: dict, data: ModelData, ref: Reference, pr: ResolvedPrior) -> tuple[Array, Array, Array, Array]:
    """``(L, R, S, sigma2)`` from the unconstrained coordinates: ``Sigma_x = Q L L^T Q^T``,
    ``S_j = Q (L R_j)(L R_j)^T Q^T`` (``L`` and ``R_j`` live in the frame ``Q``, ``S_j`` is returned
    in the features' frame); ``sigma_y^2`` from its coordinate ``ls2``
    (:func:`~bayes_dpreg.model.densities.sigma2_of`).

    The Bartlett coordinates of ``R_j`` are ``c_j = z_c,j + omega_j * h_j(z_v)`` (elementwise),
    ``h_j(z_v)`` those of the data's estimate ``S0_j`` in the frame of ``L(z_v)``: with
    ``omega = 0`` they are non-centred (``W_j`` fixed when ``Sigma_x`` moves); with
    ``omega = 1`` and ``z_c = 0``, ``S_j = S0_j`` whatever ``Sigma_x`` (centred). The
    release decides: where its noise swamps the Wishart spread of ``S_j`` the data do not pin
    ``S_j`` and non-centring decouples it from ``Sigma_x``; where the release is precise,
    ``S_j`` is pinned and must not move with ``Sigma_x``. The map is linear with unit
    Jacobian (triangular, identity blocks), so it changes the geometry NUTS sees and not the
    density."""
    J, d = data.z_tilde.shape
    L = from_log_cholesky(ref.v0 + ref.v_scale * z["v"], d)
    c = z["c"] + ref.omega * _c_of(z["v"], ref.F0, data, ref)
    R = jnp.sqrt(data.n)[:, None, None] * from_log_cholesky(c * _c_scale(data, d), d)
    F = L @ R
    return L, R, _from_frame(F @ jnp.swapaxes(F, -1, -2), ref.Q), sigma2_of(z["ls2"], pr)[0]


def sigma_x_of(L: Array, ref: Reference) -> Array:
    """``Sigma_x = Q L L^T Q^T`` from :func:`unpack`'s factor."""
    return _from_frame(L @ L.T, ref.Q)


def log_density(z: dict, data: ModelData, pr: ResolvedPrior, ref: Reference) -> Array:
    r"""Log-density of the unconstrained coordinates (theta integrated out), up to a constant.

    The model's factors (:mod:`bayes_dpreg.model.densities`) and the log-Jacobian (module docstring)
    combine into closed forms: with ``W_j = R_j R_j^T``, ``W(S_j; Sigma_x, n_j)`` times
    ``|dS_j/dW_j| = |L|^{d+1}`` is ``W(W_j; I, n_j)``, which with its Bartlett Jacobian is
    ``sum_i (n_j - i) log R_j,ii - ||R_j||_F^2 / 2`` (``i = 0..d-1``); ``IW(Sigma_x; Lambda,
    kappa)`` with the Jacobian of ``v`` is ``-sum_i (kappa + i) log L_ii
    - ||L^{-1} chol(Lambda)||_F^2 / 2``. The ``S~`` and ``sigma_y^2`` factors are the model's
    and the ``z~`` likelihood is :func:`~bayes_dpreg.model.closed_form.collapsed_log_lik`. Tested
    equal to the model's density plus a numerically differentiated log-Jacobian."""
    L, R, S, sigma2 = unpack(z, data, ref, pr)
    Sigma_x = None if pr.theta_ms is None else sigma_x_of(L, ref)
    return (
        sigma_x_log_density(L, pr, ref.Q)
        + wishart_log_density(R, data.n)
        + observed_log_density(S, sigma2, sigma2_of(z["ls2"], pr)[1], data, pr, Sigma_x)
    )


def sigma_x_log_density(L: Array, pr: ResolvedPrior, Q: Array | None = None) -> Array:
    """``Sigma_x``'s prior at ``Sigma_x = Q L L^T Q^T`` times the Jacobian of ``L L^T`` in its
    log-diagonal Cholesky coordinates, ``sum_i (d - i + 1) log L_ii`` (the frame ``Q``, orthogonal,
    has unit Jacobian; ``None``: the identity). For ``IW(Lambda, kappa)`` in closed form:
    ``-sum_i (kappa + i) log L_ii - ||L^{-1} chol(Q^T Lambda Q)||_F^2 / 2``, constants dropped."""
    d = L.shape[-1]
    i = jnp.arange(d)
    Q = jnp.eye(d, dtype=L.dtype) if Q is None else Q
    if pr.eta is not None:
        log_L = jnp.log(jnp.diagonal(L))
        prior = prior_dist(pr, "Sigma_x")
        return prior.log_prob_sqrt(Q @ L, 2.0 * log_L.sum()) + ((d - i + 1.0) * log_L).sum()
    Lam = _to_frame(jnp.asarray(pr.Lambda), Q)
    Linv_Lam = jax.scipy.linalg.solve_triangular(L, jnp.linalg.cholesky(Lam), lower=True)
    return -((pr.kappa + i) * jnp.log(jnp.diagonal(L))).sum() - 0.5 * (Linv_Lam**2).sum()


def wishart_log_density(R: Array, dof: Array) -> Array:
    """``W(L W_j L^T; L L^T, dof_j)`` times ``|L|^{d+1}`` is ``W(W_j; I, dof_j)``; with the Bartlett
    Jacobian of ``W_j = R_j R_j^T``: ``sum_j sum_i (dof_j - i) log R_j,ii - ||R_j||_F^2 / 2``."""
    i = jnp.arange(R.shape[-1])
    log_R = jnp.log(jnp.diagonal(R, axis1=-2, axis2=-1))
    return ((dof[:, None] - i) * log_R).sum() - 0.5 * (R**2).sum()


def observed_log_density(
    S: Array, sigma2: Array, log_jac: Array, data: ModelData, pr: ResolvedPrior, Sigma_x: Array | None = None
) -> Array:
    """The factors given the Gram matrices ``S_j``: ``S~`` (eq. 8), ``sigma_y^2``'s prior with the
    log-Jacobian ``log_jac`` of its coordinate (:func:`~bayes_dpreg.model.densities.sigma2_of`), and
    the ``z~`` likelihood with theta integrated out (its prior at ``Sigma_x``:
    :func:`~bayes_dpreg.model.densities.theta_precision`)."""
    J, D = data.z_tilde.shape
    t = party_terms(S, data.z_tilde, sigma2, data.sigma_z**2)
    return (
        S_tilde_dist(S, data).log_prob(upper(data.S_tilde)).sum()
        + prior_dist(pr, "sigma2").log_prob(sigma2)
        + log_jac
        + collapsed_log_lik(t.U.sum(0), t.u.sum(0), t.c.sum(0), jnp.asarray(pr.m), theta_precision(pr, Sigma_x), J * D)
    )


def to_unconstrained(
    Sigma_x: Array, S: Array, sigma2: Array, data: ModelData, ref: Reference, pr: ResolvedPrior
) -> dict:
    """The inverse of :func:`unpack` (for tests and for starting values)."""
    xv = (log_cholesky(_to_frame(Sigma_x, ref.Q)) - ref.v0) / ref.v_scale
    c = _c_of(xv, jnp.linalg.cholesky(_to_frame(S, ref.Q)), data, ref)
    return {"v": xv, "c": c - ref.omega * _c_of(xv, ref.F0, data, ref), "ls2": sigma2_coordinate(sigma2, pr)}


def nuts_kernels(settings: NutsSettings, log_density_fn: Any = None) -> tuple[Any, Any]:
    """NumPyro's NUTS ``(init_kernel, sample_kernel)`` on ``log_density_fn(z, data, pr, ref)``
    (default :func:`log_density`), whose ``model_args`` are ``(data, pr, ref)``. ``hmc`` keeps
    the warm-up schedule in its closure, so each settings value gets its own pair; the kernels'
    ``step`` functions take the sample kernel from :func:`sample_kernel`."""
    return _nuts_kernels(settings, log_density if log_density_fn is None else log_density_fn)


@functools.cache
def _nuts_kernels(settings: NutsSettings, fn: Any) -> tuple[Any, Any]:
    init_kernel, sample_kernel = hmc(
        potential_fn_gen=lambda data, pr, ref: lambda z: -fn(z, data, pr, ref), algo="NUTS"
    )
    return _TracedInit(init_kernel), sample_kernel


class _TracedInit:
    """NumPyro's ``init_kernel``, recording that it ran (was traced) in this process."""

    def __init__(self, kernel: Any) -> None:
        self.kernel, self.traced = kernel, False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.kernel(*args, **kwargs)
        self.traced = True
        return out


def sample_kernel(settings: NutsSettings, log_density_fn: Any, init_fn: Any, data: Any, pr: ResolvedPrior) -> Any:
    """:func:`nuts_kernels`' ``sample_kernel``, its closure set. NumPyro's ``hmc`` sets the tree depth
    and the warm-up schedule when ``init_kernel`` runs; where the chains' first program came from disk
    (:mod:`bayes_dpreg.runtime.exported`) and the step's did not, ``init_kernel`` never ran in this
    process and tracing the step failed (``assert max_treedepth is not None``). Then the kernel's
    ``init_fn(key, data, pr, settings)`` is traced here first, abstractly (nothing computed)."""
    init_kernel, sample = nuts_kernels(settings, log_density_fn)
    if not init_kernel.traced:
        jax.eval_shape(lambda k, d, p: init_fn(k, d, p, settings), jax.random.key(0), data, pr)
    return sample


def init(key: Array, data: ModelData, pr: ResolvedPrior, settings: NutsSettings) -> NCState:
    """Dispersed starting values: standard normal ``v`` and ``c`` (about one posterior or
    prior sd from the centre), ``sigma_y^2`` from :func:`dispersed_sigma2_start`."""
    J, d = data.z_tilde.shape
    p = d * (d + 1) // 2
    k_v, k_c, k_s, k_nuts = jax.random.split(key, 4)
    ref = reference(data)
    dtype = data.S_tilde.dtype
    z0 = {
        "v": jax.random.normal(k_v, (p,), dtype),
        "c": jax.random.normal(k_c, (J, p), dtype),
        "ls2": dispersed_sigma2_start(k_s, pr, dtype),
    }
    init_kernel, _ = nuts_kernels(settings)
    state = init_kernel(
        z0,
        settings.num_warmup,
        target_accept_prob=settings.target_accept_prob,
        max_tree_depth=settings.max_tree_depth,
        dense_mass=mass_matrix(settings.dense_mass, p * (J + 1) + 1, p + 1),
        model_args=(data, pr, ref),
        rng_key=k_nuts,
    )
    return NCState(state, ref)


FULL_DENSE_MAX_DIM = 32  # NumPyro's dense-mass transitions cost 8x more per step at 61 coordinates


def dispersed_sigma2_start(key: Array, pr: ResolvedPrior, dtype: Any) -> Array:
    """A dispersed start of ``sigma_y^2``'s coordinate: ``sigma_y^2 = b e^N``, ``N ~ N(0, 1)``
    (:func:`~bayes_dpreg.model.densities.sigma2_start`: below half the bound where there is one)."""
    return sigma2_start(jnp.asarray(pr.b, dtype) * jnp.exp(jax.random.normal(key, (), dtype)), pr)


def mass_matrix(kind: str, dim: int, level_dim: int, level_sites: tuple[str, ...] = ("v", "ls2")) -> Any:
    """``"auto"``: dense over all coordinates up to 32 of them; else dense over the level
    coordinates ``level_sites`` (``v``, ``log sigma2``) when those are at most 32 (d <= 7),
    diagonal beyond: a dense block of 100 or more coordinates is not learnt within the default
    warm-up (bike sharing, d = 14: 188 leapfrog steps per iteration against 31 with a diagonal
    mass matrix)."""
    if kind == "auto":
        kind = "full" if dim <= FULL_DENSE_MAX_DIM else "level" if level_dim <= FULL_DENSE_MAX_DIM else "diagonal"
    return {"full": True, "level": [level_sites], "diagonal": False}[kind]


def step(state: NCState, data: ModelData, pr: ResolvedPrior, settings: NutsSettings) -> NCState:
    """One NUTS transition (adapting step size and mass matrix during warm-up)."""
    sample = sample_kernel(settings, None, init, data, pr)
    return NCState(sample(state.hmc, model_args=(data, pr, state.ref)), state.ref)


def draws(state: NCState, data: ModelData, pr: ResolvedPrior, key: Array) -> dict:
    """``Sigma_x``, ``S``, ``sigma2`` of the state and ``theta`` from its exact conditional (eq. 12)."""
    L, _, S, sigma2 = unpack(state.hmc.z, data, state.ref, pr)
    Sigma_x = sigma_x_of(L, state.ref)
    post = theta_conditional(S, data.z_tilde, sigma2, data.sigma_z**2, jnp.asarray(pr.m), theta_precision(pr, Sigma_x))
    return {"theta": post.sample(key), "sigma2": sigma2, "Sigma_x": Sigma_x, "S": S}


def info(state: NCState) -> dict:
    """Sample statistics in ArviZ's names."""
    h = state.hmc
    return {
        "diverging": h.diverging,
        "n_steps": h.num_steps,
        "acceptance_rate": h.accept_prob,
        "energy": h.energy,
        "step_size": h.adapt_state.step_size,
        "lp": -h.potential_energy,
    }


KERNEL = ChainKernel(init, step, draws, info, vectorize=False, threads=True)  # chains one a core (docs/samplers.md)


def settings(options: dict, d: int, num_warmup: int) -> tuple[NutsSettings, dict]:
    """:class:`NutsSettings` from fit options (the rest returned)."""
    del d
    rest = dict(options)
    fields = {k: rest.pop(k) for k in list(rest) if k in NutsSettings._fields and k != "num_warmup"}
    return NutsSettings(int(num_warmup), **fields), rest


def check_settings(settings: NutsSettings) -> None:
    """Clear errors for out-of-range NUTS options."""
    if not 0 < settings.target_accept_prob < 1:
        raise ValueError(f"target_accept_prob must lie in (0, 1), got {settings.target_accept_prob}")
    depth = settings.max_tree_depth
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"max_tree_depth must be an integer >= 1, got {depth!r}")
    if settings.dense_mass not in ("auto", "full", "level", "diagonal"):
        raise ValueError(f"dense_mass must be 'auto', 'full', 'level' or 'diagonal', got {settings.dense_mass!r}")


def run_nuts(
    kernel: ChainKernel,
    description: str,
    st: StackedStats,
    pr: ResolvedPrior,
    key: Array,
    num_chains: int,
    num_samples: int,
    num_warmup: int,
    *,
    target_accept_prob: float = NutsSettings._field_defaults["target_accept_prob"],
    max_tree_depth: int = NutsSettings._field_defaults["max_tree_depth"],
    dense_mass: str = NutsSettings._field_defaults["dense_mass"],
    thinning: int = 1,
    progress_bar: bool = False,
    extend: int = 0,
    retry: bool = True,
    data: ModelData | None = None,
) -> MethodResult:
    """Run a NUTS :class:`ChainKernel` of this module's kind (``normalx-nuts``, ``normalx-intercept``)
    on stacked statistics; ArviZ's NUTS sample statistics and the settings in the attributes.
    ``data``: the kernel's data where it is not ``model_data(st)`` (``normalx-pooled``'s sums).

    ``extend``: up to this many times, while the chains of ``theta`` and ``sigma2`` mix too slowly
    (R-hat above 1.01 or ESS below 100 per chain) and do not sit in separate modes
    (:func:`~bayes_dpreg.samplers.convergence.needs_more_draws`), every chain goes on, with the warm-up's
    step size and mass matrix, for another ``num_samples`` draws. Off (0) by default.

    ``retry``: where a kept draw diverged, the chains are run again from the start (a new warm-up, on a
    key of their own) at the target acceptance :func:`retry_target`, a smaller step size, and the second run's
    draws are the fit's: Stan's advice for divergent transitions (raise ``adapt_delta``), taken once. A fit
    without a divergence is what it was. The attributes record the first run's divergences and the target
    the draws were taken at."""
    settings = NutsSettings(num_warmup, float(target_accept_prob), max_tree_depth, dense_mass)
    check_settings(settings)
    settings = settings._replace(max_tree_depth=int(max_tree_depth))
    chains = functools.partial(
        run_chains,
        kernel,
        model_data(st) if data is None else data,
        pr,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thin=thinning,
        progress_bar=progress_bar,
        extend=positive_int("extend", extend, 0),
        more=needs_more_draws,
        parties=None if data is None else st.J,
    )
    samples, stats = chains(settings, key)
    first = int(stats["diverging"].sum())
    if retry and first:
        settings = settings._replace(target_accept_prob=retry_target(settings.target_accept_prob))
        samples, stats = chains(settings, fold_in(key, RETRY_STREAM))
    stats["tree_depth"] = np.floor(np.log2(np.maximum(stats["n_steps"], 1))).astype(np.int64) + 1
    attrs = {
        "num_warmup": num_warmup,
        "sampler": description,
        "target_accept_prob": settings.target_accept_prob,
        "max_tree_depth": max_tree_depth,
        "dense_mass": dense_mass,
        "divergences": int(stats["diverging"].sum()),
        "num_samples": int(np.shape(stats["diverging"])[1]),
        "extensions": (int(np.shape(stats["diverging"])[1]) // num_samples) - 1,
        "retried": int(retry and first > 0),
        "divergences_before_retry": first if retry else 0,
    }
    return MethodResult(samples, attrs, stats)


RETRY_STREAM = 2_000_000  # fold_in offset of a retry's key (the extensions' offset is 1,000,000: base.EXTEND_STREAM)


def retry_target(target_accept_prob: float) -> float:
    """The target acceptance of a run after divergent transitions (:func:`run_nuts`'s ``retry``): half the
    rejection rate, ``1 - (1 - p) / 2`` (0.8 -> 0.9, 0.9 -> 0.95, 0.97 -> 0.985). On the bike-sharing releases
    split in consecutive blocks (d = 14, where the default's target is 0.8), each of the six of 100 fits that
    diverged had no divergence at 0.9, nor at 0.95 (``docs/samplers.md``, *Divergent transitions: one retry*)."""
    return 1.0 - (1.0 - float(target_accept_prob)) / 2.0


SMALL_PARTY_TARGET_ACCEPT = 0.97


def target_accept(st: StackedStats) -> float:
    """Target acceptance by size: NumPyro's 0.9, or :data:`SMALL_PARTY_TARGET_ACCEPT` where a party has fewer
    rows than :func:`~bayes_dpreg.samplers.clt_min_rows` (``max(100, 30 d)``: where ``fit`` takes this sampler
    by default). There the release leaves the features' correlations to their prior, and uniform
    correlations (``LKJ(1)``) reach the boundary ``|r| -> 1``, a funnel in log-Cholesky coordinates
    (``L_ii -> 0``) that step sizes tuned for the bulk cannot enter without diverging. Through ``fit`` under
    the default prior (``studies.sbc_fit``'s ``nuts-d2``: d = 2, J = 3, n_j = 50, eps = 1), 13 of 160 fits had
    a divergence at 0.9 and 1 of 160 at 0.97 (5 of the first 80 at 0.95), at 1.3 times the time a fit."""
    small = int(np.min(st.n)) < clt_min_rows(st.d)
    return SMALL_PARTY_TARGET_ACCEPT if small else NutsSettings._field_defaults["target_accept_prob"]


def run(
    st: StackedStats, pr: ResolvedPrior, key: Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    """``fit``'s entry point; options as :func:`run_nuts`, whose target acceptance is :func:`target_accept`'s
    unless given."""
    description = "NUTS (NumPyro), non-centred S_j = L W_j L^T, theta integrated out and drawn from eq. (12)"
    options.setdefault("target_accept_prob", target_accept(st))
    return run_nuts(KERNEL, description, st, pr, key, num_chains, num_samples, num_warmup, **options)


SAMPLER = Sampler(
    name="normalx-nuts",
    label="MCMC-normalX (NUTS)",
    summary="the normalX model (eq. 10; noise in S~ modelled) by NUTS, non-centred, theta integrated out",
    run=run,
    kind="mcmc",
    needs_wishart=True,
    sigma_x_priors=("iw", "lkj"),
    theta_scales=("features", "release"),
    sigma2_bound=True,
    centred_features=True,
    models_release_noise=True,
    num_warmup=500,
    num_samples=500,
    kernel=KERNEL,
    data=model_data,
    settings=settings,
    options=NUTS_OPTIONS,
)
