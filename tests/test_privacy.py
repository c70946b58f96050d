"""The analytic Gaussian mechanism, sensitivities, calibration and clipping."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_dpreg.privacy.gaussian import (
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    clip,
    gaussian_delta,
    ssp_sensitivity,
)

EPS_GRID = [0.01, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
DELTA_GRID = [0.3, 1e-2, 1e-5, 1e-8, 1e-10]


@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_balle_wang_condition_holds_with_equality(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta)
    assert abs(gaussian_delta(sigma, eps) / delta - 1.0) < 1e-9
    # and it is the smallest such sigma: a little less noise breaks (eps, delta)
    assert gaussian_delta(sigma * (1 - 1e-6), eps) > delta


@pytest.mark.parametrize("sens", [0.1, 1.0, 37.5])
def test_sigma_scales_linearly_with_sensitivity(sens):
    assert analytic_gaussian_sigma(1.0, 1e-5, sens) == pytest.approx(sens * analytic_gaussian_sigma(1.0, 1e-5), rel=1e-12)


def test_reference_values_from_notes():
    # NOTES.md: delta = 1e-5 gives 30.750, 3.7306 and 0.49989
    assert analytic_gaussian_sigma(0.1, 1e-5) == pytest.approx(30.750, abs=5e-4)
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=5e-5)
    assert analytic_gaussian_sigma(10.0, 1e-5) == pytest.approx(0.49989, abs=5e-6)


def test_sigma_decreases_in_epsilon_and_delta():
    for delta in DELTA_GRID:
        s = [analytic_gaussian_sigma(e, delta) for e in EPS_GRID]
        assert all(a > b for a, b in zip(s, s[1:]))
    for eps in EPS_GRID:
        s = [analytic_gaussian_sigma(eps, d) for d in sorted(DELTA_GRID)]
        assert all(a > b for a, b in zip(s, s[1:]))


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.5, 1e-6), (1.0, 1e-5), (2.0, 1e-3), (10.0, 1e-5)])
def test_agrees_with_dp_accounting_pld(eps, delta):
    """Google's dp-accounting (privacy-loss distributions) as an independent accountant."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    sigma = analytic_gaussian_sigma(eps, delta)
    acct = pld.from_gaussian_mechanism(sigma, sensitivity=1.0, value_discretization_interval=1e-5)
    got = acct.get_delta_for_epsilon(eps)
    # the PLD is pessimistic (an upper bound) and discretised: agreement to 1e-3 relative
    assert delta * (1 - 1e-3) <= got <= delta * (1 + 1e-3)
    # 1% less noise must cost more delta according to the accountant too
    smaller = pld.from_gaussian_mechanism(0.99 * sigma, sensitivity=1.0, value_discretization_interval=1e-5)
    assert smaller.get_delta_for_epsilon(eps) > delta * 1.01


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0])
def test_classical_needs_more_noise_than_analytic(eps):
    c = classical_gaussian_sigma(eps, 1e-5)
    assert c == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) / eps)
    assert c > analytic_gaussian_sigma(eps, 1e-5)
    assert gaussian_delta(c, eps) <= 1e-5


def test_classical_refuses_large_epsilon():
    with pytest.raises(ValueError, match="epsilon <= 1"):
        classical_gaussian_sigma(2.0, 1e-5)


@pytest.mark.parametrize(
    "eps,delta,match",
    [(0.0, 1e-5, "epsilon must be > 0"), (-1.0, 1e-5, "epsilon must be > 0"), (float("nan"), 1e-5, "epsilon"),
     (1.0, 0.0, r"delta must lie in \(0, 1\)"), (1.0, 1.0, "delta"), (1.0, -0.1, "delta"), (1.0, float("inf"), "delta")],
)
def test_bad_privacy_parameters(eps, delta, match):
    with pytest.raises(ValueError, match=match):
        analytic_gaussian_sigma(eps, delta)
    with pytest.raises(ValueError, match=match):
        calibrate(eps, delta, 1.0, 1.0)


@pytest.mark.parametrize("xb,yb", [(0.0, 1.0), (1.0, -2.0), (float("nan"), 1.0)])
def test_bad_bounds(xb, yb):
    with pytest.raises(ValueError, match="bound"):
        ssp_sensitivity(xb, yb)


def _released_vector(S, z):
    iu = np.triu_indices(S.shape[0])
    return np.concatenate([S[iu], z])


def _project(v, bound):
    n = np.linalg.norm(v)
    return v if n <= bound else v * (bound / n)


