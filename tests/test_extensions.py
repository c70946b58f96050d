"""App. B extensions: the intercept model (B.2) and row averaging (B.1)."""

import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.densities import intercept_design
from bayes_dpreg.privacy.mechanisms import average_rows
from bayes_dpreg.privacy.gaussian import calibrate


def test_intercept_design_is_the_gram_matrix_of_one_and_x():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) + 2.0 for n in (7, 11)]
    n = np.array([7.0, 11.0])
    b = np.stack([x.mean(0) for x in X])
    Sx = np.stack([(x - x.mean(0)).T @ (x - x.mean(0)) for x in X])
    S0 = intercept_design(jnp.asarray(b), jnp.asarray(Sx), jnp.asarray(n))
    for j, x in enumerate(X):
        xa = np.column_stack([np.ones(len(x)), x])
        np.testing.assert_allclose(S0[j], xa.T @ xa, rtol=1e-12)


def test_intercept_release_clips_features_then_appends_ones():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2)) * 3
    y = rng.normal(size=50) * 0.1
    with pytest.warns(bd.ClippingWarning):
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, intercept=True, seed=0)
    assert s.d == 3 and s.meta == {"intercept": True}
    assert s.x_bound == pytest.approx(math.sqrt(5.0))
    assert s.sigma_S == pytest.approx(calibrate(1.0, 1e-5, math.sqrt(5.0), 1.0).sigma_S)
    # the (0, 0) entry is n plus noise only: the ones column was not scaled by clipping
    assert abs(s.S[0, 0] - 50) < 6 * s.sigma_S


@pytest.fixture(scope="module")
def intercept_stats():
    rng = np.random.default_rng(2)
    n = 6000
    X = rng.normal(size=(n, 1)) * 0.5 + 1.0
    y = 0.6 - 0.4 * X[:, 0] + 0.2 * rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [bd.release(Xj, yj, epsilon=2.0, delta=1e-5, x_bound=3.0, y_bound=2.0, intercept=True, seed=j)
                for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 2))]


def test_intercept_model_recovers_the_truth(intercept_stats):
    idata = bd.fit(intercept_stats, "normalx-intercept", num_samples=250, num_warmup=250, num_chains=1, seed=3)
    post = idata.posterior
    assert list(post.coef.values) == ["intercept", "theta_0"]
    th = post.theta.values.reshape(-1, 2)
    z = (th.mean(0) - np.array([0.6, -0.4])) / th.std(0)
    assert np.all(np.abs(z) < 4), z
    mu = idata.latent_posterior.mu_x.values.reshape(-1)
    assert abs(mu.mean() - 1.0) < 4 * mu.std() + 0.02
    assert post.attrs["intercept"] == 1


def test_intercept_statistics_are_refused_by_centred_models(intercept_stats):
    for method in ("normalx-nuts", "normalx", "bs"):
        with pytest.raises(ValueError, match="zero-mean|release_bs"):
            bd.fit(intercept_stats, method)
    plain = bd.release(np.ones((20, 2)) * 0.1, np.zeros(20), epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="intercept=True"):
        bd.fit(plain, "normalx-intercept")
    # fast treats the ones column as a feature
    assert bd.fit(intercept_stats, "fast", num_samples=5).posterior.theta.shape == (4, 5, 2)


def test_average_rows_is_an_isometry_of_the_noise_and_keeps_the_mean_structure():
    rng = np.random.default_rng(4)
    k, m = 5, 4000
    X = rng.exponential(size=(k * m + 3, 2)) - 1.0  # non-normal, mean zero
    e = rng.normal(size=k * m + 3)
    Xa, ea = average_rows(X, e, k)
    assert Xa.shape == (m, 2)
    np.testing.assert_allclose(Xa[0], X[:k].sum(0) / math.sqrt(k))
    # A A^T = I: the averaged errors keep unit variance; averaged rows keep the covariance
    assert abs(ea.var() - 1.0) < 5 * math.sqrt(2.0 / m)
    np.testing.assert_allclose(np.cov(Xa.T), np.cov(X.T), atol=0.1)
    # skewness shrinks by sqrt(k) (CLT)
    skew = lambda v: ((v - v.mean()) ** 3).mean() / v.std() ** 3
    assert abs(skew(Xa[:, 0])) < 0.6 * abs(skew(X[:, 0]))


def test_release_with_row_averaging():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(1003, 2))
    y = X @ [0.5, 0.5] + 0.1 * rng.normal(size=1003)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=2.0, average_rows=10, seed=0)
    assert s.n == 100 and s.meta == {"average_rows": 10}
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="average_rows"):
            bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=2.0, average_rows=bad)
    with pytest.raises(ValueError, match="cannot be combined"):
        bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=2.0, average_rows=10, intercept=True)
