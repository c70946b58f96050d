"""Closed forms against independent derivations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_dpreg.model.closed_form import (
    adassp_estimate,
    adassp_ridge,
    fast_posterior,
    nig_posterior,
    theta_conditional,
)
from bayes_dpreg.model.linalg import nearest_psd, spd_inverse


def _sym(rng, d):
    A = rng.normal(size=(d, d))
    return A + A.T


def test_nearest_psd_properties():
    rng = np.random.default_rng(0)
    for d in (1, 2, 5):
        A = _sym(rng, d)
        P = np.asarray(nearest_psd(jnp.asarray(A)))
        np.testing.assert_array_equal(P, P.T)
        assert np.linalg.eigvalsh(P).min() > -1e-12
        w = np.linalg.eigvalsh(A)
        # distance equals the norm of the negative eigenvalues (Higham 1988)
        assert np.linalg.norm(A - P) == pytest.approx(np.sqrt(np.sum(np.minimum(w, 0) ** 2)), abs=1e-12)
        for _ in range(200):  # no random PSD matrix is closer
            B = rng.normal(size=(d, d + 1))
            Q = B @ B.T * rng.uniform(0, 2)
            assert np.linalg.norm(A - P) <= np.linalg.norm(A - Q) + 1e-12
        Q = rng.normal(size=(d, d))
        Q = Q @ Q.T
        np.testing.assert_allclose(nearest_psd(jnp.asarray(Q)), Q, atol=1e-12)
    batch = np.stack([_sym(rng, 3) for _ in range(4)])
    np.testing.assert_allclose(nearest_psd(jnp.asarray(batch))[2], nearest_psd(jnp.asarray(batch[2])), atol=1e-13)


def _conditioning_oracle(S, z, sigma2, sigma_z2, m, C):
    """Posterior of theta in covariance form: condition the joint Gaussian of (theta, z_1..z_J)."""
    H = np.vstack(S)  # (J d, d)
    R = np.zeros((H.shape[0], H.shape[0]))
    d = S.shape[1]
    for j in range(S.shape[0]):
        R[j * d:(j + 1) * d, j * d:(j + 1) * d] = sigma2 * S[j] + sigma_z2[j] * np.eye(d)
    G = H @ C @ H.T + R
    K = C @ H.T @ np.linalg.inv(G)
    mean = m + K @ (z.ravel() - H @ m)
    cov = C - K @ H @ C
    return mean, cov


@pytest.mark.parametrize("J,d", [(1, 1), (1, 3), (4, 2), (3, 5)])
def test_theta_conditional_equals_gaussian_conditioning(J, d):
    rng = np.random.default_rng(J * 10 + d)
    S = np.stack([(lambda B: B @ B.T)(rng.normal(size=(d, 30))) for _ in range(J)])
    z = rng.normal(size=(J, d)) * 5
    sigma_z2 = rng.uniform(0.5, 3, size=J)
    m = rng.normal(size=d)
    C = (lambda B: B @ B.T + np.eye(d))(rng.normal(size=(d, d)))
    post = theta_conditional(jnp.asarray(S), jnp.asarray(z), 0.7, jnp.asarray(sigma_z2), jnp.asarray(m),
                             spd_inverse(jnp.asarray(C)))
    mean, cov = _conditioning_oracle(S, z, 0.7, sigma_z2, m, C)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(post.cov, cov, rtol=1e-8, atol=1e-12)


def test_gaussian_posterior_sampling_moments():
    rng = np.random.default_rng(3)
    d = 3
    S = np.stack([(lambda B: B @ B.T)(rng.normal(size=(d, 20)))])
    post = theta_conditional(jnp.asarray(S), jnp.asarray(rng.normal(size=(1, d))), 1.0, jnp.ones(1),
                             jnp.zeros(d), jnp.eye(d))
    x = np.asarray(post.sample(jax.random.key(0), (200_000,)))
    sd = np.sqrt(np.diag(post.cov))
    assert np.all(np.abs(x.mean(0) - post.mean) < 5 * sd / np.sqrt(200_000))
    np.testing.assert_allclose(np.cov(x.T), post.cov, atol=0.02 * sd.max() ** 2)


def test_fast_posterior_uses_the_nearest_psd_of_the_noisy_S():
    rng = np.random.default_rng(1)
    S_tilde = np.stack([_sym(rng, 3) for _ in range(2)])  # indefinite
    z = rng.normal(size=(2, 3))
    sz2 = np.array([1.0, 2.0])
    fast = fast_posterior(jnp.asarray(S_tilde), jnp.asarray(z), jnp.asarray(sz2), 0.3, jnp.zeros(3), 2 * jnp.eye(3))
    mean, cov = _conditioning_oracle(np.asarray(nearest_psd(jnp.asarray(S_tilde))), z, 0.3, sz2, np.zeros(3),
                                     2 * np.eye(3))
    np.testing.assert_allclose(fast.mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.cov, cov, rtol=1e-9, atol=1e-12)


def test_nig_posterior_against_quadrature():
    """d = 1: the NIG posterior's moments equal brute-force quadrature on a (theta, sigma^2) grid."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=15)
    y = 0.8 * x + 0.5 * rng.normal(size=15)
    a0, b0, m0, L0 = 3.0, 0.7, 0.2, 0.5
    post = nig_posterior(jnp.array([[x @ x]]), jnp.array([x @ y]), y @ y, 15, jnp.array([m0]), jnp.array([[L0]]),
                         a0, b0)
    th = np.linspace(-1, 3, 1601)
    s2 = np.linspace(0.02, 2.5, 1600)
    T, V = np.meshgrid(th, s2, indexing="ij")
    loglik = -0.5 * 15 * np.log(V) - 0.5 * ((y[None, None, :] - T[..., None] * x) ** 2).sum(-1) / V
    logprior = -0.5 * np.log(V) - 0.5 * L0 * (T - m0) ** 2 / V - (a0 + 1) * np.log(V) - b0 / V
    w = np.exp(loglik + logprior - (loglik + logprior).max())
    w /= w.sum()
    E_t, E_s2 = (w * T).sum(), (w * V).sum()
    var_t = (w * (T - E_t) ** 2).sum()
    assert float(post.mean[0]) == pytest.approx(E_t, rel=1e-4)
    assert float(post.b / (post.a - 1)) == pytest.approx(E_s2, rel=1e-3)
    assert float(post.theta_cov[0, 0]) == pytest.approx(var_t, rel=1e-3)
    th_draws, s2_draws = post.sample(jax.random.key(1), 200_000)
    assert float(th_draws.mean()) == pytest.approx(E_t, abs=4 * np.sqrt(var_t / 200_000))
    assert float(s2_draws.mean()) == pytest.approx(E_s2, rel=0.01)