@st.composite
def neighbouring_data(draw):
    d = draw(st.integers(1, 5))
    n = draw(st.integers(1, 6))
    xb = draw(st.floats(0.1, 10.0))
    yb = draw(st.floats(0.1, 10.0))
    flt = st.floats(-20, 20, allow_nan=False)
    X = np.array(draw(st.lists(st.lists(flt, min_size=d, max_size=d), min_size=n, max_size=n)))
    y = np.clip(np.array(draw(st.lists(flt, min_size=n, max_size=n))), -yb, yb)
    X = np.array([_project(x, xb) for x in X])
    new_x = _project(np.array(draw(st.lists(flt, min_size=d, max_size=d))), xb)
    new_y = float(np.clip(draw(flt), -yb, yb))
    i = draw(st.integers(0, n - 1))
    X2, y2 = X.copy(), y.copy()
    X2[i], y2[i] = new_x, new_y
    return X, y, X2, y2, xb, yb


@settings(max_examples=400, deadline=None)
@given(neighbouring_data())
def test_replacing_one_row_moves_statistics_by_at_most_delta(data):
    X, y, X2, y2, xb, yb = data
    sens = ssp_sensitivity(xb, yb)
    dS, dz = X.T @ X - X2.T @ X2, X.T @ y - X2.T @ y2
    tol = 1e-9 * (xb**2 + xb * yb + yb**2)
    assert math.sqrt(np.sum(dS**2) + np.sum(dz**2)) <= sens["joint"] + tol  # ||[S,z]-[S',z']||_F
    assert np.linalg.norm(_released_vector(dS, dz)) <= sens["joint"] + tol  # what is actually noised
    assert np.linalg.norm(dS) <= sens["S"] + tol
    assert np.linalg.norm(dz) <= sens["z"] + tol


@settings(max_examples=200, deadline=None)
@given(neighbouring_data())
def test_removing_one_row_moves_statistics_by_at_most_add_remove_delta(data):
    X, y, _, _, xb, yb = data
    sens = ssp_sensitivity(xb, yb, "add_remove")
    x, yy = X[0], y[0]
    change = math.sqrt(np.sum(np.outer(x, x) ** 2) + np.sum((x * yy) ** 2))
    assert change <= sens["joint"] * (1 + 1e-12)


@pytest.mark.parametrize("xb,yb", [(1.0, 1.0), (1.0, 0.3), (2.0, 1.0), (1.0, 3.0), (0.5, 0.7)])
def test_replacement_sensitivity_is_attained(xb, yb):
    """The bound is tight, and the paper's sqrt(B^4 + B^2 Y^2) is exceeded by a real pair."""
    B2, Y2 = xb**2, yb**2
    if Y2 <= 2 * B2:
        # x = (p, q), x' = (q, p) with 2pq = -Y^2/2 and p^2 + q^2 = B^2
        s, t = math.sqrt(B2 + Y2 / 2), math.sqrt(B2 - Y2 / 2)  # p + q = ... solve (p-q)^2, (p+q)^2
        p, q = (t + s) / 2, (t - s) / 2
        x, x2 = np.array([p, q]), np.array([q, p])
        y, y2 = yb, yb
    else:
        x, x2, y, y2 = np.array([xb, 0.0]), np.array([-xb, 0.0]), yb, yb
    dS = np.outer(x, x) - np.outer(x2, x2)
    dz = x * y - x2 * y2
    achieved = np.linalg.norm(_released_vector(dS, dz))
    assert np.linalg.norm(x) <= xb * (1 + 1e-12) and np.linalg.norm(x2) <= xb * (1 + 1e-12)
    assert achieved == pytest.approx(ssp_sensitivity(xb, yb)["joint"], rel=1e-12)
    assert achieved > ssp_sensitivity(xb, yb, "add_remove")["joint"]


def test_calibrate_joint_split_auto():
    eps, delta, xb, yb = 1.0, 1e-5, 2.0, 0.5
    sens = ssp_sensitivity(xb, yb)
    j = calibrate(eps, delta, xb, yb, "joint")
    assert j.sigma_S == j.sigma_z == pytest.approx(analytic_gaussian_sigma(eps, delta) * sens["joint"])
    s = calibrate(eps, delta, xb, yb, "split")
    half = analytic_gaussian_sigma(eps / 2, delta / 2)
    assert (s.sigma_S, s.sigma_z) == pytest.approx((half * sens["S"], half * sens["z"]))
    auto = calibrate(eps, delta, xb, yb)
    assert auto.total_variance == min(j.total_variance, s.total_variance)
    # the choice is the smaller total variance across very different bound ratios
    for yb2 in (1e-3, 10.0):
        a = calibrate(eps, delta, 1.0, yb2)
        other = calibrate(eps, delta, 1.0, yb2, "split" if a.kind == "joint" else "joint")
        assert a.total_variance <= other.total_variance
    with pytest.raises(ValueError, match="calibration"):
        calibrate(eps, delta, xb, yb, "both")


