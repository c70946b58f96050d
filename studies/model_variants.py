"""Changes to ``normalx-nuts`` tried against the default's remaining failures, refitted on the coverage
study's replications. None is adopted; this records what each did.

    python -m studies.model_variants VARIANT CELL [CELL ...] [--reps 10] [--workers 2]
        [--target-accept 0.8] [--out docs/results/coverage]

Each variant patches :mod:`bayes_dpreg.samplers.normalx_nuts` inside the worker processes only (the
package is unchanged), then fits exactly as ``studies/coverage.py`` does (same data, split and
release noise, seed 2026, the cell's prior, ``fit`` defaults):

* ``matrix-f``: the paper's-simulation failure (``docs/prior.md``) comes from
  ``Sigma_x ~ IW(diag(E[x^2]), d + 1)`` forbidding nearly collinear features. Give ``Lambda`` a
  Wishart hyperprior ``W(Lambda / k, k)`` (mean ``Lambda``, ``k = d``) and integrate it out: the
  matrix-F prior of Mulder & Pericchi (2018), ``p(Sigma) ~ |Sigma|^{(k-d-1)/2}
  |I + k Lambda^{-1} Sigma|^{-(kappa+k)/2}``, whose precision has polynomial tails (the paper
  draws its truth the same way: ``Lambda = V^T V ~ W(I, d)``). With the log-Cholesky Jacobian the
  factor NUTS sees is ``sum_i (k - i) log L_ii - (kappa + k)/2 log|I + (chol(Lambda/k)^{-1} L)^T
  (chol(Lambda/k)^{-1} L)|``.
* ``softplus``: the same model (the IW prior), but the diagonal of ``Sigma_x``'s Cholesky factor is
  ``L0_ii softplus(t + 1) / softplus(1)`` instead of ``L0_ii exp(t)`` (``t = v_scale z_ii``):
  exponential below the pooled estimate, linear above it, so that the ``S~`` likelihood's wall on
  a direction the release leaves unresolved is not exponentially stiff in the coordinate. Log-
  Jacobian ``log sigmoid(t + 1)`` in place of ``log L_ii``.
* ``matrix-f+softplus``: both.
* ``lambda/100``: the default's ``Lambda = diag(E[x_k^2])`` divided by 100 (no patch): an
  inverse-Wishart that allows eigenvalues of ``Sigma_x`` 100 times smaller, the crude version of
  ``matrix-f``.
* ``lkj``: a separation prior in place of the inverse-Wishart (Barnard, McCulloch & Meng 2000):
  ``Sigma_x = D Omega D``, ``log D_kk ~ N(log sqrt(E[x_k^2]), 1)``, ``Omega ~ LKJ(1)`` (uniform
  over correlation matrices), sampled in ``(log D, w)`` with ``chol(Omega)`` NumPyro's
  ``CorrCholeskyTransform(w)`` (its log-Jacobian added), both centred at the pooled estimate. Its
  density near a singular ``Omega`` is polynomial: no doubly exponential wall in a direction the
  release leaves free.
* ``dispersion``: the bike-sharing blocks' heterogeneity (``docs/prior.md``): ``S_j = L (n_j I +
  sqrt(phi) (W_j - n_j I)) L^T`` with ``W_j ~ W(I, n_j)`` (the non-centred coordinates unchanged),
  so ``S_j`` has mean ``n_j Sigma_x`` and ``phi`` times the Wishart's covariance;
  ``log phi ~ N(0, 1)``, a NUTS coordinate.
* ``party-sigma``: the bike-sharing blocks' heterogeneity again, as a hierarchy: each party has its
  own feature covariance, ``S_j ~ W(Sigma_j, n_j)``, ``Sigma_j ~ IW((nu - d - 1) Sigma_x, nu)`` (mean
  ``Sigma_x``), integrated out in closed form: with ``W_j = L^{-1} S_j L^{-T}`` and ``k = nu - d - 1``,
  ``p(W_j) = Gamma_d((n_j + nu)/2) / (Gamma_d(n_j/2) Gamma_d(nu/2)) k^{nu d/2} |W_j|^{(n_j-d-1)/2}
  |W_j + k I|^{-(n_j + nu)/2}`` (the compound Wishart, a matrix F), the Wishart as ``nu -> inf``. With
  the Bartlett and log-diagonal Jacobians: ``sum_i (n_j - i) log R_j,ii - (n_j + nu)/2 log|R_j R_j^T
  + k I|`` plus the ``nu`` terms. ``log k ~ N(log 300, 3^2)`` (from Sigma_j's spread around Sigma_x
  of order 100% down to 0.5%), a NUTS coordinate of the level block.
* ``sigma2-cap``: the bike-sharing blocks' stuck chains (``studies/stuck_chains.py``) sit at
  ``sigma_y^2`` up to 10^4 times the truth's. The declared bound caps it: ``|y| <= y_bound``
  implies ``sigma_y^2 = Var(y | x) <= y_bound^2`` (of the clipped ``y`` the release saw), so the
  variant gives zero density above ``y_bound^2`` (largest over parties); NUTS rejects a proposal
  past the wall.
* ``sigma2-cap-smooth``: the same truncated posterior without a wall: the coordinate ``u`` gives
  ``sigma_y^2 = B sigmoid(u - log B)`` with ``B = y_bound^2`` (about ``exp(u)``, the default's
  coordinate, well below ``B``), log-Jacobian ``log sigma_y^2 + log sigmoid(log B - u)``.

* ``yy``: pins ``sigma_y^2`` with one more released number per party, ``w~_j = ||y_j||^2 +
  N(0, sigma_w^2)`` (the design in ``docs/prior.md``, *Heterogeneous parties*). Here the study
  releases it, with its own Gaussian mechanism at the cell's ``(epsilon, delta)`` (replace-one-row
  sensitivity ``y_bound^2``; the parties' total budget is the composition of two such releases),
  and the variant adds ``log p(w~ | z~, S, sigma_y^2)``, moment-matched: with ``theta | z~, S,
  sigma_y^2 ~ N(mu, V)`` (eq. 12), ``Sig_j = sigma_y^2 S_j + sigma_z,j^2 I``, the true ``z_j = B_j
  theta + sigma_y^2 S_j Sig_j^{-1} z~_j + eta_j`` with ``B_j = sigma_z,j^2 Sig_j^{-1} S_j`` and
  ``eta_j ~ N(0, sigma_y^2 sigma_z,j^2 S_j Sig_j^{-1})`` independent, so the ``z_j`` are jointly
  Gaussian (mean ``a_j``, covariances ``Sig_jk = B_j V B_k^T + [j = k] P_j``); ``||y_j||^2 = q_j +
  RSS_j`` with ``q_j = z_j^T S_j^{-1} z_j`` (moments of a Gaussian quadratic form) and ``RSS_j ~
  sigma_y^2 chi^2_{n_j - d}`` independent; ``w~ ~ N(E q + sigma_y^2 (n - d), Cov q + diag(2
  sigma_y^4 (n - d) + sigma_w^2))``. ``theta`` is still drawn from eq. (12), which leaves out what
  ``w~`` says about it (little: ``q_j``'s sd is hundreds where ``sigma_y^2 (n_j - d)`` is tens).

* ``theta-scale``: the RMSE side of the paper's-simulation failure: the autoscaled ``C`` is built to
  allow any signal the bound on ``|y|`` permits, 5-20 times the paper's truths, and in a direction the
  release leaves open the posterior mean wanders within it. A global scale learnt from the data:
  ``theta ~ N(m, tau^2 C)``, ``tau ~ half-Cauchy(0, 1)`` (Gelman 2006; Polson & Scott 2012), ``log tau``
  a NUTS coordinate of the level block; theta is still integrated out (``C`` scaled in the collapsed
  likelihood) and drawn from eq. (12) at each draw's ``tau``. Meant for the default (``"auto"``) ``C``;
  the study runs it on default-prior cells only.
* ``theta-scale+release-lambda``: ``theta-scale`` with ``Lambda = bd.release_lambda(stats)``, the
  Sigma_x prior that restores the paper cells' coverage at a cost in error (``docs/prior.md``).

* ``extend2``: not a model change: ``fit(..., extend=2)``, which continues chains that mix too
  slowly (and do not sit in separate modes) for up to twice ``num_samples`` more draws.

Rows are appended to ``model_variants_replications.csv`` under ``--out`` (a rerun skips what is
there); ``model_variants.md`` compares each variant with the default's rows of the coverage run on
the same replications.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
from pathlib import Path

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows
from lab.tasks import run_tasks
from studies import coverage as cov

SEED = 2026
VARIANTS = (
    "matrix-f",
    "softplus",
    "matrix-f+softplus",
    "dispersion",
    "lambda/100",
    "lkj",
    "sigma2-cap",
    "sigma2-cap-smooth",
    "party-sigma",
    "yy",
    "extend2",
    "theta-scale",
    "theta-scale+release-lambda",
)
YY: dict = {}  # the ``yy`` variant: this fit's released ||y_j||^2 and its noise sd (set by ``prepare``)
PHI_SD = 1.0
PARTY_LOG_K, PARTY_LOG_K_SD = float(np.log(300.0)), 3.0
LKJ_ETA, LKJ_SCALE_SD = 1.0, 1.0


def _matrix_f(nn) -> None:
    import jax
    import jax.numpy as jnp

    def sigma_x_log_density(L, pr):
        d = L.shape[-1]
        k = float(d)
        i = jnp.arange(d)
        A = jax.scipy.linalg.solve_triangular(jnp.linalg.cholesky(jnp.asarray(pr.Lambda) / k), L, lower=True)
        logdet = 2.0 * jnp.log(jnp.diagonal(jnp.linalg.cholesky(jnp.eye(d) + A.T @ A))).sum()
        return ((k - i) * jnp.log(jnp.diagonal(L))).sum() - 0.5 * (pr.kappa + k) * logdet

    nn.sigma_x_log_density = sigma_x_log_density


def _install_cholesky(nn, L_of) -> None:
    """Replace ``normalx_nuts``' map from ``v`` to ``Sigma_x``'s Cholesky factor (the log-Cholesky
    ``from_log_cholesky(v0 + v_scale v)``) by ``L_of(xv, ref, d)`` in both places it enters:
    the partial centring of the ``c_j`` (``_c_of``) and :func:`unpack`."""
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.model.linalg import from_log_cholesky

    def _c_of(xv, F, data, ref):
        d = F.shape[-1]
        rows, cols, diag = nn._tril_indices(d)
        R = jax.scipy.linalg.solve_triangular(L_of(xv, ref, d), F, lower=True) / jnp.sqrt(data.n)[:, None, None]
        r = R[..., rows, cols]
        return r.at[..., diag].set(jnp.log(r[..., diag])) / nn._c_scale(data, d)

    def unpack(z, data, ref, pr):
        d = data.z_tilde.shape[1]
        L = L_of(z["v"], ref, d)
        c = z["c"] + ref.omega * _c_of(z["v"], ref.F0, data, ref)
        R = jnp.sqrt(data.n)[:, None, None] * from_log_cholesky(c * nn._c_scale(data, d), d)
        F = L @ R
        return L, R, F @ jnp.swapaxes(F, -1, -2), jnp.exp(z["ls2"])

    nn._c_of, nn.unpack = _c_of, unpack


def _softplus(nn) -> None:
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.model.linalg import from_log_cholesky

    sp1 = float(jax.nn.softplus(1.0))

    def diagonal(xv, ref, d):
        return ref.v_scale * xv[..., nn._tril_indices(d)[2]]

    def L_of(xv, ref, d):
        diag, t = nn._tril_indices(d)[2], diagonal(xv, ref, d)
        w = (ref.v0 + ref.v_scale * xv).at[..., diag].set(ref.v0[..., diag] + jnp.log(jax.nn.softplus(t + 1.0) / sp1))
        return from_log_cholesky(w, d)

    def log_density(z, data, pr, ref):
        d = data.z_tilde.shape[1]
        L, R, S, sigma2 = nn.unpack(z, data, ref, pr)
        jac = jax.nn.log_sigmoid(diagonal(z["v"], ref, d) + 1.0).sum() - jnp.log(jnp.diagonal(L)).sum()
        return (
            nn.sigma_x_log_density(L, pr)
            + nn.wishart_log_density(R, data.n)
            + nn.observed_log_density(S, sigma2, z["ls2"], data, pr)
            + jac
        )

    _install_cholesky(nn, L_of)
    nn.log_density = log_density


def _install_level_coordinate(nn, name: str, centre: float, spread: float) -> None:
    """Give ``normalx_nuts``' NUTS state one more coordinate ``name`` (started at ``centre + spread
    N(0, 1)``), dense with the level block (``v``, ``log sigma2``)."""
    import jax
    import jax.numpy as jnp

    def init(key, data, pr, settings):
        J, d = data.z_tilde.shape
        p = d * (d + 1) // 2
        k_v, k_c, k_s, k_p, k_nuts = jax.random.split(key, 5)
        dtype = data.S_tilde.dtype
        z0 = {
            "v": jax.random.normal(k_v, (p,), dtype),
            "c": jax.random.normal(k_c, (J, p), dtype),
            "ls2": jnp.log(jnp.asarray(pr.b, dtype)) + jax.random.normal(k_s, (), dtype),
            name: centre + spread * jax.random.normal(k_p, (), dtype),
        }
        ref = nn.reference(data)
        init_kernel, _ = nn.nuts_kernels(settings)
        state = init_kernel(
            z0,
            settings.num_warmup,
            target_accept_prob=settings.target_accept_prob,
            max_tree_depth=settings.max_tree_depth,
            dense_mass=nn.mass_matrix(settings.dense_mass, p * (J + 1) + 2, p + 2, ("v", "ls2", name)),
            model_args=(data, pr, ref),
            rng_key=k_nuts,
        )
        return nn.NCState(state, ref)

    nn.init = init
    nn.KERNEL = nn.KERNEL._replace(init=init)


def _party_sigma(nn) -> None:
    import jax.numpy as jnp
    from jax.scipy.special import multigammaln

    def compound_log_density(R, n, log_k):
        d = R.shape[-1]
        k, i = jnp.exp(log_k), jnp.arange(d)
        nu = k + d + 1.0
        log_R = jnp.log(jnp.diagonal(R, axis1=-2, axis2=-1))
        chol = jnp.linalg.cholesky(R @ jnp.swapaxes(R, -1, -2) + k * jnp.eye(d))
        logdet = 2.0 * jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        per_party = (
            ((n[:, None] - i) * log_R).sum(-1)
            - 0.5 * (n + nu) * logdet
            + 0.5 * nu * d * log_k
            + multigammaln(0.5 * (n + nu), d)
            - multigammaln(0.5 * nu, d)
        )
        return per_party.sum()

    def log_density(z, data, pr, ref):
        L, R, S, sigma2 = nn.unpack(z, data, ref, pr)
        prior = -0.5 * ((z["lk"] - PARTY_LOG_K) / PARTY_LOG_K_SD) ** 2
        return (
            nn.sigma_x_log_density(L, pr)
            + compound_log_density(R, data.n, z["lk"])
            + nn.observed_log_density(S, sigma2, z["ls2"], data, pr)
            + prior
        )

    nn.log_density = log_density
    _install_level_coordinate(nn, "lk", PARTY_LOG_K, 0.3)


def _dispersion(nn) -> None:
    import jax.numpy as jnp

    from bayes_dpreg.model.linalg import from_log_cholesky

    def unpack(z, data, ref, pr):
        d = data.z_tilde.shape[1]
        L = from_log_cholesky(ref.v0 + ref.v_scale * z["v"], d)
        c = z["c"] + ref.omega * nn._c_of(z["v"], ref.F0, data, ref)
        R = jnp.sqrt(data.n)[:, None, None] * from_log_cholesky(c * nn._c_scale(data, d), d)
        F = L @ R
        sp = jnp.exp(0.5 * z["lphi"])
        S = sp * (F @ jnp.swapaxes(F, -1, -2)) + ((1.0 - sp) * data.n)[:, None, None] * (L @ L.T)
        return L, R, S, jnp.exp(z["ls2"])

    def log_density(z, data, pr, ref):
        L, R, S, sigma2 = unpack(z, data, ref, pr)
        return (
            nn.sigma_x_log_density(L, pr)
            + nn.wishart_log_density(R, data.n)
            + nn.observed_log_density(S, sigma2, z["ls2"], data, pr)
            - 0.5 * (z["lphi"] / PHI_SD) ** 2
        )

    nn.unpack, nn.log_density = unpack, log_density
    _install_level_coordinate(nn, "lphi", 0.0, 0.3)


def _lkj(nn) -> None:
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import CorrCholeskyTransform

    from bayes_dpreg.model.linalg import from_log_cholesky

    corr = CorrCholeskyTransform()

    def centre(ref, d):
        L0 = from_log_cholesky(ref.v0, d)
        tau0 = jnp.sqrt((L0**2).sum(-1))
        return jnp.log(tau0), corr.inv(L0 / tau0[:, None])

    def parts(xv, ref, d):
        lt0, w0 = centre(ref, d)
        lt, w = lt0 + ref.v_scale * xv[:d], w0 + ref.v_scale * xv[d:]
        return lt, w, corr(w)

    def L_of(xv, ref, d):
        lt, _, L_omega = parts(xv, ref, d)
        return jnp.exp(lt)[:, None] * L_omega

    def log_density(z, data, pr, ref):
        d = data.z_tilde.shape[1]
        L, R, S, sigma2 = nn.unpack(z, data, ref, pr)
        lt, w, L_omega = parts(z["v"], ref, d)
        centre_lt = 0.5 * jnp.log(jnp.diagonal(jnp.asarray(pr.Lambda)))  # log sqrt(E[x_k^2])
        prior = (
            (-0.5 * ((lt - centre_lt) / LKJ_SCALE_SD) ** 2).sum()
            + dist.LKJCholesky(d, LKJ_ETA).log_prob(L_omega)
            + corr.log_abs_det_jacobian(w, L_omega)
        )
        return prior + nn.wishart_log_density(R, data.n) + nn.observed_log_density(S, sigma2, z["ls2"], data, pr)

    _install_cholesky(nn, L_of)
    nn.log_density = log_density


def _sigma2_cap(nn) -> None:
    import jax.numpy as jnp

    uncapped = nn.observed_log_density

    def observed_log_density(S, sigma2, ls2, data, pr):
        return jnp.where(sigma2 > data.y_bound**2, -jnp.inf, uncapped(S, sigma2, ls2, data, pr))

    nn.observed_log_density = observed_log_density


def _sigma2_cap_smooth(nn) -> None:
    import jax
    import jax.numpy as jnp

    uncapped_unpack = nn.unpack

    def log_sigma2(u, data):
        """``log sigma_y^2`` and the log-Jacobian ``log(d sigma_y^2 / du)``."""
        log_b = 2.0 * jnp.log(data.y_bound)
        ls2 = log_b + jax.nn.log_sigmoid(u - log_b)
        return ls2, ls2 + jax.nn.log_sigmoid(log_b - u)

    def unpack(z, data, ref, pr):
        L, R, S, _ = uncapped_unpack(z, data, ref, pr)
        return L, R, S, jnp.exp(log_sigma2(z["ls2"], data)[0])

    def log_density(z, data, pr, ref):
        L, R, S, sigma2 = unpack(z, data, ref, pr)
        return (
            nn.sigma_x_log_density(L, pr)
            + nn.wishart_log_density(R, data.n)
            + nn.observed_log_density(S, sigma2, log_sigma2(z["ls2"], data)[1], data, pr)
        )

    nn.unpack, nn.log_density = unpack, log_density


def yy_log_lik(S, sigma2, data, pr):
    """``log p(w~ | z~, S, sigma_y^2)``, moment-matched (the ``yy`` variant, module docstring)."""
    from jax.scipy.stats import multivariate_normal

    mean, cov = yy_moments(S, sigma2, data, pr)
    return multivariate_normal.logpdf(data.w, mean, cov)


def yy_moments(S, sigma2, data, pr):
    """Mean and covariance of ``w~ = (||y_j||^2 + noise)_j`` given ``z~, S, sigma_y^2`` (the ``yy``
    variant; ``tests/test_model_variants.py`` checks them by simulation)."""
    import jax.numpy as jnp

    from bayes_dpreg.model.closed_form import theta_conditional
    from bayes_dpreg.model.linalg import spd_inverse

    J, d = data.z_tilde.shape
    sz2 = data.sigma_z**2
    eye = jnp.eye(d, dtype=S.dtype)
    Sig = sigma2 * S + sz2[:, None, None] * eye
    post = theta_conditional(S, data.z_tilde, sigma2, sz2, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)))
    Sig_inv_S = jnp.linalg.solve(Sig, S)  # symmetric: Sig is a polynomial in S
    B = sz2[:, None, None] * Sig_inv_S
    a = B @ post.mean + sigma2 * jnp.einsum("jab,jb->ja", Sig_inv_S, data.z_tilde)
    P = sigma2 * sz2[:, None, None] * Sig_inv_S
    Sjk = jnp.einsum("jab,bc,kdc->jkad", B, post.cov, B) + jnp.eye(J)[:, :, None, None] * P[:, None]
    A = jnp.linalg.solve(S, jnp.broadcast_to(eye, S.shape))
    AS = jnp.einsum("jab,jkbc->jkac", A, Sjk)
    Aa = jnp.einsum("jab,jb->ja", A, a)
    Eq = (a * Aa).sum(-1) + jnp.trace(AS[jnp.arange(J), jnp.arange(J)], axis1=-2, axis2=-1)
    Cq = 2.0 * jnp.einsum("jkab,kjba->jk", AS, AS) + 4.0 * jnp.einsum("ja,jkab,kb->jk", Aa, Sjk, Aa)
    dof = data.n - d
    cov = Cq + jnp.diag(2.0 * sigma2**2 * dof + data.sigma_w**2)
    return Eq + sigma2 * dof, 0.5 * (cov + cov.T)


def _yy(nn) -> None:
    from typing import NamedTuple

    import jax.numpy as jnp
    from jax import Array

    class YYData(NamedTuple):
        S_tilde: Array
        z_tilde: Array
        n: Array
        sigma_S: Array
        sigma_z: Array
        y_bound: Array
        eig: None
        w: Array
        sigma_w: Array

    base_data, base_observed = nn.model_data, nn.observed_log_density

    def model_data(st):
        return YYData(*base_data(st)[:6], None, jnp.asarray(YY["w"]), jnp.asarray(YY["sigma_w"]))

    def observed_log_density(S, sigma2, ls2, data, pr):
        return base_observed(S, sigma2, ls2, data, pr) + yy_log_lik(S, sigma2, data, pr)

    nn.model_data, nn.observed_log_density = model_data, observed_log_density


def prepare(variant: str | None, cell: dict, rep: int, data_dir: str, stats: list) -> None:
    """Before a fit of replication ``rep``: for ``yy``, release each party's ``||y_j||^2`` (the
    release's ``y_bound``; the study's bounds are the data maxima, so nothing is clipped)."""
    if variant != "yy":
        return
    import bayes_dpreg as bd
    from bayes_dpreg.privacy.gaussian import analytic_gaussian_sigma

    (X, y, _), _, _ = cov.replicate(cell, rep, SEED, data_dir)
    parts = bd.split_parties(X, y, cell["J"])
    yb = np.array([s.y_bound for s in stats])
    sigma_w = np.array([analytic_gaussian_sigma(cell["eps"], 1e-5, b**2) for b in yb])
    rng = np.random.default_rng([SEED, rep, 99])
    w = np.array([float(np.sum(np.clip(yj, -b, b) ** 2)) for (_, yj), b in zip(parts, yb)])
    YY.update(w=w + sigma_w * rng.standard_normal(w.size), sigma_w=sigma_w)


def _theta_scale(nn) -> None:
    import jax.numpy as jnp

    from bayes_dpreg.model.closed_form import theta_conditional
    from bayes_dpreg.model.linalg import spd_inverse

    def scaled(pr, lt):
        return pr._replace(C=jnp.asarray(pr.C) * jnp.exp(2.0 * lt))

    def log_density(z, data, pr, ref):
        L, R, S, sigma2 = nn.unpack(z, data, ref, pr)
        tau_prior = -jnp.log1p(jnp.exp(2.0 * z["lt"])) + z["lt"]  # half-Cauchy(0, 1) on tau, in log tau
        return (
            nn.sigma_x_log_density(L, pr)
            + nn.wishart_log_density(R, data.n)
            + nn.observed_log_density(S, sigma2, z["ls2"], data, scaled(pr, z["lt"]))
            + tau_prior
        )

    def draws(state, data, pr, key):
        L, _, S, sigma2 = nn.unpack(state.hmc.z, data, state.ref, pr)
        pr = scaled(pr, state.hmc.z["lt"])
        post = theta_conditional(
            S, data.z_tilde, sigma2, data.sigma_z**2, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C))
        )
        return {
            "theta": post.sample(key),
            "sigma2": sigma2,
            "Sigma_x": L @ L.T,
            "S": S,
            "tau": jnp.exp(state.hmc.z["lt"]),
        }

    nn.log_density, nn.draws = log_density, draws
    _install_level_coordinate(nn, "lt", -1.0, 0.5)
    nn.KERNEL = nn.KERNEL._replace(draws=draws)


def _patch(variant: str) -> None:
    from bayes_dpreg.samplers import normalx_nuts as nn

    if "softplus" in variant:
        _softplus(nn)
    if "matrix-f" in variant:
        _matrix_f(nn)
    if variant == "dispersion":
        _dispersion(nn)
    if variant == "party-sigma":
        _party_sigma(nn)
    if variant == "lkj":
        _lkj(nn)
    if variant == "sigma2-cap":
        _sigma2_cap(nn)
    if variant == "sigma2-cap-smooth":
        _sigma2_cap_smooth(nn)
    if variant == "yy":
        _yy(nn)
    if variant.startswith("theta-scale"):
        _theta_scale(nn)


def lambda_shrink(variant: str | None) -> float:
    """The factor by which a ``lambda/K`` variant divides the default ``Lambda`` (1 for the others)."""
    return float(variant.split("/")[1]) if variant and variant.startswith("lambda/") else 1.0


def variant_prior(prior, stats, variant: str | None):
    """The cell's prior as the variant fits it: for ``lambda/K``, ``Lambda = diag(E[x_k^2]) / K``.
    The variants change the model of their time, ``sigma_y^2`` unbounded (``sigma2_max = inf``)."""
    from bayes_dpreg.model.prior import prior_scales
    from bayes_dpreg.stats import stack_stats

    prior = dataclasses.replace(prior, sigma2_max=math.inf)

    if variant == "theta-scale+release-lambda":
        from bayes_dpreg.model.prior import release_lambda

        return dataclasses.replace(prior, Lambda=release_lambda(stats))
    if lambda_shrink(variant) == 1.0:
        return prior
    ms = prior_scales(stack_stats(stats)).feature_ms
    return dataclasses.replace(prior, Lambda=np.diag(ms) / lambda_shrink(variant))


_FIT_OPTIONS: set[str] = set()  # the options _work has bound into bd.fit in this process


def _work(args: tuple[str, str, list[int], str, float]) -> list[dict]:
    variant, cid, reps, data_dir, target_accept = args
    import bayes_dpreg as bd

    bd.configure_threads()
    bd.enable_x64()
    _patch(variant)
    if variant == "extend2" and "extend" not in _FIT_OPTIONS:  # once per worker process
        bd.fit = functools.partial(bd.fit, extend=2)
        _FIT_OPTIONS.add("extend")
    if target_accept != 0.8 and "target_accept" not in _FIT_OPTIONS:  # once per worker process
        bd.fit = functools.partial(bd.fit, target_accept_prob=target_accept)
        _FIT_OPTIONS.add("target_accept")
    cell = next(c for c in cov.cells(cid.split("-")[0]) if c["id"] == cid)

    def priors(stats, rep):
        prepare(variant, cell, rep, data_dir, stats)
        return {variant: variant_prior(cov.replicate(cell, rep, SEED, data_dir)[2], stats, variant)}

    return cov.fit_priors(cell, reps, SEED, data_dir, priors, ("normalx-nuts",), "variant")


def _run(cid: str, reps: list[int], variant: str, data_dir: str, target_accept: float) -> list[dict]:
    """:func:`_work` in :func:`lab.tasks.run_tasks`' calling convention."""
    return _work((variant, cid, reps, data_dir, target_accept))