def test_nig_posterior_sums_parties():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = rng.normal(size=40)
    whole = nig_posterior(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), y @ y, 40, jnp.zeros(2), jnp.eye(2), 2.0, 1.0)
    S = np.stack([X[:20].T @ X[:20], X[20:].T @ X[20:]])
    z = np.stack([X[:20].T @ y[:20], X[20:].T @ y[20:]])
    parts = nig_posterior(jnp.asarray(S), jnp.asarray(z), y @ y, 40, jnp.zeros(2), jnp.eye(2), 2.0, 1.0)
    for u, v in zip(whole, parts):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_adassp_formulas():
    lam = adassp_ridge(jnp.array([0.0, 1e9]), jnp.array([1.0, 1.0]), jnp.array([1e-5, 1e-5]), jnp.array([2.0, 2.0]), 3)
    expected = np.sqrt(3 * np.log(6 / 1e-5) * np.log(2 * 9 / 0.05)) * 4.0 / (1 / 3)
    np.testing.assert_allclose(lam, [expected, 0.0], rtol=1e-12)
    S = np.stack([np.eye(2) * 3, np.eye(2)])
    z = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(adassp_estimate(jnp.asarray(S), jnp.asarray(z), jnp.array([1.0, 1.0])),
                               np.array([4.0, 6.0]) / 6.0)


def test_eigen_party_terms_equal_the_cholesky_ones():
    """MCMC-fixedS's eigenbasis forms of the party terms and of the z~ log-likelihood equal the
    Cholesky forms, for PSD S_j with a zero eigenvalue (nearestPSD's output) and with entries of order 1e5."""
    from bayes_dpreg.model.closed_form import eigen_parties, log_lik_z_eigen, party_terms, party_terms_eigen
    from bayes_dpreg.model.densities import ModelData, log_lik_z

    rng = np.random.default_rng(3)
    J, d = 3, 4
    X = rng.normal(size=(J, 50, d))
    S = np.einsum("jni,jnk->jik", X, X) * 2e3
    S[0] = nearest_psd(jnp.asarray(_sym(rng, d) * 1e4))  # has zero eigenvalues
    z = rng.normal(size=(J, d)) * 1e4
    sz = np.array([30.0, 5.0, 100.0])
    theta = rng.normal(size=d)
    E = eigen_parties(jnp.asarray(S), jnp.asarray(z))
    data = ModelData(jnp.asarray(S), jnp.asarray(z), jnp.full(J, 50.0), jnp.ones(J), jnp.asarray(sz), jnp.asarray(1.0))
    for s2 in (0.01, 0.7, 30.0):
        want = party_terms(jnp.asarray(S), jnp.asarray(z), s2, jnp.asarray(sz**2))
        got = party_terms_eigen(E, s2, jnp.asarray(sz**2))
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9 * np.abs(w).max())
        ll = log_lik_z(jnp.asarray(S), jnp.asarray(theta), s2, data)
        assert float(log_lik_z_eigen(E, jnp.asarray(theta), s2, jnp.asarray(sz**2))) == pytest.approx(float(ll), rel=1e-10)