def test_clip_scales_each_row_as_a_whole_onto_the_bounds():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3)) * 2
    y = rng.normal(size=200) * 2
    Xc, yc, rep = clip(X, y, 2.5, 1.5)
    norms, norms_c = np.linalg.norm(X, axis=1), np.linalg.norm(Xc, axis=1)
    out = (norms > 2.5) | (np.abs(y) > 1.5)
    np.testing.assert_array_equal(Xc[~out], X[~out])
    np.testing.assert_array_equal(yc[~out], y[~out])
    assert norms_c.max() <= 2.5 and np.abs(yc).max() <= 1.5
    # one factor per row, the smallest that brings both x and y inside, so one of them sits on its bound
    c = np.minimum(1.0, np.minimum(2.5 / norms, 1.5 / np.abs(y)))
    np.testing.assert_allclose(Xc, X * c[:, None], rtol=1e-12)
    np.testing.assert_allclose(yc, y * c, rtol=1e-12)
    on_bound = np.isclose(norms_c[out], 2.5, rtol=1e-12) | np.isclose(np.abs(yc[out]), 1.5, rtol=1e-12)
    assert on_bound.all()
    # clipping is idempotent: clipped data is within the bounds and is not clipped again
    _, _, again = clip(Xc, yc, 2.5, 1.5)
    assert not again.any_clipped
    assert rep.n_x_clipped == int((norms > 2.5).sum()) > 0
    assert rep.n_y_clipped == int((np.abs(y) > 1.5).sum()) > 0
    assert rep.n_scaled == int(out.sum())
    assert "scaled, x and y together" in str(rep)


def test_clip_keeps_an_exact_linear_relation():
    """Scaling whole rows is a weighting: ``S^{-1} z`` of exactly linear data is ``theta`` however many
    rows the bounds clip; clipping ``x`` and ``y`` separately would not keep it."""
    rng = np.random.default_rng(2)
    X = rng.standard_t(3, size=(500, 4)) @ rng.normal(size=(4, 4))
    theta = rng.normal(size=4)
    y = X @ theta
    xb, yb = np.quantile(np.linalg.norm(X, axis=1), 0.6), np.quantile(np.abs(y), 0.6)
    Xc, yc, rep = clip(X, y, xb, yb)
    assert rep.n_scaled > 200
    np.testing.assert_allclose(np.linalg.solve(Xc.T @ Xc, Xc.T @ yc), theta, rtol=1e-9)
    separate = np.clip(y, -yb, yb)
    assert not np.allclose(np.linalg.solve(Xc.T @ Xc, Xc.T @ separate), theta, rtol=1e-2)


def test_clip_scales_huge_rows_along_their_direction():
    X = np.array([[1e200, 1e200], [1e300, -1e300], [0.0, 0.0]])
    y = np.array([1.0, 1e300, 5.0])
    Xc, yc, rep = clip(X, y, 1.0, 2.0)
    assert np.all(np.isfinite(Xc)) and np.all(np.isfinite(yc))
    np.testing.assert_allclose(Xc[0], [2**-0.5, 2**-0.5], rtol=1e-12)
    np.testing.assert_allclose(yc[0], 2**-0.5 * 1e-200, rtol=1e-12)
    np.testing.assert_allclose(Xc[1] / np.linalg.norm(Xc[1]), [2**-0.5, -(2**-0.5)], rtol=1e-12)
    assert np.linalg.norm(Xc[1]) <= 1.0 and abs(yc[1]) <= 2.0
    np.testing.assert_array_equal(Xc[2], [0.0, 0.0])
    np.testing.assert_allclose(yc[2], 2.0, rtol=1e-12)
    assert rep.n_scaled == 3
    # subnormal features: the factor is y's own, not rebuilt from a product that lost its precision
    tiny = np.array([[5e-324, 0.0], [1e-310, 0.0]])
    Xt, yt, _ = clip(tiny, np.array([1.9, 1e6]), 1.0, 1.0)
    assert np.all(np.abs(yt) <= 1.0) and np.all(np.linalg.norm(Xt, axis=1) <= 1.0)
