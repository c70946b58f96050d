"""Floating-point-safe release noise: the discrete Gaussian on a grid (OpenDP), its accounting,
and the low-order-bit distinguisher of the issue, which must do no better than chance."""

import math

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.privacy.gaussian import (
    GRID_BITS,
    analytic_gaussian_sigma,
    discrete_bs,
    discrete_gaussian,
    gaussian_delta,
    ssp_sensitivity,
)


@pytest.mark.parametrize("eps", [0.1, 0.3, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("d", [1, 5, 30, 100])
def test_discrete_calibration_costs_under_2_percent_and_is_exact(eps, d):
    n = 10**6
    cont = bd.calibrate(eps, 1e-5, 1.0, 1.0, "joint")
    disc = bd.calibrate(eps, 1e-5, 1.0, 1.0, "joint", noise="discrete", d=d, n=n)
    assert 1.0 <= disc.sigma_S / cont.sigma_S < 1.02
    # the grid is ~2^-20 of the noise sd and the released values stay exact floats
    k = disc.grid_S
    assert 2.0**k <= disc.sigma_S * 2.0**-GRID_BITS * 2.0001
    # (eps, delta) holds at the sensitivity grown by the rounding, 2^k sqrt(m)
    m = d * (d + 1) // 2 + d
    sens = ssp_sensitivity(1.0, 1.0)["joint"] + 2.0**k * math.sqrt(m)
    assert gaussian_delta(disc.sigma_S, eps, sens) <= 1e-5 * (1 + 1e-9)


def test_rounding_slack_matches_opendps_own_accounting():
    """OpenDP's zCDP map of its discrete Gaussian is rho = (d_in + 2^k sqrt(m))^2 / (2 sigma^2): the
    sensitivity we calibrate with is the one OpenDP charges."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    d, n = 6, 10**5
    cal = bd.calibrate(1.0, 1e-5, 2.0, 1.0, "joint", noise="discrete", d=d, n=n)
    m = d * (d + 1) // 2 + d
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False), size=m), dp.l2_distance(T=float),
                              scale=cal.sigma_S, k=cal.grid_S)
    delta_sens = ssp_sensitivity(2.0, 1.0)["joint"]
    rho = meas.map(delta_sens)
    ours = delta_sens + 2.0**cal.grid_S * math.sqrt(m)
    assert rho == pytest.approx(ours**2 / (2 * cal.sigma_S**2), rel=1e-9)
    assert cal.sigma_S == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5) * ours, rel=1e-12)


def test_discrete_noise_is_centred_with_the_declared_sd():
    rng = np.random.default_rng(0)
    v = rng.normal(size=2000) * 1e4
    sigma, k = 3.7, -20
    out = discrete_gaussian(v, sigma, k)
    assert np.all(np.fmod(out, 2.0**k) == 0)
    err = out - v
    assert abs(err.mean()) < 4 * sigma / math.sqrt(v.size)
    assert err.std() == pytest.approx(sigma, rel=0.06)


def test_default_release_is_discrete_on_its_grid_and_the_file_check_enforces_it(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3)) * 0.4
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.1 * rng.normal(size=300), -1, 1)
    s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, name="a")
    assert s.noise == "discrete" and not s.reproducible_seed
    cal = bd.calibrate(1.0, 1e-5, 2.0, 1.0, s.calibration, noise="discrete", d=3, n=300)
    assert s.sigma_S == cal.sigma_S
    assert np.all(np.fmod(s.S, 2.0**cal.grid_S) == 0) and np.all(np.fmod(s.z, 2.0**cal.grid_z) == 0)
    moved = s.to_dict() | dict(S=(s.S + 2.0**(cal.grid_S - 1)).tolist())  # off the grid
    with pytest.raises(ValueError, match="grid"):
        bd.NoisyStats(**moved)
    bs = bd.release_bs(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)
    sig, k = discrete_bs(1.0, 1e-5, 2.0, 1.0, 3, 300)
    assert bs.noise == "discrete" and bs.sigma_S == sig and np.fmod(bs.u, 2.0**k) == 0
    with pytest.raises(ValueError, match="cannot be seeded"):
        bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, seed=1, noise="discrete")


def _low_bits(values: np.ndarray, k: int) -> np.ndarray:
    """The lowest 6 bits of each released value's index on the grid (every released float is an
    exact multiple of 2^k, so these are its lowest non-zero significand bits)."""
    return np.mod(values / 2.0**k, 64.0).astype(int)


def test_low_order_bit_distinguisher_is_no_better_than_chance():
    """Neighbouring D (each row one non-zero coordinate: every off-diagonal of S is exactly 0) and
    D' (one row replaced by a(1, ..., 1)). With floating-point noise a released off-diagonal of D
    is fl(sigma * N) and its low bits betray it; with the grid they carry nothing: the event's
    frequency is the same for D and D' (two-proportion z-test) over many releases."""
    d, n, reps = 8, 64, 150
    rng = np.random.default_rng(5)
    X = np.zeros((n, d))
    X[np.arange(n), rng.integers(0, d, n)] = rng.uniform(-1, 1, n)
    Xp = X.copy()
    Xp[0] = 0.3
    y = np.zeros(n)
    iu = np.triu_indices(d, 1)
    hits = []
    for data in (X, Xp):
        ev = []
        for _ in range(reps):
            s = bd.release(data, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, calibration="joint")
            k = bd.calibrate(1.0, 1e-5, 1.0, 1.0, "joint", noise="discrete", d=d, n=n).grid_S
            ev.append(_low_bits(s.S[iu], k))
        hits.append(np.concatenate(ev))
    # the best low-bit event, chosen after looking (residue 0 for the exact zeros of D, or any
    # other): its frequencies under D and D' must agree within sampling error
    table = np.array([np.bincount(h, minlength=64) for h in hits])
    p = table / table.sum(1, keepdims=True)
    pooled = table.sum(0) / table.sum()
    z = (p[0] - p[1]) / np.sqrt(pooled * (1 - pooled) * 2 / hits[0].size)
    assert np.abs(z).max() < 4.5, z  # 64 two-proportion tests: max |z| > 4.5 has probability < 5e-4
    chi2 = ((table - table.sum(1, keepdims=True) * pooled) ** 2 / (table.sum(1, keepdims=True) * pooled)).sum()
    from scipy.stats import chi2 as chi2_dist

    assert chi2_dist.sf(chi2, 63) > 1e-3
