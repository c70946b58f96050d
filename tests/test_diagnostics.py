"""MMD against closed forms; the 'as published' calibration against NOTES.md."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.closed_form import nig_posterior
from bayes_dpreg.diagnostics import calibration, median_bandwidth, mmd2_unbiased
from bayes_dpreg.privacy import as_published_gaussian_sigma, gaussian_delta


def _gauss_mmd2(delta_mu, s, h, d):
    """Exact MMD^2 between N(mu1, s^2 I) and N(mu2, s^2 I) for the Gaussian kernel of bandwidth h."""
    c = (h**2 / (h**2 + 2 * s**2)) ** (d / 2)
    return 2 * c * (1 - np.exp(-delta_mu**2 / (2 * (h**2 + 2 * s**2))))


def test_mmd_matches_the_gaussian_closed_form():
    rng = np.random.default_rng(0)
    d, s, h = 2, 1.0, 1.5
    x = rng.normal(size=(4000, d)) * s
    y = rng.normal(size=(4000, d)) * s + np.array([0.8, 0.0])
    assert mmd2_unbiased(x, y, h) == pytest.approx(_gauss_mmd2(0.8, s, h, d), rel=0.08)


def test_mmd_is_unbiased_near_zero_for_equal_distributions():
    rng = np.random.default_rng(1)
    vals = [mmd2_unbiased(rng.normal(size=(300, 2)), rng.normal(size=(300, 2)), 1.0) for _ in range(40)]
    assert abs(np.mean(vals)) < 3 * np.std(vals) / np.sqrt(len(vals))
    assert min(vals) < 0  # unbiased, so not clipped at zero


def test_mmd_blocking_is_exact():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(1003, 3)), rng.normal(size=(517, 3)) + 0.3
    assert mmd2_unbiased(x, y, 0.9, block=7) == pytest.approx(mmd2_unbiased(x, y, 0.9, block=4096), rel=1e-12)


def test_mmd_bad_input():
    with pytest.raises(ValueError, match="same d"):
        mmd2_unbiased(np.zeros((5, 2)), np.zeros((5, 3)), 1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        mmd2_unbiased(np.zeros((5, 2)), np.zeros((5, 2)), 0.0)


def test_calibration_against_the_exact_posterior():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = X @ [0.5, -0.5] + rng.normal(size=200)
    ref = nig_posterior(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), y @ y, 200, jnp.zeros(2), jnp.eye(2), 2.0, 1.0)
    draws = np.asarray(ref.sample(jax.random.key(9), 20000)[0]).reshape(4, 5000, 2)
    import arviz as az

    same = calibration(az.from_dict(posterior={"theta": draws}), ref, thin=5)
    shifted = calibration(az.from_dict(posterior={"theta": draws + 0.2}), ref, thin=5)
    assert abs(same) < 0.01 < shifted
    assert median_bandwidth(draws.reshape(-1, 2), draws.reshape(-1, 2)) > 0


def test_as_published_sigma_reproduces_the_authors_values():
    # NOTES.md: 5.043, 1.487, 0.441 at delta = 1e-5, with real delta about 0.04, 0.03 and 2e-4
    for eps, ref, real in [(0.1, 5.043, 0.04), (1.0, 1.487, 0.03), (10.0, 0.441, 2e-4)]:
        s = as_published_gaussian_sigma(eps, 1e-5)
        assert s == pytest.approx(ref, abs=5e-4)
        assert gaussian_delta(s, eps) == pytest.approx(real, rel=0.35)
        assert s < bd.analytic_gaussian_sigma(eps, 1e-5)


def test_as_published_release_is_flagged_and_round_trips(tmp_path):
    from bayes_dpreg.privacy import NotPrivateWarning, calibrate, ssp_sensitivity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 2)) * 0.2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ [1.0, -1.0] + 0.1 * rng.normal(size=500), -1, 1)
    with pytest.warns(NotPrivateWarning, match="does NOT give"):
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, calibration="as_published", seed=0)
    joint = as_published_gaussian_sigma(1.0, 1e-5) * ssp_sensitivity(1.0, 1.0, "add_remove")["joint"]
    assert s.calibration == "as_published" and s.neighbouring == "add_remove"
    assert min(s.sigma_S, s.sigma_z) <= joint and s.sigma_S < calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S
    path = s.save(tmp_path / "p.json")
    with pytest.warns(NotPrivateWarning):
        assert bd.load_stats(path) == s
    # never chosen automatically
    for yb in (0.01, 1.0, 10.0):
        assert calibrate(1.0, 1e-5, 1.0, yb).kind in ("joint", "split")
