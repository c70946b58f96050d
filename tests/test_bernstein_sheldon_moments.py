"""CLT moments for MCMC-B&S against Monte Carlo."""

import jax.numpy as jnp
import numpy as np

from bayes_dpreg.model.wishart_moments import ss_moments, ss_vector


def test_ss_moments_match_monte_carlo():
    rng = np.random.default_rng(0)
    d, N = 3, 400_000
    A = rng.normal(size=(d, d))
    Sigma = A @ A.T / d + 0.5 * np.eye(d)
    theta = rng.normal(size=d)
    sigma2 = 0.7
    X = rng.multivariate_normal(np.zeros(d), Sigma, size=N)
    y = X @ theta + np.sqrt(sigma2) * rng.normal(size=N)
    iu = np.triu_indices(d)
    T = np.hstack([(X[:, :, None] * X[:, None, :])[:, iu[0], iu[1]], X * y[:, None], (y**2)[:, None]])
    mom = ss_moments(jnp.asarray(theta), jnp.asarray(sigma2), jnp.asarray(Sigma))
    emp_mean, emp_cov = T.mean(0), np.cov(T.T)
    sd = np.sqrt(np.diag(emp_cov))
    assert mom.mean.shape == (d * (d + 1) // 2 + d + 1,)
    np.testing.assert_allclose(mom.mean, emp_mean, atol=5 * (sd / np.sqrt(N)).max())
    # covariance entries: relative to the product of sds (Monte Carlo error of 4th moments)
    np.testing.assert_allclose(np.asarray(mom.cov) / np.outer(sd, sd), emp_cov / np.outer(sd, sd), atol=0.03)
    np.testing.assert_array_equal(mom.cov, mom.cov.T)
    assert np.linalg.eigvalsh(np.asarray(mom.cov)).min() > 0


def test_ss_vector_layout_matches_the_moments():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    v = np.asarray(ss_vector(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), jnp.asarray(y @ y)))
    iu = np.triu_indices(3)
    np.testing.assert_allclose(v, np.concatenate([(X.T @ X)[iu], X.T @ y, [y @ y]]))
    batched = ss_vector(jnp.stack([jnp.asarray(X.T @ X)] * 2), jnp.stack([jnp.asarray(X.T @ y)] * 2),
                        jnp.asarray([y @ y] * 2))
    assert batched.shape == (2, 10)