def _summary(out: Path) -> str:
    new = read_rows(out / "model_variants_replications.csv")
    lines = [
        "| cell | variant | reps | 90% coverage | 50% coverage | RMSE | fits with divergences | "
        "R-hat > 1.01 | s / fit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cid in dict.fromkeys(r["cell"] for r in new):
        base = read_rows(out / f"{cid.split('-')[0]}_replications.csv")
        srcs = {
            m: {int(r["rep"]): r for r in base if r["cell"] == cid and r["method"] == m}
            for m in ("normalx-nuts", "fixeds")
        }
        for v in dict.fromkeys(r["variant"] for r in new if r["cell"] == cid):
            var = {int(r["rep"]): r for r in new if r["cell"] == cid and r["variant"] == v}
            reps = sorted(set(var) & set(srcs["normalx-nuts"]) & set(srcs["fixeds"]))
            for name, src in (("default", srcs["normalx-nuts"]), ("fixeds", srcs["fixeds"]), (v, var)):
                lines.append(_row(cid, name, [src[i] for i in reps]))
    return "\n".join(dict.fromkeys(lines))  # a cell's default and fixeds rows once per set of replications


def _row(cid: str, name: str, rows: list[dict]) -> str:
    def col(k: str) -> np.ndarray:
        return np.array([cov._num(r, k) for r in rows])

    def ms(k: str) -> str:
        return f"{col(k).mean():.3f} ± {col(k).std(ddof=1) / np.sqrt(len(rows)):.3f}"

    div = f"{(col('divergences') > 0).mean():.2f}" if name != "fixeds" else ""
    rmse = np.sqrt(col("sq_error").mean())
    return (
        f"| {cid} | {name} | {len(rows)} | {ms('cover90')} | {ms('cover50')} | {rmse:.3f} | {div} |"
        f" {(col('max_rhat') > 1.01).mean():.2f} | {col('seconds').mean():.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant", choices=VARIANTS)
    ap.add_argument("cells", nargs="+")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--target-accept", type=float, default=0.8, help="NUTS target; other than 0.8 it joins the label")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "model_variants_replications.csv"
    label = args.variant if args.target_accept == 0.8 else f"{args.variant}, target accept {args.target_accept:g}"
    done = {(r["cell"], int(r["rep"]), r["variant"]) for r in read_rows(path)}
    tasks = [(cid, [rep]) for cid in args.cells for rep in range(args.reps) if (cid, rep, label) not in done]

    def written(cid: str, reps: list[int], rows: list[dict], seconds: float) -> None:
        for r in rows:
            r["variant"] = label
        append_rows(path, rows, cov.FIELDS + ["variant"])
        print(f"{cid} rep {reps[0]} ({rows[0]['seconds']:.1f} s)", flush=True)

    run_tasks(_run, tasks, (args.variant, args.data_dir, args.target_accept), args.workers, written)
    md = (
        f"command of the last run: `python -m studies.model_variants {' '.join(sys.argv[1:])}` (seed 2026; rows "
        "accumulate over runs, listed in docs/prior.md); `default` and `fixeds` are the coverage study's rows on "
        "the same replications. Seconds per fit: the variants' were measured while other studies shared the "
        "cores and are not comparable with the default's.\n\n" + _summary(out) + "\n"
    )
    (out / "model_variants.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
