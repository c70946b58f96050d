r"""``normalx-clt``: the normalX model (eq. 10) with every ``S_j`` integrated out under the Wishart's CLT.

The cost of ``normalx-nuts`` grows with the ``J d (d + 1) / 2`` latent entries of the ``S_j``;
this sampler has none. It rests on two facts.

* **The model is one Wishart of dimension d + 1.** With ``w_i = (x_i, y_i)``,
  ``x_i ~ N(0, Sigma_x)`` and ``y_i = x_i^T theta + e_i``, ``e_i ~ N(0, sigma_y^2)``, the matrix
  ``W_j = sum_i w_i w_i^T = [[S_j, z_j], [z_j^T, y_j^T y_j]] ~ W(Sigma~, n_j)`` with

  .. math::
      \tilde\Sigma = \begin{pmatrix} \Sigma_x & \Sigma_x\theta \\ \theta^T\Sigma_x &
      \theta^T\Sigma_x\theta + \sigma_y^2 \end{pmatrix},

  and its blocks are exactly eq. 10's ``S_j ~ W(Sigma_x, n_j)``, ``z_j | S_j ~ N(S_j theta,
  sigma_y^2 S_j)``. The central limit theorem makes ``W_j`` Gaussian, mean ``n_j Sigma~`` and
  ``Cov(W_ab, W_cd) = n_j (Sigma~_ac Sigma~_bd + Sigma~_ad Sigma~_bc)`` (Isserlis; the moments of
  :mod:`bayes_dpreg.model.wishart_moments`, which the tests use to check this module).
* **The release noise can be made orthogonally invariant.** The released ``S~_j``, ``z~_j`` carry
  independent noise of variance ``sigma_S^2`` on each entry of the upper triangle of ``S_j`` and
  ``sigma_z^2`` on ``z_j``. Adding independent noise (post-processing: privacy is untouched) so
  that every off-diagonal entry of ``W~_j`` has variance ``s_j^2 = max(sigma_S^2, sigma_z^2)``
  and every diagonal entry ``2 s_j^2`` makes it the Gaussian orthogonal ensemble, whose
  covariance, ``s_j^2 (delta_ac delta_bd + delta_ad delta_bc)``, has the Wishart's form with
  ``Sigma~`` replaced by ``I``. In the eigenbasis ``Sigma~ = U diag(lambda) U^T`` the entries of
  ``U^T (W~_j - n_j Sigma~) U`` are then independent, ``N(0, (1 + [a = b]) t_j,ab)`` with
  ``t_j,ab = n_j lambda_a lambda_b + s_j^2``. The added noise doubles the variance of the
  diagonal entries at most (along a unit direction ``u`` of ``S~`` by the factor
  ``2 / (2 - sum_k u_k^4)``, near 1 unless ``u`` is a coordinate axis); its draws come from a key
  derived from the released values, so every chain sees the same augmented release. Up to
  :data:`EXACT_NOISE_MAX_D` features the diagonal is not augmented: :func:`clt_log_lik_exact`
  takes its noise as released, by a rank-d Woodbury update of this likelihood (at d = 2 a
  direction of feature space close to an axis, whose noise the augmentation nearly doubles, is
  the rule, and one draw of the added noise moved the posterior of ``theta``; at d = 3 and 4 it cut
  the error of the posterior mean by 5-7% where the release resolves most; its gradient is a closed
  form too, :func:`clt_log_lik_exact_grad`).

Where each party released ``y_j^T y_j`` too (:func:`~bayes_dpreg.release_bs`) the whole ``W~_j`` is
observed (:func:`clt_log_lik_observed`): this is what identifies ``sigma_y^2`` with one party.
Otherwise ``y_j^T y_j`` is not released: the Gaussian is integrated over that entry, a rank-one step.
With ``Y = U^T (W~_j - n_j Sigma~) U`` (that entry set to its mean), ``K = 1 / t_j``,
``q = U^T e_{d+1}``, ``A = sum Y^2 K / 2``, ``B = q^T (Y K) q / 2``, ``P = (q^2)^T K q^2 / 2``:

.. math::
    \log p(\tilde S_j, \tilde z_j) = -\tfrac12 (A - B^2 / P) - \tfrac12 \log P
    - \tfrac14 \Big(\sum_{a,b} \log t_{j,ab} + \sum_a \log t_{j,aa}\Big) + \text{const},

``O(d^3)`` a party (one rotation) after one eigendecomposition of the ``(d + 1) x (d + 1)``
``Sigma~`` shared by all parties: the likelihood costs ``O(J d^3)``, not the
``O(J d^6)`` of a dense Gaussian over each party's ``d (d + 3) / 2`` released numbers.

NUTS (NumPyro) samples ``x``, an affine image of ``(v, b, log sigma_y^2)``: ``v`` the log-Cholesky
factor of ``Sigma_x`` in the eigenframe of the pooled estimate (as ``normalx-nuts``) and ``b``
the coefficients whitened by an approximate conditional of ``theta`` (:func:`theta_conditional`)
(``log sigma_y^2`` stands for ``sigma_y^2``'s coordinate, ``logit(sigma_y^2 / sigma2_max)`` under the
prior's bound: :func:`~bayes_dpreg.model.densities.sigma2_of`):

.. math::
    \theta = \mu(\Sigma_x, \sigma_y^2) + \mathrm{chol}(P(\Sigma_x, \sigma_y^2))^{-T} b,
    \qquad \log|\partial\theta/\partial b| = -\log|\mathrm{chol}(P)|,

with ``(mu, P^{-1})`` the Gaussian ``theta`` would have if each ``S_j`` were ``n_j Sigma_x``. Along a
direction the release resolves this centres ``theta`` on what ``z~`` says; along one it does not,
on the prior, so no funnel forms between ``Sigma_x`` and ``theta`` (fixing ``Sigma_x theta``
instead gave divergences in 3% of transitions at d = 5, n_j = 2000, eps = 1, and 62 leapfrog
steps an iteration on the paper's simulation at d = 10 against 15 now). ``x`` is
``(v, b, log sigma_y^2)`` less the posterior mode over the Laplace factor there (each coordinate
over its sd above 300 coordinates: :func:`laplace`), so that NUTS's warm-up starts from a well-scaled
geometry. The priors are the
model's (:func:`~bayes_dpreg.model.densities.prior_dist`, the ``Sigma_x`` factor through
:func:`~bayes_dpreg.samplers.normalx_nuts.sigma_x_log_density`).

The approximation is the CLT's: its error in ``W_j`` is of relative order ``n_j^{-1/2}``
(the Wishart's skewness); where ``n_j`` is small against ``d`` the exact ``normalx-nuts`` is
the reference (``docs/samplers.md`` gives the measured boundary).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array, lax
from jax.custom_derivatives import SymbolicZero

from ..model.densities import (
    ModelData,
    model_data,
    prior_dist,
    released_yty,
    sigma2_of,
    sigma2_start,
    theta_precision,
    theta_prior,
)
from ..model.linalg import (
    from_log_cholesky,
    log_cholesky,
    pooled_covariance,
    small_spd_inverse,
    spd_inverse,
    symmetrize,
)
from ..model.prior import ResolvedPrior
from ..runtime.cache import fit_jit
from ..runtime.threads import callers_context
from ..stats import StackedStats
from .base import ChainKernel, MethodResult, Sampler
from .normalx_nuts import (
    NUTS_OPTIONS,
    NCState,
    NutsSettings,
    info,
    nuts_kernels,
    run_nuts,
    sample_kernel,
    sigma_x_log_density,
)
from .normalx_nuts import settings as nuts_settings

__all__ = [
    "CLTReference",
    "fd_hessian",
    "CLTData",
    "prepare",
    "clt_log_lik",
    "clt_log_lik_grads",
    "clt_log_lik_observed",
    "clt_log_lik_exact",
    "clt_log_lik_exact_grad",
    "release_log_lik",
    "augment",
    "exact_noise",
    "EXACT_NOISE_MAX_D",
    "reference",
    "sigma_tilde",
    "log_density",
    "white_log_density",
    "frame_point",
    "laplace",
    "DENSE_FRAME_MAX_DIM",
    "theta_log_prior",
    "unpack",
    "init",
    "step",
    "draws",
    "KERNEL",
    "SAMPLER",
]


class CLTReference(NamedTuple):
    """Data-based constants: the frame, the coordinates' centres and scales, the release augmented
    (its off-diagonal entries always, its diagonal above :data:`EXACT_NOISE_MAX_D`)."""

    Q: Array  # (d, d) eigenvectors of the pooled Sigma_x estimate, largest first
    v0: Array  # (p,) log-Cholesky vector of the pooled estimate in the frame
    v_scale: Array  # ()
    signal: Array  # () theta^T Sigma_x theta at the pooled estimates (for theta's conditional)
    W: Array  # (J, d + 1, d + 1) [[S~, z~], [z~^T, u~ or 0]] after augmentation (augment), in the frame
    s2: Array  # (J,) the augmented noise's off-diagonal variance
    delta: Array  # (J, k) where the diagonal is not augmented (EXACT_NOISE_MAX_D): 2 s2 less its noise variance
    # (k = d, or d + 1 with y^T y released: _released_deficits); (J,) zeros elsewhere
    axes: Array  # (d + 1, d + 1) the frame's rotation: row k is the k-th released axis in the frame
    C_inv: Array  # (d, d) theta's fixed prior precision C^-1 in the frame (theta_scale="features": theta_prior_frame)
    Cm: Array  # (d,) C^{-1} m in the frame
    mode: Array  # (k,) the posterior mode of the raveled (v, b, log sigma_y^2) (0 before laplace)
    T: Array  # (k, k) T T^T = the inverse Hessian there, z = mode + T x; above DENSE_FRAME_MAX_DIM coordinates (k,),
    # the sds of that Laplace approximation, z = mode + T o x (I or 1 before laplace)
    kappa: Array | None = None  # () where every party released y^T y: theta's added frame precision is Sigma_x / kappa


@jax.custom_jvp
def clt_log_lik(Sigma_t: Array, W: Array, n: Array, s2: Array) -> Array:
    """``sum_j log N(W~_j)`` of the module docstring: ``W~_j`` (J, d+1, d+1) the released
    ``[[S~_j, z~_j], [z~_j^T, .]]`` with GOE noise of off-diagonal variance ``s2_j`` (the last
    diagonal entry, unreleased, is integrated out), ``W_j ~ N(n_j Sigma~, n_j (I + K)(Sigma~ x
    Sigma~))``. Constants dropped. Its derivative is :func:`clt_log_lik_grads`' closed form (a
    ``custom_jvp``): a value and gradient take three ``J``-batched ``(d + 1)``-square products where
    reverse mode of the value takes six (``docs/results/speed/clt_gradient.md``)."""
    return _clt_terms(Sigma_t, W, n, s2, False).value


@jax.custom_jvp
def clt_log_lik_observed(Sigma_t: Array, W: Array, n: Array, s2: Array) -> Array:
    r""":func:`clt_log_lik` where each party released ``y_j^T y_j`` too (the last diagonal entry of
    ``W~_j``, with the orthogonal ensemble's noise ``2 s2_j`` like the others: :func:`augment`), so
    nothing is integrated out: ``sum_j -(A_j + log|Sigma_j|) / 2`` in the module docstring's notation.
    The released ``y^T y`` is what identifies ``sigma_y^2`` where the ``z~_j`` cannot (one party:
    ``docs/prior.md``, *Noise variance left to its prior*). Derivative: :func:`clt_log_lik_grads`
    with ``observed`` (a ``custom_jvp``)."""
    return _clt_terms(Sigma_t, W, n, s2, True).value


class _CLTTerms(NamedTuple):
    """The likelihood and what its derivative reuses (module docstring's notation, per party)."""

    value: Array  # ()
    lam: Array  # (m,) eigenvalues of Sigma~
    U: Array  # (m, m) its eigenvectors
    Yr: Array  # (J, m, m) U^T Y_j U
    K: Array  # (J, m, m) 1 / t_j
    c: Array  # (J,) B_j / P_j (0 where y^T y is observed)
    P: Array  # (J,) (inf where y^T y is observed: nothing integrated out)


def _clt_terms(Sigma_t: Array, W: Array, n: Array, s2: Array, observed: bool) -> _CLTTerms:
    lam, U, Yr, K, A, log_det = _ensemble_terms(Sigma_t, W, n, s2, observed)
    if observed:
        inf = jnp.full(A.shape, jnp.inf, A.dtype)
        return _CLTTerms((-0.5 * (A + log_det)).sum(), lam, U, Yr, K, jnp.zeros_like(A), inf)
    q = U[-1]
    B = 0.5 * jnp.einsum("a,jab,b->j", q, Yr * K, q)
    P = 0.5 * jnp.einsum("a,jab,b->j", q**2, K, q**2)
    value = (-0.5 * (A - B**2 / P) - 0.5 * jnp.log(P) - 0.5 * log_det).sum()
    return _CLTTerms(value, lam, U, Yr, K, B / P, P)


def _ensemble_terms(Sigma_t: Array, W: Array, n: Array, s2: Array, observed: bool) -> tuple[Array, ...]:
    """``(lam, U, Y~, K, A, log|Sigma|)`` per party (the log-determinant of the covariance of the released
    entries up to a constant), the orthogonal ensemble's likelihood of every entry of ``W~_j``; unless
    ``y^T y`` is ``observed`` its entry is set to its mean, to be integrated out (module docstring)."""
    last = Sigma_t.shape[-1] - 1
    lam, U = jnp.linalg.eigh(Sigma_t)
    Y = W - n[:, None, None] * Sigma_t
    if not observed:
        Y = Y.at[:, last, last].set(0.0)
    Yr = _rotate(Y, U)
    t = n[:, None, None] * (lam[:, None] * lam[None, :]) + s2[:, None, None]
    K = 1.0 / t
    A = 0.5 * (Yr**2 * K).sum((-2, -1))
    log_t = jnp.log(t)
    log_det = 0.5 * (log_t.sum((-2, -1)) + jnp.diagonal(log_t, axis1=-2, axis2=-1).sum(-1))
    return lam, U, Yr, K, A, log_det


def _not_last(m: int, dtype: Any, observed: bool) -> Array:
    """Ones, with the unreleased ``y^T y`` entry 0 unless it is ``observed`` (its mean then enters)."""
    ones = jnp.ones((m, m), dtype)
    return ones if observed else ones.at[m - 1, m - 1].set(0.0)


def clt_log_lik_grads(
    Sigma_t: Array, W: Array, n: Array, s2: Array, observed: bool = False
) -> tuple[Array, dict[str, Callable[[], Array]]]:
    r"""``(value, grads)``: :func:`clt_log_lik` (:func:`clt_log_lik_observed` with ``observed``) and its
    gradients with respect to each argument
    (``grads[name]()``, each computed on request: only ``Sigma_t``'s is cheap, ``O(J d^3)`` with one
    batched product). With ``R_j = Y~_j - c_j q q^T`` (``Y~_j = U^T Y_j U``, ``c_j = B_j / P_j``):

    .. math::
        \frac{\partial \ell}{\partial \tilde Y_j} = -\tfrac12 K_j \circ R_j =: G_j, \qquad
        \frac{\partial \ell}{\partial t_j} = \tfrac14 K_j^2 \circ \big(R_j^2 + (q q^T)^2 / P_j\big)
        - \tfrac14 K_j \circ (1 + I) =: H_j,

    ``dl/dq = sum_j c_j (K_j o Y~_j) q - (c_j^2 + 1 / P_j) q o (K_j q^2)``, ``dl/dlambda = 2 sum_j
    n_j H_j lambda``; since ``Y_j U = U Y~_j`` the eigenvectors' part is ``U^T dl/dU = 2 sum_j Y~_j
    G_j + q (dl/dq)^T =: M``, and the eigendecomposition's adjoint (that of ``jnp.linalg.eigh``)
    gives

    .. math::
        \frac{\partial \ell}{\partial \tilde\Sigma} = \mathrm{sym}\big(U (F \circ M +
        \mathrm{diag}(\partial\ell/\partial\lambda)) U^T\big) - U \Big(\sum_j n_j G_j\Big) U^T,
        \quad F_{ab} = \frac{[a \ne b]}{\lambda_b - \lambda_a},

    the last term with its last diagonal entry set to 0 (the unreleased entry does not depend on
    ``Sigma~``). Where ``y^T y`` is ``observed``: ``c_j = 1 / P_j = 0`` and no entry is set to 0."""
    T = _clt_terms(Sigma_t, W, n, s2, observed)
    lam, U, Yr, K, c, P = T.lam, T.U, T.Yr, T.K, T.c, T.P
    J, m, _ = Yr.shape
    q = U[m - 1]
    qq = q[:, None] * q[None, :]
    R = Yr - c[:, None, None] * qq
    G = -0.5 * K * R
    H = 0.25 * K**2 * (R**2 + qq**2 / P[:, None, None]) - 0.25 * K * (1.0 + jnp.eye(m, dtype=K.dtype))
    not_last = _not_last(m, K.dtype, observed)

    def d_sigma() -> Array:
        Kq2 = K @ q**2  # (J, m)
        dq = (c[:, None] * ((K * Yr) @ q) - (c**2 + 1.0 / P)[:, None] * q * Kq2).sum(0)
        dlam = 2.0 * jnp.einsum("j,jab,b->a", n, H, lam)
        M = 2.0 * (Yr.reshape(J * m, m).T @ G.reshape(J * m, m)) + jnp.outer(q, dq)  # Y~_j symmetric
        nG = jnp.tensordot(n, G, 1)
        return _eigen_adjoint(lam, U, M, dlam, nG, observed)  # tested near repeated eigenvalues

    def d_W() -> Array:
        return _rotate(G, U.T) * not_last

    def d_n() -> Array:
        Sigma_r = jnp.diag(lam) - (1.0 - not_last[-1, -1]) * Sigma_t[m - 1, m - 1] * qq  # less the unreleased entry
        return jnp.einsum("jab,a,b->j", H, lam, lam) - jnp.einsum("jab,ab->j", G, Sigma_r)

    grads = {"Sigma_t": d_sigma, "W": d_W, "n": d_n, "s2": lambda: H.sum((-2, -1))}
    return T.value, grads


def _ensemble_jvp(observed: bool) -> Callable:
    def jvp(primals: tuple, tangents: tuple) -> tuple[Array, Array]:
        Sigma_t, W, n, s2 = primals
        value, grads = clt_log_lik_grads(Sigma_t, W, n, s2, observed)
        names = ("Sigma_t", "W", "n", "s2")
        out = jnp.zeros_like(value)
        for name, dx in zip(names, tangents, strict=True):
            if not isinstance(dx, SymbolicZero):
                out = out + jnp.vdot(grads[name](), dx)
        return value, out

    return jvp


clt_log_lik.defjvp(_ensemble_jvp(False), symbolic_zeros=True)
clt_log_lik_observed.defjvp(_ensemble_jvp(True), symbolic_zeros=True)


def _rotate(Y: Array, U: Array) -> Array:
    """``U^T Y_j U`` for symmetric ``Y_j``, as two ``(J m) x m`` products (faster on CPU than a
    batch of small ones)."""
    J, m, _ = Y.shape
    YU = (Y.reshape(J * m, m) @ U).reshape(J, m, m)  # Y_j U
    return (jnp.swapaxes(YU, -1, -2).reshape(J * m, m) @ U).reshape(J, m, m)  # (U^T Y_j) U


@jax.custom_jvp
def clt_log_lik_exact(Sigma_t: Array, W: Array, n: Array, s2: Array, delta: Array, axes: Array) -> Array:
    r""":func:`clt_log_lik` where the diagonal of each ``S~_j`` carries its release noise as released,
    of variance ``2 s2_j - delta_j``, instead of being augmented to the orthogonal ensemble's
    ``2 s2_j`` (the off-diagonal entries are augmented as before).

    Augmenting the diagonal is exact but throws information away, most along a direction of
    feature space close to a coordinate axis (noise variance up to doubled there): at d = 2 one of
    the two directions of ``Sigma_x`` nearly always is, and where it is also the direction the
    release barely resolves, the one draw of the added noise moves the posterior of ``theta``
    (``docs/samplers.md``). Here the deficit is a rank-``d`` update of the orthogonal ensemble's
    covariance ``Sigma`` (over the released entries) along ``E_k = e_k e_k^T``, and the unreleased
    ``y^T y`` one of infinite variance along ``E_{d+1}``; Woodbury's identity in the eigenbasis of
    ``Sigma~``, where ``<A, B> = A^T Sigma^{-1} B = sum_ab K_ab A~_ab B~_ab / 2``, gives

    .. math::
        \log p = -\tfrac12 \big(A + g_d^T N^{-1} g_d - (g_y + G_{yd} N^{-1} g_d)^2 / P'\big)
        - \tfrac12 \big(\log|N| + \log P' + \log|\Sigma| + d \log\delta\big),

    with ``g_k = <Y, E_k>``, ``G_kl = <E_k, E_l>``, ``N = I / delta - G_dd`` (positive definite: the
    released noise's covariance is), ``P' = G_yy + G_yd N^{-1} G_dy``. ``E_k`` in the eigenbasis is
    ``u_k u_k^T`` with ``u_k`` row ``k`` of ``axes U``: ``O(d^4)`` a party, against ``O(d^3)`` for
    :func:`clt_log_lik`. Its derivative in ``Sigma~`` is :func:`clt_log_lik_exact_grad`'s closed form (a
    ``custom_jvp``; in the other arguments, data, JAX's forward mode of the value). With ``delta -> 0``
    it is :func:`clt_log_lik`. Needs
    ``delta_j > 0``: a party's ``delta_j`` is at least ``sigma_S,j^2``, which every release has
    (``NoisyStats`` rejects ``sigma_S <= 0``).

    ``delta`` is ``(J,)`` (one deficit for every diagonal entry of ``S~_j``) or ``(J, k)``: ``k = d``
    deficits, or ``k = d + 1`` where ``y_j^T y_j`` was released too (its deficit last, ``2 s2_j -
    sigma_u,j^2``): then ``E_{d+1}`` joins the rank-``k`` update like the others and nothing is
    integrated out, ``log p = -(A + g^T N^{-1} g) / 2 - (log|N| + log|Sigma| + sum_k log delta_k) / 2``
    (:func:`clt_log_lik_observed`'s counterpart)."""
    return _exact_terms(Sigma_t, W, n, s2, delta, axes).value


class _ExactTerms(NamedTuple):
    """:func:`clt_log_lik_exact` and what its derivative reuses (per party; ``m = d + 1``)."""

    value: Array  # ()
    lam: Array  # (m,) eigenvalues of Sigma~
    U: Array  # (m, m) its eigenvectors
    Yr: Array  # (J, m, m) U^T Y_j U
    K: Array  # (J, m, m) 1 / t_j
    u: Array  # (m, m) row k: E_k's vector in the eigenbasis
    uYK: Array  # (m, J, m) (K_j o Y~_j) u_k
    V: Array  # (m^2, m) row (k, l): u_k o u_l
    KV: Array  # (m^2, J, m) K_j (u_k o u_l)
    gamma: Array  # (J, m) dl/dg
    Gam: Array  # (J, m, m) dl/dG, symmetric


def _by_party(A: Array, B: Array) -> Array:
    """``A B_j`` for every party as one product: ``(r, m) x (J, m, m) -> (r, J, m)`` (faster on CPU
    than a batch of small products)."""
    J, m, _ = B.shape
    return (A @ jnp.swapaxes(B, 0, 1).reshape(m, J * m)).reshape(A.shape[0], J, m)


def _exact_terms(Sigma_t: Array, W: Array, n: Array, s2: Array, delta: Array, axes: Array) -> _ExactTerms:
    """:func:`clt_log_lik_exact`'s value in its docstring's notation (``G`` here the Gram matrix
    ``<E_k, E_l>``) and the adjoints :func:`_exact_sigma_grad` needs."""
    J, m, _ = W.shape
    d = m - 1
    delta = _deficits(delta, d)
    observed = _observes_yty(delta, W)
    lam, U, Yr, K, A, log_det = _ensemble_terms(Sigma_t, W, n, s2, observed)
    u = axes @ U
    uYK = _by_party(u, Yr * K)  # symmetric: row k of (K_j o Y~_j) u^T
    g = 0.5 * (uYK * u[:, None, :]).sum(-1).T  # (J, m): <Y_j, E_k>
    V = (u[:, None, :] * u[None, :, :]).reshape(m * m, m)  # rows u_k o u_l
    KV = _by_party(V, K)
    G = 0.5 * (KV * V[:, None, :]).sum(-1).T.reshape(J, m, m)  # <E_k, E_l>
    k = delta.shape[-1]
    N = jnp.eye(k, dtype=K.dtype) / delta[:, None, :] - G[:, :k, :k]
    N_inv, log_N = small_spd_inverse(N)
    x = jnp.einsum("jab,jb->ja", N_inv, g[:, :k])  # N^{-1} g_k
    log_delta = jnp.log(delta).sum(-1)
    if observed:  # every diagonal entry released: no P' term (dl/dg = -x, dl/dG = (N^{-1} - x x^T) / 2)
        value = (-0.5 * (A + (g * x).sum(-1)) - 0.5 * (log_N + log_det + log_delta)).sum()
        Gam = 0.5 * (N_inv - x[:, :, None] * x[:, None, :])
        return _ExactTerms(value, lam, U, Yr, K, u, uYK, V, KV, -x, Gam)
    r = jnp.einsum("jab,jb->ja", N_inv, G[:, :d, d])  # N^{-1} G_dy
    P = G[:, d, d] + (G[:, d, :d] * r).sum(-1)
    B = g[:, d] + (G[:, d, :d] * x).sum(-1)
    quad = A + (g[:, :d] * x).sum(-1) - B**2 / P
    value = (-0.5 * quad - 0.5 * (log_N + jnp.log(P) + log_det + log_delta)).sum()
    gamma, Gam = _exact_adjoints(x, r, B / P, 1.0 / P, N_inv)
    return _ExactTerms(value, lam, U, Yr, K, u, uYK, V, KV, gamma, Gam)


def _observes_yty(delta: Array, W: Array) -> bool:
    """Whether :func:`clt_log_lik_exact` is given a deficit for ``y^T y`` (it was released)."""
    return delta.ndim == 2 and delta.shape[-1] == W.shape[-1]


def _deficits(delta: Array, d: int) -> Array:
    """``delta`` as ``(J, k)``: one deficit a released diagonal entry (``k = d``; ``k = d + 1`` where
    ``y^T y`` is released, its deficit last); a ``(J,)`` vector is the same deficit on every ``S~_jkk``."""
    return jnp.broadcast_to(delta[:, None], (delta.shape[0], d)) if delta.ndim == 1 else delta


def _exact_adjoints(x: Array, r: Array, c: Array, iP: Array, N_inv: Array) -> tuple[Array, Array]:
    r"""``(dl/dg, sym dl/dG)`` of :func:`clt_log_lik_exact`'s value as a function of ``g`` and ``G``, with
    ``x = N^{-1} g_d``, ``r = N^{-1} G_dy``, ``c = B / P'``, ``e = c^2 + 1 / P'``:
    ``dl/dg = (c r - x, c)``; ``dl/dG_dd = (N^{-1} - x x^T - e r r^T) / 2 + c sym(r x^T)``,
    ``dl/dG_yd = (c x - e r) / 2``, ``dl/dG_yy = -e / 2`` (``dN = -dG_dd``, ``dB = dG_yd x + r^T dG_dd x``,
    ``dP' = dG_yy + 2 dG_yd r + r^T dG_dd r``)."""
    e = c**2 + iP
    outer = lambda a, b: a[:, :, None] * b[:, None, :]
    dd = 0.5 * (N_inv - outer(x, x) - e[:, None, None] * outer(r, r) + c[:, None, None] * (outer(r, x) + outer(x, r)))
    yd = 0.5 * (c[:, None] * x - e[:, None] * r)
    top = jnp.concatenate([dd, yd[:, :, None]], -1)
    bottom = jnp.concatenate([yd, -0.5 * e[:, None]], -1)[:, None, :]
    return jnp.concatenate([c[:, None] * r - x, c[:, None]], -1), jnp.concatenate([top, bottom], 1)


def clt_log_lik_exact_grad(Sigma_t: Array, W: Array, n: Array, s2: Array, delta: Array, axes: Array) -> Array:
    r"""``d/dSigma~`` of :func:`clt_log_lik_exact` in closed form, :func:`clt_log_lik_grads`' algebra with
    the Woodbury terms: with ``Q_j = sum_k gamma_jk u_k u_k^T`` (``gamma = dl/dg``, ``Gamma = dl/dG``,
    :func:`_exact_adjoints`),

    .. math::
        G_j = \tfrac12 K_j \circ (Q_j - \tilde Y_j), \qquad
        H_j = -K_j^2 \circ \Big(-\tfrac14 \tilde Y_j^2 + \tfrac12 Q_j \circ \tilde Y_j
        + \tfrac12 \sum_{kl} \Gamma_{j,kl} (u_k \circ u_l)(u_k \circ u_l)^T\Big) - \tfrac14 K_j \circ (1 + I),

    ``dl/du_k = sum_j gamma_jk (K_j o Y~_j) u_k + 2 sum_l Gamma_j,kl u_l o K_j (u_k o u_l)``, and
    ``M = 2 sum_j Y~_j G_j + u^T dl/du`` in :func:`clt_log_lik_grads`' eigendecomposition adjoint."""
    return _exact_sigma_grad(_exact_terms(Sigma_t, W, n, s2, delta, axes), n, _observes_yty(delta, W))


def _exact_sigma_grad(T: _ExactTerms, n: Array, observed: bool) -> Array:
    """:func:`clt_log_lik_exact_grad`'s formula (``G`` here ``dl/dY~``, as in :func:`clt_log_lik_grads`);
    like that one, the derivative along symmetric directions of ``Sigma~`` (the sampler's)."""
    lam, U, Yr, K, u = T.lam, T.U, T.Yr, T.K, T.u
    J, m, _ = Yr.shape
    uu = (u[:, :, None] * u[:, None, :]).reshape(m, m * m)  # rows u_k u_k^T
    Q = (T.gamma @ uu).reshape(J, m, m)
    G = 0.5 * K * (Q - Yr)
    VV = (T.V[:, :, None] * T.V[:, None, :]).reshape(m * m, m * m)  # rows (u_k o u_l)(u_k o u_l)^T
    dK = -0.25 * Yr**2 + 0.5 * Q * Yr + 0.5 * (T.Gam.reshape(J, m * m) @ VV).reshape(J, m, m)
    H = -(K**2) * dK - 0.25 * K * (1.0 + jnp.eye(m, dtype=K.dtype))
    KV = T.KV.reshape(m, m, J, m)  # [k, l, j]: K_j (u_k o u_l)
    du = T.gamma.T[:, :, None] * T.uYK + 2.0 * jnp.einsum("jkl,lc,kljc->kjc", T.Gam, u, KV)
    M = 2.0 * (Yr.reshape(J * m, m).T @ G.reshape(J * m, m)) + u.T @ du.sum(1)
    dlam = 2.0 * jnp.einsum("j,jab,b->a", n, H, lam)
    return _eigen_adjoint(lam, U, M, dlam, jnp.tensordot(n, G, 1), observed)


def _eigen_adjoint(lam: Array, U: Array, M: Array, dlam: Array, nG: Array, observed: bool) -> Array:
    """``dl/dSigma~`` from ``M = U^T dl/dU``, ``dl/dlambda`` and ``sum_j n_j dl/dY~_j``
    (:func:`clt_log_lik_grads`' last formula); exact away from repeated eigenvalues."""
    m = lam.shape[0]
    eye = jnp.eye(m, dtype=lam.dtype)
    F = 1.0 / (eye + lam[None, :] - lam[:, None]) - eye
    return symmetrize(U @ (F * M + jnp.diag(dlam)) @ U.T) - (U @ nG @ U.T) * _not_last(m, lam.dtype, observed)


def _clt_log_lik_exact_jvp(primals: tuple, tangents: tuple) -> tuple[Array, Array]:
    T = _exact_terms(*primals)
    out = jnp.zeros_like(T.value)
    if not isinstance(tangents[0], SymbolicZero):
        observed = _observes_yty(primals[4], primals[1])
        out = out + jnp.vdot(_exact_sigma_grad(T, primals[2], observed), tangents[0])
    if any(not isinstance(t, SymbolicZero) for t in tangents[1:]):  # data, not sampled: JAX's forward mode
        rest = tuple(jnp.zeros_like(p) if isinstance(t, SymbolicZero) else t for p, t in zip(primals[1:], tangents[1:]))
        out = out + jax.jvp(lambda *a: _exact_terms(primals[0], *a).value, primals[1:], rest)[1]
    return T.value, out


clt_log_lik_exact.defjvp(_clt_log_lik_exact_jvp, symbolic_zeros=True)


def sigma_tilde(Sigma_x: Array, theta: Array, sigma2: Array) -> Array:
    """``Sigma~``, the covariance of ``(x, y)`` (module docstring)."""
    c = Sigma_x @ theta
    top = jnp.concatenate([Sigma_x, c[:, None]], 1)
    bottom = jnp.concatenate([c, (theta @ c + sigma2)[None]])[None]
    return jnp.concatenate([top, bottom], 0)


def _augment_key(data: ModelData) -> Array:
    """A key that is a function of the released values (the same for every chain of a fit): the
    wrapping integer sums of their bit patterns, which, unlike a floating-point sum, do not depend
    on the order a compiled program adds in."""
    key = jax.random.PRNGKey(20230725)
    for a in (data.S_tilde, data.z_tilde, data.n) + (() if data.u_tilde is None else (data.u_tilde,)):
        key = jax.random.fold_in(key, lax.bitcast_convert_type(a, jnp.uint32).sum(dtype=jnp.uint32))
    return key


def augment(data: ModelData, key: Array, diagonal: bool = True) -> tuple[Array, Array]:
    """``(W~, s2)``: the release as ``(d + 1) x (d + 1)`` matrices with independent noise added so
    that their noise is the Gaussian orthogonal ensemble of off-diagonal variance
    ``s2 = max(sigma_S^2, sigma_z^2)`` (module docstring); the last diagonal entry is 0, or the
    released ``y^T y`` (``data.u_tilde``; then ``s2`` is at least ``sigma_u^2`` too, and its noise is
    brought to ``2 s2`` like the diagonal's). Without ``diagonal`` the diagonal of ``S~`` and ``y^T y``
    are left as released (:func:`clt_log_lik_exact`)."""
    J, d = data.z_tilde.shape
    sS2, sz2 = data.sigma_S**2, data.sigma_z**2
    yty = released_yty(data)
    s2 = jnp.maximum(sS2, sz2) if yty is None else jnp.maximum(jnp.maximum(sS2, sz2), yty[1] ** 2)
    k_S, k_z = jax.random.split(key)
    iu = np.triu_indices(d)
    root = lambda v: jnp.sqrt(jnp.maximum(v, 0.0))  # compiled, s2 - sS2 may round below 0
    sd_diag = root(2.0 * s2 - sS2) if diagonal else jnp.zeros_like(s2)
    sd = jnp.where(iu[0] == iu[1], sd_diag[:, None], root(s2 - sS2)[:, None])
    E = (
        jnp.zeros((J, d, d), data.S_tilde.dtype)
        .at[:, iu[0], iu[1]]
        .set(sd * jax.random.normal(k_S, (J, iu[0].size), data.S_tilde.dtype))
    )
    E = E + jnp.swapaxes(jnp.triu(E, 1), -1, -2)
    z = data.z_tilde + root(s2 - sz2)[:, None] * jax.random.normal(k_z, (J, d), data.z_tilde.dtype)
    W = jnp.zeros((J, d + 1, d + 1), data.S_tilde.dtype)
    W = W.at[:, :d, :d].set(data.S_tilde + E).at[:, :d, d].set(z).at[:, d, :d].set(z)
    if yty is not None:
        sd_u = root(2.0 * s2 - yty[1] ** 2) if diagonal else jnp.zeros_like(s2)
        k_u = jax.random.fold_in(key, 1)  # S~'s and z~'s keys as without y^T y
        W = W.at[:, d, d].set(yty[0] + sd_u * jax.random.normal(k_u, (J,), data.S_tilde.dtype))
    return W, s2


def reference(data: ModelData, pr: ResolvedPrior) -> CLTReference:
    """The frame and the coordinates' centres and scales from the release (a fixed affine map,
    no Jacobian), the augmented release (:func:`augment`) rotated into the frame (exact: GOE noise
    is orthogonally invariant; where the diagonal keeps its released noise, :func:`exact_noise`,
    ``axes`` records the rotation for :func:`clt_log_lik_exact`) and theta's prior in the frame."""
    J, d = data.z_tilde.shape
    n = data.n.sum()
    Sx0 = pooled_covariance(data.S_tilde.sum(0), n, jnp.max(data.sigma_S))
    noise = jnp.sqrt((data.sigma_S**2).sum()) / (n * jnp.trace(Sx0) / d)
    lam, Q = jnp.linalg.eigh(Sx0)
    lam, Q = lam[::-1], Q[:, ::-1]
    exact = exact_noise(d)
    W, s2 = augment(data, _augment_key(data), diagonal=not exact)
    delta = _released_deficits(data, s2) if exact else jnp.zeros_like(s2)
    Qt = jnp.zeros((d + 1, d + 1), W.dtype).at[:d, :d].set(Q).at[d, d].set(1.0)
    W = symmetrize(jnp.einsum("ka,jkl,lb->jab", Qt, W, Qt))
    v0 = log_cholesky(Q.T @ Sx0 @ Q)
    v0 = v0.at[_diag(d)].add(-1e-6 * jnp.arange(d))  # no tied eigenvalues at the centre (their derivative is 0/0)
    c0 = W[:, :d, d].sum(0) / n
    signal = c0 @ (c0 / lam)
    C_inv = Q.T @ spd_inverse(jnp.asarray(pr.C)) @ Q
    Cm = C_inv @ (Q.T @ jnp.asarray(pr.m))
    k = frame_dim(d)
    zero = jnp.zeros(k, W.dtype)
    T = jnp.ones(k, W.dtype) if k > DENSE_FRAME_MAX_DIM else jnp.eye(k, dtype=W.dtype)
    yty = released_yty(data)
    kappa = None if yty is None else YTY_WHITENING * _yty_sd(*yty, n)
    return CLTReference(Q, v0, jnp.sqrt(1.0 / n + noise**2), signal, W, s2, delta, Qt, C_inv, Cm, zero, T, kappa)


def _yty_sd(u: Array, sigma_u: Array, n: Array) -> Array:
    """The sd of the pooled ``sum_j u~_j / n`` (``n`` the rows of all parties) about ``Sigma~_yy``: the
    Wishart's ``sqrt(2 / n)`` of it (at the released value) and the release noise's."""
    return jnp.sqrt(2.0 * (u.sum() / n) ** 2 / n + (sigma_u**2).sum() / n**2)


def _released_deficits(data: ModelData, s2: Array) -> Array:
    """``(J, k)``: what each released diagonal entry's noise variance falls short of the orthogonal
    ensemble's ``2 s2``: ``2 s2 - sigma_S^2`` for the ``d`` of ``S~_j`` and, where ``y^T y`` was
    released, ``2 s2 - sigma_u^2`` (at least ``sigma_u^2``: :func:`augment`'s ``s2``) last."""
    d = data.z_tilde.shape[-1]
    out = jnp.broadcast_to((2.0 * s2 - data.sigma_S**2)[:, None], (s2.shape[0], d))
    yty = released_yty(data)
    return out if yty is None else jnp.concatenate([out, (2.0 * s2 - yty[1] ** 2)[:, None]], -1)


def exact_noise(d: int) -> bool:
    """Whether the likelihood takes the release noise of the diagonal as released
    (:func:`clt_log_lik_exact`) rather than augmented: up to :data:`EXACT_NOISE_MAX_D` features."""
    return d <= EXACT_NOISE_MAX_D


def _diag(d: int) -> np.ndarray:
    rows, cols = np.tril_indices(d)
    return np.flatnonzero(rows == cols)


def unpack(z: dict, ref: CLTReference, n: Array, pr: ResolvedPrior) -> tuple[Array, Array, Array, Array]:
    """``(L, theta, log|d theta / d b|, sigma2)`` in the frame: ``Sigma_x' = L L^T``,
    ``theta' = mu + chol(P)^{-T} b`` (:func:`theta_conditional`) and ``sigma_y^2`` from its
    coordinate ``ls2`` (:func:`~bayes_dpreg.model.densities.sigma2_of`)."""
    d = ref.W.shape[-1] - 1
    L = from_log_cholesky(ref.v0 + ref.v_scale * z["v"], d)
    sigma2 = sigma2_of(z["ls2"], pr)[0]
    mu, Lp = theta_conditional(L @ L.T, sigma2, ref, n, pr)
    theta = mu + jax.scipy.linalg.solve_triangular(Lp.T, z["b"], lower=False)
    return L, theta, -jnp.log(jnp.diagonal(Lp)).sum(), sigma2


def theta_conditional(
    Sigma: Array, sigma2: Array, ref: CLTReference, n: Array, pr: ResolvedPrior
) -> tuple[Array, Array]:
    """``(mu, chol(P))``: the Gaussian that ``theta`` (in the frame) would have given ``Sigma_x``
    and ``sigma_y^2`` if each ``S_j`` were its mean ``n_j Sigma_x``, its prior ``N(m, C)`` (at ``Sigma_x``
    where it scales ``theta`` by the features: :func:`theta_prior_frame`) times
    ``z~_j ~ N(n_j Sigma_x theta, n_j s Sigma_x + s2_j I)``, ``s = sigma_y^2 + signal``:
    ``P = C^{-1} + sum_j n_j^2 Sigma_x M_j^{-1} Sigma_x``, ``mu = P^{-1} (C^{-1} m + sum_j n_j
    Sigma_x M_j^{-1} z~_j)``, ``M_j = n_j s Sigma_x + s2_j I``. Not the model's conditional (which
    has no closed form), a change of variables: ``theta = mu + chol(P)^{-T} b`` makes ``b`` nearly
    independent of ``(Sigma_x, sigma_y^2)``, where fixing ``theta`` or ``Sigma_x theta`` would make a
    funnel of every direction the release does not resolve. One eigendecomposition of
    ``Sigma_x`` serves every party: ``O(d^3 + J d^2)``.

    Where every party released ``y^T y`` (``ref.kappa``), ``P`` has ``Sigma_x / kappa`` added: the release
    then pins ``theta^T Sigma_x theta + sigma_y^2`` (to ``sqrt(2 / n)`` of it), so along a direction of
    ``Sigma_x`` with an unresolved eigenvalue ``lambda`` the coefficient can only take the slack of
    ``sigma_y^2``, ``|theta_k| <~ sqrt(slack / lambda)``, a funnel in ``(log lambda, theta_k)``. The added
    precision makes the coordinate there ``sqrt(lambda / kappa) theta_k``, on which that bound does not move
    with ``lambda`` (:data:`YTY_WHITENING` sets ``kappa``: ``docs/samplers.md``, *With y^T y released*)."""
    C_inv, Cm = theta_prior_frame(Sigma, ref, pr)
    lam, V = jnp.linalg.eigh(Sigma)  # M_j = V diag(n_j s lam + s2_j) V^T for every party
    g = 1.0 / ((n * (sigma2 + ref.signal))[:, None] * lam + ref.s2[:, None])  # (J, d)
    A = ((n**2)[:, None] * g).sum(0)
    # two products, not one with kappa's term optional: without y^T y the default keeps the order its draws
    # were measured in; summing first moves NUTS's draws in their last digits (21812cb)
    if ref.kappa is None:
        P = C_inv + (V * A * lam**2) @ V.T
    else:
        P = C_inv + (V * (A * lam**2 + lam / ref.kappa)) @ V.T
    Vz = ref.W[:, :-1, -1] @ V  # (J, d): V^T z~_j
    h = Cm + V @ ((n[:, None] * g * Vz).sum(0) * lam)
    Lp = jnp.linalg.cholesky(symmetrize(P))
    return jax.scipy.linalg.cho_solve((Lp, True), h), Lp


def log_density(z: dict, data: ModelData, pr: ResolvedPrior, ref: CLTReference) -> Array:
    """Log-density of ``(v, b, log sigma_y^2)``: the priors of ``Sigma_x`` (with its log-Cholesky
    Jacobian), ``theta`` (:func:`theta_log_prior`, with ``|d theta / d b|``, :func:`unpack`) and
    ``sigma_y^2`` (with the Jacobian of its coordinate, :func:`~bayes_dpreg.model.densities.sigma2_of`),
    and :func:`clt_log_lik`; constants dropped. Tested equal to the model's density plus a
    numerically differentiated log-Jacobian."""
    L, theta, log_jac_theta, sigma2 = unpack(z, ref, data.n, pr)
    Sigma_t = sigma_tilde(L @ L.T, theta, sigma2)
    return (
        sigma_x_log_density(L, pr, ref.Q)
        + theta_log_prior(theta, ref, pr, L @ L.T)
        + log_jac_theta
        + prior_dist(pr, "sigma2").log_prob(sigma2)
        + sigma2_of(z["ls2"], pr)[1]
        + release_log_lik(Sigma_t, data, ref)
    )


def release_log_lik(Sigma_t: Array, data: ModelData, ref: CLTReference) -> Array:
    """The release's CLT likelihood: :func:`clt_log_lik_exact` up to :data:`EXACT_NOISE_MAX_D`
    features (:func:`exact_noise`), :func:`clt_log_lik` above (:func:`clt_log_lik_observed` where
    every party released ``y^T y``)."""
    if exact_noise(ref.W.shape[-1] - 1):
        return clt_log_lik_exact(Sigma_t, ref.W, data.n, ref.s2, ref.delta, ref.axes)
    if released_yty(data) is not None:
        return clt_log_lik_observed(Sigma_t, ref.W, data.n, ref.s2)
    return clt_log_lik(Sigma_t, ref.W, data.n, ref.s2)


def theta_log_prior(theta: Array, ref: CLTReference, pr: ResolvedPrior, Sigma: Array) -> Array:
    """``log N(Q theta; m, C)`` for ``theta`` in the frame, up to a constant: ``-theta^T C'^{-1}
    theta / 2 + theta^T C'^{-1} m'`` with ``C'^{-1} = Q^T C^{-1} Q`` and ``m' = Q^T m`` (``ref``),
    no factorisation of ``C`` per evaluation. Where the prior scales ``theta`` by the features,
    ``log N(Q theta; m, D^-1 C D^-1)`` at ``Sigma_x = Q Sigma Q^T``
    (:func:`~bayes_dpreg.model.densities.theta_prior`, whose normaliser depends on ``Sigma_x``)."""
    if pr.theta_ms is None:
        return theta @ (ref.Cm - 0.5 * (ref.C_inv @ theta))
    return theta_prior(pr, ref.Q @ Sigma @ ref.Q.T).log_prob(ref.Q @ theta)


def theta_prior_frame(Sigma: Array, ref: CLTReference, pr: ResolvedPrior) -> tuple[Array, Array]:
    """``(C'^{-1}, C'^{-1} m')``, ``theta``'s prior precision and its product with the mean in the frame:
    ``ref``'s, or, where the prior scales ``theta`` by the features, ``Q^T D C^{-1} D Q`` at
    ``Sigma_x = Q Sigma Q^T`` (:func:`~bayes_dpreg.model.densities.theta_precision`)."""
    if pr.theta_ms is None:
        return ref.C_inv, ref.Cm
    C_inv = ref.Q.T @ theta_precision(pr, ref.Q @ Sigma @ ref.Q.T) @ ref.Q
    return C_inv, C_inv @ (ref.Q.T @ jnp.asarray(pr.m))


def _ravel(d: int) -> Any:
    p = d * (d + 1) // 2
    return lambda x: {"v": x[:p], "b": x[p : p + d], "ls2": x[p + d]}


def white_log_density(x: Array, data: ModelData, pr: ResolvedPrior, ref: CLTReference) -> Array:
    """:func:`log_density` at ``z = mode + T x`` (``T o x`` for a diagonal frame; an affine map: constant
    Jacobian), the target NUTS sees."""
    return log_density(_ravel(ref.W.shape[-1] - 1)(frame_point(x, ref)), data, pr, ref)


def frame_point(x: Array, ref: CLTReference) -> Array:
    """``z = mode + T x``, or ``mode + T o x`` where the frame is diagonal (``T`` a vector, :func:`laplace`)."""
    return ref.mode + (ref.T * x if ref.T.ndim == 1 else ref.T @ x)


def laplace(data: ModelData, pr: ResolvedPrior, ref: CLTReference, max_iter: int = 200) -> CLTReference:
    """``ref`` with the posterior mode of ``(v, b, log sigma_y^2)`` and ``T = V diag(w)^(-1/2)``
    from the eigendecomposition ``V diag(w) V^T`` of the negative Hessian there (absolute values,
    floored at :data:`CURVATURE_FLOOR`, so that ``T`` exists where the mode is a saddle or flat;
    BFGS, then Newton steps to the mode, :func:`_newton`):
    NUTS on ``x`` with ``z = mode + T x`` sees a posterior near ``N(0, I)`` where the Laplace
    approximation holds, and a diagonal mass matrix adapts the rest.

    Above :data:`DENSE_FRAME_MAX_DIM` coordinates (d >= 24) the frame is diagonal, ``z = mode + T o x``
    with ``T_i^2 = (V diag(1/w) V^T)_ii``, the sds of the same Laplace approximation: the dense map
    costs two ``k x k`` products a gradient (1,326 x 1,326 at d = 50), and the Hessian it whitens is
    the objective's in the separation prior's coordinates (below), not NUTS's target's (whose
    eigenvalues in that basis ran from 0.02 to 9 at d = 50). With the diagonal frame whole fits at
    d = 30 took half the leapfrog steps (``docs/samplers.md``, *A diagonal frame at large d*).

    The mode is BFGS's from the reference point with ``log sigma_y^2`` at its prior's mode
    ``log(b / a)``: where the release leaves ``sigma_y^2`` unresolved its posterior is the prior,
    whose wall at small values (``-b / sigma_y^2``) a search from far above overshoots into (a
    start at ``sigma_y^2 = 1`` ended at ``log sigma_y^2 = -28.6``, against a mode of -8.2, on a
    power-plant replication of the coverage study, and stuck its chains there). Where BFGS returns
    no finite point better than its start, the start is the mode; where the curvature there is
    not finite, ``T = I``.

    Under the separation prior (``Sigma_x = D R D``) the mode and curvature are those of the
    posterior density in the prior's own coordinates ``(log D_kk, R)``, not in ``v``
    (:func:`separation_log_jacobian`): in ``v`` the density has a spike of tiny volume where a
    feature's scale ``D_kk`` collapses along a direction the release does not resolve (at d = 20,
    J = 100, BFGS in ``v`` went to ``D_kk = 2e-7`` with the density still rising, a point of no
    posterior mass), whereas in ``(log D_kk, R)`` the log-normal scales bound it and BFGS converges
    (to the bulk: every ``D_kk`` near its prior's centre there). NUTS still targets the density in
    ``v``; only the frame's centre and scales come from the other.

    The search runs on the host (SciPy's BFGS, :func:`_newton`'s loop in Python) around one
    compiled program (:func:`_frame_program`: the objective with its gradient; the Hessian from its
    forward differences, :func:`_local`): the frame takes milliseconds to compute, and compiled whole
    (BFGS's and Newton's loops with every copy of the log-density their line searches inline) it took
    11 to 17 s to compile at d = 5, J = 5, three quarters of a cold fit's compilation; the objective's
    program takes about 1.7 s (a compiled Hessian took 3.6 s more).
    Its result is the same point to within the search's tolerances (NUTS's target does not depend
    on it: the frame is an affine change of variables)."""
    value_and_grad = frame_value_and_grad(data, pr, ref)
    x0 = np.asarray(_frame_start_program()(data, pr))
    start = _bfgs(value_and_grad, x0, max_iter)
    mode, w, V = _newton(value_and_grad, start)
    ok = bool(np.all(np.isfinite(w)) & np.all(np.isfinite(mode)))
    if x0.shape[0] > DENSE_FRAME_MAX_DIM:
        T = np.sqrt(((V / w) * V).sum(1)) if ok else np.ones_like(x0)  # sqrt diag(V diag(1/w) V^T)
    else:
        T = V / np.sqrt(w) if ok else np.eye(x0.shape[0], dtype=x0.dtype)
    put = lambda a: jax.device_put(np.asarray(a))  # not jnp.asarray: a program of its own
    return ref._replace(mode=put(mode if ok else start), T=put(T))


def _bfgs(value_and_grad: Callable[[np.ndarray], tuple], x0: np.ndarray, max_iter: int) -> np.ndarray:
    """SciPy's BFGS from ``x0`` on ``value_and_grad`` (non-finite values read as ``+inf``); its
    end point where that is finite and no worse than ``x0``, else ``x0``. Above
    :data:`DENSE_FRAME_MAX_DIM` coordinates its limited-memory form, L-BFGS-B (:func:`_search_options`)."""
    import scipy.optimize  # on first use: not at ``import bayes_dpreg`` (tests/test_packaging.py)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = value_and_grad(x)
        if not (np.isfinite(f) and np.all(np.isfinite(g))):
            return np.inf, np.zeros_like(x)
        return float(f), g

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # line searches that give up end the search; the checks below decide
        try:
            x = scipy.optimize.minimize(fun, x0, jac=True, **_search_options(x0.shape[0], max_iter)).x
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return x0
    ok = np.all(np.isfinite(x)) and fun(x)[0] <= fun(x0)[0]
    return x if ok else x0


def _search_options(k: int, max_iter: int) -> dict[str, Any]:
    """``scipy.optimize.minimize``'s method and options for :func:`_bfgs` in ``k`` coordinates. SciPy's
    BFGS updates its dense inverse Hessian by two ``k x k`` matrix products an iteration, ``O(k^3)``: at
    d = 50 (``k = 1,326``) 42 s for 204 evaluations of a few ms. Above :data:`DENSE_FRAME_MAX_DIM` the
    search is L-BFGS-B (30 pairs: ``O(k m)`` an update), stopping on the gradient or ``2 max_iter``
    iterations, since its default rule (a relative decrease below about 2e-9, of an objective near
    1e5) stops 0.1-0.15 nats above BFGS's end at d = 30 and 50; this one 0.03 and 0.013 above it, in 1.3
    and 1.9 s against BFGS's 2.7 and 42 s (``python -m benchmarks.frame_search``,
    ``docs/results/speed/frame_search.md``). :func:`_newton` then polishes either."""
    if k <= DENSE_FRAME_MAX_DIM:
        return {"method": "BFGS", "options": {"maxiter": max_iter}}
    return {"method": "L-BFGS-B", "options": {"maxiter": 2 * max_iter, "maxcor": 30, "ftol": 1e-15}}


def frame_value_and_grad(
    data: ModelData, pr: ResolvedPrior, ref: CLTReference
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The frame's objective (:func:`frame_objective`) and its gradient at a point ``x`` on the host,
    by one compiled program (:func:`_frame_program`), as :func:`laplace`'s search calls them."""
    program = _frame_program(pr.eta is not None)

    def value_and_grad(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, g = program(x, data, pr, ref)
        return np.asarray(f), np.asarray(g)

    return value_and_grad


@functools.cache
def _frame_program(prior_coordinates: bool) -> Callable:
    """A compiled function of ``(x, data, pr, ref)``: the frame's objective and its gradient."""

    def objective(x: Array, data: ModelData, pr: ResolvedPrior, ref: CLTReference) -> Array:
        return frame_objective(data, pr, ref, prior_coordinates)[0](x)

    return fit_jit(jax.value_and_grad(objective), key=("frame", "value_and_grad", prior_coordinates))


@functools.cache
def _frame_start_program() -> Callable:
    return fit_jit(frame_start, key=("frame_start",))  # one program, where run op by op it was seven


def frame_start(data: ModelData, pr: ResolvedPrior) -> Array:
    """The frame's search starts at the reference point with ``sigma_y^2`` at its prior's mode ``b / a``
    (at most half the bound ``sigma2_max``)."""
    d = data.z_tilde.shape[-1]
    x0 = jnp.zeros(d * (d + 1) // 2 + d + 1, data.S_tilde.dtype)
    return x0.at[-1].set(sigma2_start(jnp.asarray(pr.b / pr.a, data.S_tilde.dtype), pr))


def frame_objective(
    data: ModelData, pr: ResolvedPrior, ref: CLTReference, prior_coordinates: bool
) -> tuple[Callable[[Array], Array], Array]:
    """``(neg, x0)``: the function of the flat ``(v, b, log sigma_y^2)`` whose minimum centres
    :func:`laplace`'s frame, ``-log_density``, plus :func:`separation_log_jacobian` with
    ``prior_coordinates`` (the density in the separation prior's coordinates), and the search's
    start, ``log sigma_y^2`` at its prior's mode ``log(b / a)``."""
    d = ref.W.shape[-1] - 1
    ravel = _ravel(d)
    neg = lambda x: -log_density(ravel(x), data, pr, ref)
    if prior_coordinates:
        density = neg
        neg = lambda x: density(x) + separation_log_jacobian(ravel(x)["v"], ref)
    return neg, frame_start(data, pr)


def separation_log_jacobian(v: Array, ref: CLTReference) -> Array:
    r"""``log |d (log D, R) / d v|`` up to a constant, for ``Sigma_x = Q L L^T Q^T = D R D`` with ``L``
    from ``v0 + v_scale v`` (:func:`unpack`): ``Sigma_x`` has ``|d Sigma_x / d (log D, R)| = 2^d
    \prod_k D_kk^{d+1}`` and ``|d Sigma_x / d v| \propto \prod_i L_ii^{d-i+1}`` (:func:`~bayes_dpreg.
    samplers.normalx_nuts.sigma_x_log_density`), so ``-log p(v) + this`` is ``-log p(log D, R)``:

    .. math:: \sum_{i=0}^{d-1} (d - i + 1) \log L_{ii} - (d + 1) \sum_k \log D_{kk}."""
    d = ref.Q.shape[0]
    L = from_log_cholesky(ref.v0 + ref.v_scale * v, d)
    i = jnp.arange(d)
    log_D = 0.5 * jnp.log(jnp.diagonal(ref.Q @ (L @ L.T) @ ref.Q.T))
    return ((d - i + 1.0) * jnp.log(jnp.diagonal(L))).sum() - (d + 1.0) * log_D.sum()


def _local(
    value_and_grad: Callable[[np.ndarray], tuple], x: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``(f, g, w, V)``: the objective, its gradient and its Hessian ``V diag(w) V^T`` at ``x``, ``|w|``
    floored at :data:`CURVATURE_FLOOR`; the Hessian by forward differences of the compiled gradient,
    ``H e_i ~ (g(x + h_i e_i) - g(x)) / h_i``, ``h_i = FD_STEP max(1, |x_i|)``, symmetrised: ``k + 1``
    calls of the program the search already uses, where a compiled Hessian (forward over reverse) was
    a program of its own, the largest of a cold fit (3.6 s of its 11 s of compilation at d = 5, J = 5).
    The frame is a preconditioner (NUTS's target does not depend on it), so the differences' error,
    ``O(h)`` relative, does not reach the draws' law."""
    f, g = value_and_grad(x)
    k = x.shape[0]
    H = fd_hessian(lambda y: value_and_grad(y)[1], x, g, workers=os.cpu_count() or 1)
    if not np.all(np.isfinite(H)):  # laplace then keeps the identity frame
        return float(f), g, np.full(k, np.nan), np.eye(k, dtype=H.dtype)
    w, V = np.linalg.eigh(H)
    return float(f), g, np.maximum(np.abs(w), CURVATURE_FLOOR), V


def fd_hessian(
    grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray, g: np.ndarray | None = None, workers: int = 1
) -> np.ndarray:
    """The Hessian at ``x`` by forward differences of ``grad``, ``H e_i ~ (grad(x + h_i e_i) - grad(x)) / h_i``,
    ``h_i = FD_STEP max(1, |x_i|)``, symmetrised (``g``: ``grad(x)`` where already known). From
    :data:`FD_THREADS_MIN_DIM` coordinates its ``k`` rows are computed by ``workers`` threads, row ``i`` by thread
    ``i mod workers`` (``grad`` a compiled program, which runs outside the GIL, in the caller's JAX context:
    :func:`~bayes_dpreg.runtime.threads.callers_context`): the same rows, each from the same call, so the same
    matrix."""
    g = np.asarray(grad(x)) if g is None else g
    k = x.shape[0]
    h = FD_STEP * np.maximum(1.0, np.abs(x))

    def row(i: int) -> np.ndarray:
        e = np.zeros_like(x)
        e[i] = h[i]
        return (np.asarray(grad(x + e)) - g) / h[i]

    if workers > 1 and k >= FD_THREADS_MIN_DIM:
        context = callers_context()

        def rows(first: int) -> list[np.ndarray]:
            with context():
                return [row(i) for i in range(first, k, workers)]

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bayes_dpreg-hessian") as pool:
            parts = list(pool.map(rows, range(workers)))
        H = np.stack([parts[i % workers][i // workers] for i in range(k)])
    else:
        H = np.stack([row(i) for i in range(k)])
    return 0.5 * (H + H.T)


def _newton(value_and_grad: Callable[[np.ndarray], tuple], x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Saddle-free Newton steps ``-V diag(1/w) V^T grad`` (:func:`_local`) from ``x``, each
    the first of 1, 1/2, 1/4, 1/8 times it that lowers ``neg``, until the step is shorter than
    :data:`NEWTON_TOL` posterior sds (its norm in the frame ``x = V diag(w)^(-1/2) u``), no
    fraction lowers ``neg``, or after :data:`NEWTON_STEPS`; returns the point and its curvature.
    BFGS can stop far from the mode where the log-density is large (jax.scipy's did, its line search
    loses precision: at d = 20, J = 100 it stopped 15 sds away, with a negative curvature, and
    NUTS's first 100 iterations took 85 s); where it converged, this costs the one Hessian the
    frame needs anyway. ``value_and_grad(x)``: the objective's
    (:func:`frame_value_and_grad`), for the curvature (:func:`_local`) and the line search."""
    for i in range(NEWTON_STEPS + 1):
        f, g, w, V = _local(value_and_grad, x)
        u = V.T @ g
        if i == NEWTON_STEPS or not np.sqrt(np.sum(u**2 / w)) > NEWTON_TOL:
            break
        step = -V @ (u / w)
        for t in (1.0, 0.5, 0.25, 0.125):
            trial = value_and_grad(x + t * step)[0]
            if np.isfinite(trial) and trial < f:
                x = x + t * step
                break
        else:
            break
    return x, w, V


NEWTON_STEPS = 8
NEWTON_TOL = 0.25  # sds: a frame centred this near the mode starts NUTS as well as the mode itself
CURVATURE_FLOOR = 1e-2  # at most 10 units of z per unit of x: BFGS may stop where the curvature is negative or flat
DENSE_FRAME_MAX_DIM = 300  # above (d >= 24) no k x k operation: the search L-BFGS-B (BFGS's update costs more than
# the evaluations there) and the frame diagonal
FD_THREADS_MIN_DIM = 100  # coordinates from which fd_hessian's rows run on a thread a core (d >= 13); a Hessian on 2
# cores, one thread / two: 0.010 / 0.010 s at d = 5, 0.06 / 0.06 s at d = 13, 0.24 / 0.19 s at d = 20, 2.8 / 1.8 s at
# d = 50 (each call's Python part holds the GIL; docs/results/speed/overheads_xeon.md)
FD_STEP = 1e-5  # the Hessian's forward differences (relative to |x_i| beyond 1): truncation ~1e-5, rounding ~1e-11


class CLTData(NamedTuple):
    """The kernel's data: the release and its Laplace frame (:func:`prepare`)."""

    model: ModelData
    ref: CLTReference


def prepare(data: ModelData, pr: ResolvedPrior, settings: NutsSettings) -> CLTData:
    """The Laplace frame (:func:`laplace`), once per data set for all chains (on the host,
    around compiled programs: not traceable)."""
    del settings
    return CLTData(data, laplace(data, pr, _reference_program()(data, pr)))


@functools.cache
def _reference_program() -> Callable:
    return fit_jit(reference, key=("reference",))


def init(key: Array, cdata: CLTData, pr: ResolvedPrior, settings: NutsSettings) -> NCState:
    """A dispersed start in the Laplace frame: ``x ~ N(0, I)``, about one posterior sd from
    the mode in every direction where the Laplace approximation holds."""
    data, ref = cdata
    J, d = data.z_tilde.shape
    p = d * (d + 1) // 2
    k_v, k_nuts = jax.random.split(key)
    dtype = data.S_tilde.dtype
    x0 = jax.random.normal(k_v, (p + d + 1,), dtype)
    init_kernel, _ = nuts_kernels(settings, white_log_density)
    state = init_kernel(
        x0,
        settings.num_warmup,
        target_accept_prob=settings.target_accept_prob,
        max_tree_depth=settings.max_tree_depth,
        dense_mass=settings.dense_mass == "full",
        model_args=(data, pr, ref),
        rng_key=k_nuts,
    )
    return NCState(state, ref)


def step(state: NCState, cdata: CLTData, pr: ResolvedPrior, settings: NutsSettings) -> NCState:
    """One NUTS transition (adapting step size and mass matrix during warm-up)."""
    sample = sample_kernel(settings, white_log_density, init, cdata, pr)
    return NCState(sample(state.hmc, model_args=(cdata.model, pr, state.ref)), state.ref)


def draws(state: NCState, cdata: CLTData, pr: ResolvedPrior, key: Array) -> dict:
    """``theta``, ``sigma2``, ``Sigma_x`` of the state, in the features' frame."""
    del key
    ref = state.ref
    L, theta, _, sigma2 = unpack(_ravel(ref.W.shape[-1] - 1)(frame_point(state.hmc.z, ref)), ref, cdata.model.n, pr)
    Q = state.ref.Q
    return {"theta": Q @ theta, "sigma2": sigma2, "Sigma_x": symmetrize(Q @ L @ L.T @ Q.T)}


KERNEL = ChainKernel(init, step, draws, info, vectorize=False, prepare=prepare, threads=True)


def settings(options: dict, d: int, num_warmup: int) -> tuple[NutsSettings, dict]:
    """``normalx-nuts``' settings (:func:`~bayes_dpreg.samplers.normalx_nuts.settings`) with this
    sampler's defaults (:func:`nuts_defaults`)."""
    return nuts_settings({**nuts_defaults(d), **options}, d, num_warmup)


def nuts_defaults(d: int, yty: bool = False) -> dict[str, Any]:
    """This sampler's NUTS settings where the caller gives none, for ``fit`` (:func:`run`) and SBC
    (:func:`settings`) alike: target acceptance (:func:`target_accept`) and tree depth (:func:`max_tree_depth`)."""
    return {"target_accept_prob": target_accept(d, yty), "max_tree_depth": max_tree_depth(d)}


def target_accept(d: int, yty: bool = False) -> float:
    """NUTS's default target acceptance: :data:`TARGET_ACCEPT` up to :data:`TARGET_ACCEPT_MAX_D`
    features, where 0.8 left single divergent transitions (2 of 6 seeds of a d = 2, J = 3 release,
    ``tests/test_convergence.py``; 0-15% of fits a cell in the coverage suites) and 0.9 costs 15-20%
    more time a fit (d = 5, J = 5; d = 10, J = 20); 0.8 above, where 0.9 nearly doubles the leapfrog
    steps (d = 20, J = 20: 27 against 15 an iteration) and the probes had no divergence at 0.8
    (``docs/samplers.md``). :data:`TARGET_ACCEPT_YTY` up to :data:`TARGET_ACCEPT_MAX_D` features where every
    party released ``y^T y`` (``yty``): the funnel :func:`theta_conditional` describes is straightened there,
    not removed (with it, 0.95 left divergent transitions in 3 times as many fits; 0.9 more still); above, not
    measured."""
    if yty and d <= TARGET_ACCEPT_MAX_D:
        return TARGET_ACCEPT_YTY
    return TARGET_ACCEPT if d <= TARGET_ACCEPT_MAX_D else TARGET_ACCEPT_LARGE_D


def frame_dim(d: int) -> int:
    """Coordinates NUTS moves: ``Sigma_x``'s log-Cholesky factor, ``b`` and ``log sigma_y^2``."""
    return d * (d + 1) // 2 + d + 1


def max_tree_depth(d: int) -> int:
    """NUTS's default ``max_tree_depth``: NumPyro's 10 where the Laplace frame is dense (d <= 23), and
    :data:`MAX_TREE_DEPTH_LARGE_D` (trajectories of at most 31 leapfrog steps) where it is diagonal
    (:data:`DENSE_FRAME_MAX_DIM`, d >= 24). There most of ``Sigma_x``'s coordinates are left to its prior by
    the release, and what mixes slowest is the log-density itself (E-BFMI 0.2-0.4 at d = 50): a transition
    moves it by about the momentum's fresh kinetic energy whatever the trajectory's length, so the draws
    NUTS's doublings to 63 steps bought were no better for ``theta``'s slowest coefficients than 31 steps'
    (``docs/samplers.md``, *Trajectories of at most 31 steps at large d*). Any depth leaves the target as
    it is: a capped NUTS transition is reversible with respect to it (SBC:
    ``tests/test_normalx_clt.py::test_sbc_with_trajectories_capped``)."""
    return MAX_TREE_DEPTH if frame_dim(d) <= DENSE_FRAME_MAX_DIM else MAX_TREE_DEPTH_LARGE_D


MAX_TREE_DEPTH = 10  # NumPyro's
MAX_TREE_DEPTH_LARGE_D = 5
TARGET_ACCEPT = 0.9
TARGET_ACCEPT_MAX_D = 10
TARGET_ACCEPT_LARGE_D = 0.8
TARGET_ACCEPT_YTY = 0.98  # y^T y released, up to TARGET_ACCEPT_MAX_D features (docs/samplers.md, *With y^T y released*)
YTY_WHITENING = 0.05  # kappa over the sd of the pooled y^T y / n (theta_conditional; the same section)
NUM_WARMUP = 250  # in the Laplace frame the posterior starts near N(0, I): 250 warm-up iterations gave the
# posterior of 500 within Monte Carlo error on the coverage suites' releases (studies/warmup.py, docs/samplers.md)
EXACT_NOISE_MAX_D = 4  # measured at d = 2-4 (docs/samplers.md); above, the augmented likelihood until measured there
NUM_SAMPLES = 250  # draws a chain before the first convergence check: 4 x 250 = 1,000 draws give the ESS of 400
# (100 a chain) that the check asks for where NUTS mixes well, as it does at small d (docs/samplers.md: *Draws*)
EXTEND = 7  # chains that mix too slowly go on, up to seven times, for num_samples more draws: at most 2,000 a chain
# at NUM_SAMPLES (three rounds, 1,000, until 2026-12-07: where the release leaves sigma_y^2 to its heavy-tailed
# prior, as on air quality split in blocks, one fit in ten still had R-hat above 1.01 there; docs/samplers.md, *Draws*)
EXTEND_LARGE_D = 5  # where trajectories are capped (max_tree_depth): at most 1,500 draws of 31 steps, about the
# leapfrog steps 1,000 uncapped draws of 47-63 took at d = 50 (docs/samplers.md, *Trajectories of at most 31 steps*)


def extend_rounds(d: int, num_samples: int = NUM_SAMPLES) -> int:
    """Rounds of ``num_samples`` draws a fit may add: as many as keep a chain within :data:`EXTEND`'s
    2,000 draws at :data:`NUM_SAMPLES` (1,500, :data:`EXTEND_LARGE_D`, where :func:`max_tree_depth` caps the
    trajectories, d >= 24, where a round costs ten seconds or more on two cores), at most that many rounds and
    at least one. A fit given ``num_samples=1000`` may draw 2,000 a chain, not 8,000; one given 100, 800
    (each round ends in a convergence check). The cap is of draws, not of time: a chain's draws cost what its
    trajectories do."""
    rounds = EXTEND if max_tree_depth(d) == MAX_TREE_DEPTH else EXTEND_LARGE_D
    draws = NUM_SAMPLES * (1 + rounds)
    return min(rounds, max(1, draws // int(num_samples) - 1))


def run(
    st: StackedStats, pr: ResolvedPrior, key: Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    """``fit``'s entry point; options as :func:`~bayes_dpreg.samplers.normalx_nuts.run_nuts` (also its
    ``data``, which ``normalx-pooled`` gives), with ``extend`` on (:func:`extend_rounds`): the chains draw
    ``num_samples`` (:data:`NUM_SAMPLES`) at a time until the draws of ``theta`` and ``sigma_y^2`` have
    R-hat at most 1.01 and bulk and tail ESS of 100 a chain (Vehtari et al. 2021), or ``extend`` rounds
    have run. Where the noise leaves ``sigma_y^2`` to its heavy-tailed prior, or at large d, one round
    often falls short; where NUTS mixes well one is enough."""
    description = "NUTS (NumPyro) in the Laplace frame of (Sigma_x, theta, sigma_y^2); S_j integrated out (CLT)"
    options = {**nuts_defaults(st.d, SAMPLER.reads_yty(st)), "extend": extend_rounds(st.d, num_samples), **options}
    return run_nuts(KERNEL, description, st, pr, key, num_chains, num_samples, num_warmup, **options)


SAMPLER = Sampler(
    name="normalx-clt",
    label="MCMC-normalX (CLT, NUTS)",
    summary="the normalX model with S_j integrated out under the Wishart's CLT, by NUTS: O(J d^3) a step",
    run=run,
    kind="mcmc",
    needs_wishart=True,
    sigma_x_priors=("iw", "lkj"),
    sigma2_bound=True,
    theta_scales=("release", "features"),
    centred_features=True,
    models_release_noise=True,
    num_warmup=NUM_WARMUP,
    num_samples=NUM_SAMPLES,
    kernel=KERNEL,
    data=model_data,
    settings=settings,
    integrates_S=True,
    uses_yty=True,
    options=NUTS_OPTIONS,
)
