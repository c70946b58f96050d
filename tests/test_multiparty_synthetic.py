r"""Tests of :mod:`bayes_dpreg.systems.synthetic` (Su & Liu 2020, HOMM synthetic data).

Theorem 1 re-derived with the correct Laplace moments
=====================================================

Setting (1-D, the implemented sanitiser). Party ``k`` has ``m_k`` equal-width bins of
width ``w_k`` over declared bounds ``[L, U]``, ``B = max(|L|, |U|)`` (the paper's ``B_Y``),
bin centres ``c_kj``, original counts ``n_kj`` (``n = sum n_kj``, data iid with mean ``mu``
and variance ``sigma^2``), and releases ``N_kj = round(max(n_kj + e_kj, 0))`` uniform draws
in bin ``j``, ``e_kj ~ Lap(0, 1/eps_k)``. Let ``yhat = S/n`` be the original pooled mean
(``S`` the sum of the data), ``ytil = T/N`` the synthetic one (``T`` the sum of the draws,
``N = sum N_kj``; ``ytil`` is any point of ``[L, U]`` if ``N = 0``).

Laplace moments. ``Var(e_kj) = 2/eps_k^2`` -- the proof of Theorem 1 (eqs. 4 and 7) uses
``1/eps_k``. Because ``n_kj`` is an integer, ``N_kj - n_kj = max(r_kj, -n_kj)`` with
``r_kj = round(e_kj)``, symmetric and integer valued, ``P(r = +-i) = q^i sinh(eps/2)``
(``i >= 1``, ``q = exp(-eps)``), hence

* ``rho(eps) = E r^2 = 2 sinh(eps/2) q (1 + q) / (1 - q)^3  (-> 2/eps^2 as eps -> 0)``;
* ``|N_kj - n_kj| <= |r_kj|`` (the truncation moves ``N_kj - n_kj`` from ``r`` towards 0);
* ``s_kj = (N_kj - n_kj) - r_kj = (-n_kj - r_kj)_+ >= 0`` (the truncation bias) has
  ``tau_kj = E s_kj = sinh(eps/2) q^(n_kj + 1) / (1 - q)^2`` (``~ 1/(2 eps)`` for an empty bin).

Write ``V = sum_kj rho(eps_k)`` (``~ 2 sum_k m_k / eps_k^2``; the paper has ``sum_k m_k/eps_k``),
``Stau = sum_kj tau_kj`` (``<= ~ m / (2 eps_bar)``: here the weighted harmonic mean reappears),
``H = sum_kj n_kj (ybar_kj - c_kj)`` (histogram approximation, ``|H| <= sum_k n_k w_k / 2``),
``W = sum_k w_k^2 (n_k + sum_j tau_kj) / 12``.

Steps (the paper's eqs. 3-4):

1. ``E(ytil - mu)^2 <= 2 E(ytil - yhat)^2 + 2 sigma^2 / n``                              (eq. 3)
2. ``ytil - yhat = ((n - N)/n) ytil + (T - S)/n``, ``|ytil| <= B``, so
   ``E(ytil - yhat)^2 <= 2 B^2 E(N - n)^2 / n^2 + 2 E(T - S)^2 / n^2``                    (eq. 4)
3. ``E(N - n)^2 = sum Var(N_kj - n_kj) + (sum E s_kj)^2 <= V + Stau^2``
   (independent bins, ``Var <= E(.)^2 <= E r^2``, ``E r = 0``). The paper's
   ``sum_k m_k/eps_k`` here is the erratum: without truncation this is exactly
   ``2 sum_k m_k / eps_k^2``.
4. ``T - S = sum (N_kj - n_kj) c_kj + U - H`` with ``U`` the sum of the draws' offsets from
   their bin centres (``E[U | N] = 0``, ``E[U^2 | N] = sum N_kj w_k^2 / 12``), so
   ``E(T - S)^2 <= B^2 V + (B Stau + |H|)^2 + W``.

Corrected Theorem 1 (conditionally on the counts, then averaged over the data):

    MSE(ytil) <= 2 sigma^2/n + (4/n^2) E_D[ B^2 (2V + Stau^2) + (B Stau + |H|)^2 + W ].

Data-free, with ``V ~ 2 sum_k m_k eps_k^-2 = 2 m / eps_bar2^2``, ``Stau <= m/(2 eps_bar)``
(approximately) and ``|H| <= sum n_k w_k/2``, this has the paper's three parts -- privacy
(now ``16 B^2 m / (n^2 eps_bar2^2)`` + truncation bias), histogram approximation and
sampling ``sigma^2/n`` -- with the privacy part in ``eps^-2``, not ``eps^-1``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bayes_dpreg.systems.synthetic import (
    Bins,
    ClippingWarning,
    MergedSynthetic,
    default_bins_per_dim,
    eps_bar,
    eps_bar2,
    fit_ols,
    histogram_counts,
    homm_synthetic,
    laplace_noisy_counts,
    merge_parties,
    privacy_cost,
    sanitize_counts,
    synthesize_party,
)

# ----------------------------------------------------------------------------- helpers


def rho(eps: float) -> float:
    """``E round(e)^2`` for ``e ~ Lap(0, 1/eps)`` (exact)."""
    q = math.exp(-eps)
    return 2.0 * math.sinh(eps / 2) * q * (1 + q) / (1 - q) ** 3


def tau(eps: float, n: np.ndarray) -> np.ndarray:
    """``E (-n - round(e))_+`` for ``e ~ Lap(0, 1/eps)`` and integer ``n >= 0`` (exact)."""
    q = math.exp(-eps)
    return math.sinh(eps / 2) * q ** (np.asarray(n, dtype=np.float64) + 1) / (1 - q) ** 2


def _sample_var_tolerance(x: np.ndarray, k: float = 5.0) -> float:
    """``k`` standard errors of the sample variance of ``x`` (from its 4th central moment)."""
    c = x - x.mean()
    m2, m4 = np.mean(c**2), np.mean(c**4)
    return k * math.sqrt((m4 - m2**2) / x.size)


# ----------------------------------------------------------------------------- Laplace noise


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_laplace_count_noise_variance_is_2_over_eps_squared(eps):
    rng = np.random.default_rng(11)
    counts = np.full(200_000, 7.0)
    noise = laplace_noisy_counts(counts, eps, rng) - counts
    var = noise.var()
    tol = _sample_var_tolerance(noise)
    assert abs(var - 2 / eps**2) < tol, (var, 2 / eps**2, tol)
    # the proof of Theorem 1 uses 1/eps: clearly rejected (2/eps^2 != 1/eps unless eps = 2)
    assert abs(var - 1 / eps) > 10 * tol
    assert abs(noise.mean()) < 5 * math.sqrt(2) / eps / math.sqrt(noise.size)


def test_replacement_neighbouring_doubles_the_laplace_scale():
    rng = np.random.default_rng(12)
    noise = laplace_noisy_counts(np.zeros(200_000), 1.0, rng, neighbouring="replace")
    assert abs(noise.var() - 8.0) < _sample_var_tolerance(noise)


def test_sanitised_counts_rounded_variance_and_truncation_bias():
    """Released counts: variance rho(eps) ~ 2/eps^2 + 1/12 far from 0; empty bins gain tau ~ 1/(2 eps)."""
    eps = 0.5
    rng = np.random.default_rng(13)
    big = sanitize_counts(np.full(200_000, 500.0), eps, rng)
    assert np.all(big == np.round(big)) and big.min() >= 0
    assert abs(big.var() - rho(eps)) < _sample_var_tolerance(big)
    assert abs(rho(eps) - 2 / eps**2) < 0.1  # rounding adds ~1/12
    empty = sanitize_counts(np.zeros(200_000), eps, rng)
    assert empty.min() == 0
    se = empty.std() / math.sqrt(empty.size)
    assert abs(empty.mean() - tau(eps, 0)) < 5 * se, (empty.mean(), tau(eps, 0))


def test_count_error_of_theorem1_proof_step_uses_2_over_eps_squared():
    """Eq. (4): E(n~ - n)^2 for the untruncated counts is 2 sum m_k/eps_k^2, not sum m_k/eps_k."""
    eps, m = (0.5, 1.0, 2.0), (20, 25, 40)
    rng = np.random.default_rng(14)
    reps = 20_000
    tot = np.zeros(reps)
    for e, mk in zip(eps, m):
        counts = np.zeros((reps, mk))
        tot += (laplace_noisy_counts(counts, e, rng) - counts).sum(axis=1)
    sq = tot**2
    est, se = sq.mean(), sq.std() / math.sqrt(reps)
    correct = 2 * sum(mk / e**2 for e, mk in zip(eps, m))  # 230
    paper = sum(mk / e for e, mk in zip(eps, m))  # 85 = m / eps_bar
    assert abs(est - correct) < 5 * se, (est, correct, se)
    assert est > 2 * paper


# ----------------------------------------------------------------------------- Theorem 1


def test_mean_mse_below_corrected_theorem1_bound():
    """MC MSE of the merged synthetic mean stays under the corrected bound (module docstring).

    Y ~ U(-0.5, 1) (mu = 0.25, sigma^2 = 0.1875) declared in [-1, 1] (B = 1), so a quarter of
    the bins are empty and the truncation bias is active. The bound is ~9x the MSE here
    (0.0031 vs 0.00034); a Laplace scale 5x too large (MSE 0.0035) or synthetic draws
    shifted by one bin break it (checked by mutating the module).
    """
    n_k, m_k, eps_k = (200, 300, 500), (20, 25, 40), (0.5, 1.0, 2.0)
    lo, hi, B = -1.0, 1.0, 1.0
    mu, sigma2 = 0.25, 1.5**2 / 12
    bins = [Bins.from_bounds(lo, hi, m) for m in m_k]
    n = sum(n_k)
    rng = np.random.default_rng(21)
    reps = 1500
    err2 = np.empty(reps)
    cond = np.empty(reps)
    V = sum(m * rho(e) for m, e in zip(m_k, eps_k))
    for r in range(reps):
        data = [rng.uniform(-0.5, 1.0, size=nk) for nk in n_k]
        merged = homm_synthetic(data, bins, eps_k, rng)
        ytil = merged.data.mean() if merged.n_synthetic else 0.0
        err2[r] = (ytil - mu) ** 2
        stau = H = W = 0.0
        for d, b, e in zip(data, bins, eps_k):
            cnt = histogram_counts(d, b)
            edges = b.edges(0)
            centres = 0.5 * (edges[:-1] + edges[1:])
            t = tau(e, cnt)
            stau += t.sum()
            H += d.sum() - cnt @ centres  # sum_kj n_kj (ybar_kj - c_kj)
            W += b.widths[0] ** 2 * (d.size + t.sum()) / 12
        cond[r] = B**2 * (2 * V + stau**2) + (B * stau + abs(H)) ** 2 + W
    mse = err2.mean()
    bound = 2 * sigma2 / n + 4 / n**2 * cond.mean()
    assert mse < bound, (mse, bound)
    # not vacuous: within an order of magnitude
    assert bound < 20 * mse, (mse, bound)
    # the DP part of the bound is in eps^-2: V ~ 2 sum m/eps^2 exceeds the paper's sum m/eps
    assert V > 2 * sum(m / e for m, e in zip(m_k, eps_k))


# ----------------------------------------------------------------------------- eps_bar, privacy cost


def test_eps_bar_formula_and_privacy_cost():
    eps, m = [0.5, 1.0, 4.0], [10, 20, 30]
    assert eps_bar(eps, m) == pytest.approx(60 / (10 / 0.5 + 20 / 1.0 + 30 / 4.0))
    assert eps_bar2(eps, m) == pytest.approx(math.sqrt(60 / (10 / 0.25 + 20 + 30 / 16)))
    assert eps_bar2(eps, m) < eps_bar(eps, m) < max(eps)
    assert eps_bar([0.7] * 3, m) == pytest.approx(0.7) == eps_bar2([0.7] * 3, m)
    # eps_bar leans towards min eps_k (Theorem 1, first remark)
    assert eps_bar([0.1, 10.0], [5, 5]) < 0.2
    assert privacy_cost(eps) == 4.0


def test_merged_result_reports_max_eps_as_privacy_cost():
    rng = np.random.default_rng(31)
    data = [rng.normal(size=(n, 2)) for n in (30, 60, 90)]
    bins = [Bins.from_bounds([-5, -5], [5, 5], n_public=n) for n in (30, 60, 90)]
    eps = [0.3, 2.5, 1.0]
    merged = homm_synthetic(data, bins, eps, rng)
    assert isinstance(merged, MergedSynthetic)
    assert merged.privacy_cost == 2.5
    assert merged.epsilons == (0.3, 2.5, 1.0)
    assert merged.n_bins == tuple(b.n_bins for b in bins)
    assert merged.eps_bar == pytest.approx(eps_bar(eps, merged.n_bins))
    assert np.array_equal(np.unique(merged.party), [0, 1, 2])
    fit = fit_ols(merged, response=1)
    assert fit.privacy_cost == 2.5 and fit.eps_bar == merged.eps_bar


def _mean_mse(eps, seed, reps=1500):
    rng = np.random.default_rng(seed)
    bins = Bins.from_bounds(-4.0, 4.0, 8)
    err = np.empty(reps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        for r in range(reps):
            data = [rng.normal(0.0, 1.0, 20) for _ in eps]
            err[r] = homm_synthetic(data, bins, eps, rng).data.mean()
    return float(np.mean(err**2))


def test_utility_tracks_eps_bar_not_the_privacy_cost():
    """Equal eps_bar, different max eps: similar MSE; halving eps_bar: MSE ~ doubles.

    Equal m_k, so eps_bar is the harmonic mean. Config B costs max eps = 0.75 but its MSE
    is that of A (all 0.5), not that of D (all 0.75). (eps_bar2, the exact governor of the
    count variance, is 0.474 for B vs 0.5 for A: a few % more MSE, within the tolerance.)
    """
    A = (0.5, 0.5, 0.5, 0.5)
    Bc = (0.375, 0.375, 0.75, 0.75)
    C = (0.25,) * 4
    D = (0.75,) * 4
    m = [8] * 4
    assert eps_bar(A, m) == pytest.approx(eps_bar(Bc, m)) == pytest.approx(0.5)
    assert privacy_cost(Bc) == privacy_cost(D) == 0.75
    mse = {k: _mean_mse(v, seed=i) for i, (k, v) in enumerate({"A": A, "B": Bc, "C": C, "D": D}.items())}
    assert 0.8 < mse["B"] / mse["A"] < 1.25, mse
    assert mse["B"] / mse["D"] > 1.3, mse
    assert mse["C"] / mse["A"] > 1.5, mse


# ----------------------------------------------------------------------------- mechanics


def test_default_bins_follow_wasserman_zhou_rate():
    assert default_bins_per_dim(20, 1) == 3
    assert default_bins_per_dim(150, 1) == 6
    assert default_bins_per_dim(27, 1) == 3  # exact cube root
    assert default_bins_per_dim(275, 2) == 5
    b = Bins.from_bounds([-4, 0, -7], [4, 1, 10], n_public=100, discrete=[False, True, False])
    assert b.bins_per_dim == (4, 2, 4) and b.n_bins == 32


def test_without_noise_the_histogram_is_reproduced():
    """eps huge: synthetic counts = true counts; draws fall in their bin; discrete values kept."""
    rng = np.random.default_rng(41)
    x = rng.uniform(-2, 2, 500)
    z = rng.integers(0, 3, 500)
    data = np.column_stack([x, z])
    bins = Bins.from_bounds([-3, 0], [3, 2], [6, 3], discrete=[False, True])
    party = synthesize_party(data, bins, 1e12, rng)
    counts = histogram_counts(data, bins)
    assert np.array_equal(party.synthetic_counts, counts.astype(np.int64))
    assert np.array_equal(histogram_counts(party.data, bins), counts)
    assert set(np.unique(party.data[:, 1])) <= {0.0, 1.0, 2.0}
    assert party.n_synthetic == 500


def test_seeded_runs_are_reproducible_and_in_bounds():
    data = np.random.default_rng(0).normal(size=(50, 2))
    bins = Bins.from_bounds([-5, -5], [5, 5], 4)
    a = synthesize_party(data, bins, 0.5, 123)
    b = synthesize_party(data, bins, 0.5, np.random.default_rng(123))
    assert np.array_equal(a.data, b.data)
    assert a.data.dtype == np.float64
    assert np.all(a.data >= -5) and np.all(a.data <= 5)
    assert a.laplace_scale == 2.0


def test_n_synthetic_option_draws_that_many_rows():
    data = np.random.default_rng(1).normal(size=40)
    party = synthesize_party(data, Bins.from_bounds(-4, 4, 5), 1.0, 2, n_synthetic=333)
    assert party.n_synthetic == 333 and party.data.shape == (333, 1)


def test_ols_on_merged_low_noise_recovers_coefficients():
    rng = np.random.default_rng(51)
    sets = []
    for n in (2000, 3000):
        x = rng.uniform(-1, 1, n)
        sets.append(np.column_stack([x, 1.0 + 2.0 * x + rng.normal(0, 0.1, n)]))
    bins = Bins.from_bounds([-1, -2], [1, 4], [40, 60], columns=["x", "y"])
    fit = fit_ols(homm_synthetic(sets, bins, [50.0, 50.0], rng, allow_data_at_both_bounds=False), "y")
    assert fit.coef == pytest.approx([1.0, 2.0], abs=0.1)
    assert fit.predict(np.array([[0.5]])) == pytest.approx([2.0], abs=0.1)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), True, "1", None])
def test_bad_epsilon_is_refused(eps):
    data = np.zeros((5, 1))
    with pytest.raises(ValueError, match="eps"):
        synthesize_party(data, Bins.from_bounds(-1, 1, 2), eps, 0)


def test_bad_epsilons_in_merging_helpers():
    with pytest.raises(ValueError, match="epsilons\\[1\\]"):
        eps_bar([1.0, 0.0], [2, 2])
    with pytest.raises(ValueError, match="epsilons"):
        privacy_cost([])
    with pytest.raises(ValueError, match="one bin count per party"):
        eps_bar([1.0, 2.0], [2])
    with pytest.raises(ValueError, match="one budget per party"):
        homm_synthetic([np.zeros((3, 1))] * 2, Bins.from_bounds(-1, 1, 2), [1.0], 0)


def test_data_dependent_bins_are_refused():
    rng = np.random.default_rng(61)
    data = rng.normal(size=(100, 1))
    with pytest.raises(ValueError, match="declared public bounds"):
        synthesize_party(data, np.histogram_bin_edges(data, bins=5), 1.0, 0)
    with pytest.raises(ValueError, match="declared public bounds"):
        synthesize_party(data, 5, 1.0, 0)
    with pytest.raises(ValueError, match="bin edges"):
        Bins.from_bounds(-3, 3, np.histogram_bin_edges(data, bins=5))
    # bounds read off the data
    with pytest.raises(ValueError, match="derived from the data"):
        synthesize_party(data, Bins.from_bounds(data.min(), data.max(), 5), 1.0, 0)


def test_out_of_bound_rows_are_clipped_and_reported_or_refused():
    data = np.array([[0.0], [0.5], [7.0], [-9.0], [1.0]])
    bins = Bins.from_bounds(-2, 2, 4)
    with pytest.raises(ValueError, match="outside the declared bounds"):
        synthesize_party(data, bins, 1.0, 0, out_of_bounds="raise")
    with pytest.warns(ClippingWarning, match="2 of 5 rows"):
        party = synthesize_party(data, bins, 1.0, 0)
    assert party.bounds_report.n_rows_clipped == 2
    assert party.bounds_report.clipped_per_column == (2,)
    with pytest.raises(ValueError, match="out_of_bounds"):
        synthesize_party(data, bins, 1.0, 0, out_of_bounds="ignore")


def test_non_finite_and_badly_shaped_data_are_refused():
    bins = Bins.from_bounds([-1, -1], [1, 1], 2)
    with pytest.raises(ValueError, match="non-finite"):
        synthesize_party(np.array([[0.0, np.nan], [0.1, 0.2]]), bins, 1.0, 0)
    with pytest.raises(ValueError, match="non-finite"):
        synthesize_party(np.array([[0.0, np.inf]]), bins, 1.0, 0)
    with pytest.raises(ValueError, match="3 columns"):
        synthesize_party(np.zeros((4, 3)), bins, 1.0, 0)
    with pytest.raises(ValueError, match="2-D"):
        synthesize_party(np.zeros(4), bins, 1.0, 0)
    with pytest.raises(ValueError, match="2-D"):
        synthesize_party(np.zeros((2, 2, 2)), bins, 1.0, 0)
    with pytest.raises(ValueError, match="numeric"):
        synthesize_party(np.array([["a", "b"]]), bins, 1.0, 0)
    with pytest.raises(ValueError, match="non-integer"):
        synthesize_party(np.array([[0.5]]), Bins.from_bounds(0, 1, 2, discrete=[True]), 1.0, 0)


def test_bad_bins_and_rng_are_refused():
    with pytest.raises(ValueError, match="lower < upper"):
        Bins.from_bounds(1, 1, 2)
    with pytest.raises(ValueError, match="finite"):
        Bins.from_bounds(-np.inf, 1, 2)
    with pytest.raises(ValueError, match="integer >= 1"):
        Bins.from_bounds(0, 1, 0)
    with pytest.raises(ValueError, match="n_public"):
        Bins.from_bounds(0, 1)
    with pytest.raises(ValueError, match="integer bounds"):
        Bins.from_bounds(0, 1.5, 2, discrete=[True])
    with pytest.raises(ValueError, match="explicit seed"):
        synthesize_party(np.zeros((3, 1)), Bins.from_bounds(-1, 1, 2), 1.0, None)
    with pytest.raises(ValueError, match="neighbouring"):
        synthesize_party(np.zeros((3, 1)), Bins.from_bounds(-1, 1, 2), 1.0, 0, neighbouring="swap")


def test_parties_with_mismatched_columns_are_refused():
    with pytest.raises(ValueError, match="mismatched columns"):
        homm_synthetic([np.zeros((3, 2)), np.zeros((3, 3))], Bins.from_bounds([-1, -1], [1, 1], 2), [1, 1], 0)
    a = synthesize_party(np.zeros((3, 2)), Bins.from_bounds([-1, -1], [1, 1], 2, columns=["x", "y"]), 1.0, 0)
    b = synthesize_party(np.zeros((3, 2)), Bins.from_bounds([-1, -1], [1, 1], 2, columns=["y", "x"]), 1.0, 0)
    c = synthesize_party(np.zeros((3, 2)), Bins.from_bounds([-1, -2], [1, 2], 2, columns=["x", "y"]), 1.0, 0)
    with pytest.raises(ValueError, match="mismatched columns"):
        merge_parties([a, b])
    with pytest.raises(ValueError, match="different bounds"):
        merge_parties([a, c])
    d = synthesize_party(np.zeros((3, 2)), Bins.from_bounds([-1, -1], [1, 1], 2, columns=["x", "y"]), 1.0, 0,
                         neighbouring="replace")
    with pytest.raises(ValueError, match="neighbouring"):
        merge_parties([a, d])
    with pytest.raises(ValueError, match="no parties"):
        merge_parties([])
    with pytest.raises(ValueError, match="response 'z'"):
        fit_ols(merge_parties([a]), "z")
