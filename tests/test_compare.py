"""Model comparison (bayes_dpreg.compare): evidence against brute-force integration, model ranking,
inclusion Bayes factors, exact leave-one-party-out and ArviZ interoperability."""

import math

import arviz as az
import numpy as np
import pytest
from _shared import linear_stats
from scipy import integrate
from scipy import stats as sps

import bayes_dpreg as bd
from bayes_dpreg.model.linalg import nearest_psd
from bayes_dpreg.posterior.compare import compare, inclusion, log_evidence

PRIOR = dict(m=0.0, C=0.5, a=2.0, b=0.05, Lambda=1.0)


def _stats(d, J=3, n=400, theta=None, eps=3.0, seed=0):
    return linear_stats(d, J, n, eps, 3.0, theta, seed)


def _brute_log_evidence(stats, prior, mask):
    """Integrate theta (on a fine grid, dimension <= 2) and log sigma^2 (adaptive quad) numerically."""
    S = np.array([np.asarray(nearest_psd(s.S)) for s in stats])
    z = np.array([s.z for s in stats])
    sz2 = np.array([s.sigma_z for s in stats]) ** 2
    d = S.shape[-1]
    keep = np.flatnonzero(mask)
    C = prior["C"] * np.eye(d)[np.ix_(keep, keep)]
    a, b = prior["a"], prior["b"]

    def loglik(theta_full, s2):  # theta_full: (G, d)
        out = 0.0
        for Sj, zj, v in zip(S, z, sz2):
            cov = s2 * Sj + v * np.eye(d)
            out = out + sps.multivariate_normal(np.zeros(d), cov).logpdf(zj - theta_full @ Sj.T)
        return out

    def inner(t):
        s2 = math.exp(t)
        # grid over theta_K around the least-squares centre, +-12 sd
        P = np.linalg.inv(C) + sum(Sj[:, keep].T @ np.linalg.solve(s2 * Sj + v * np.eye(d), Sj[:, keep])
                                   for Sj, v in zip(S, sz2))
        h = sum(Sj[:, keep].T @ np.linalg.solve(s2 * Sj + v * np.eye(d), zj) for Sj, zj, v in zip(S, z, sz2))
        mu, sd = np.linalg.solve(P, h), np.sqrt(np.diag(np.linalg.inv(P)))
        axes = [np.linspace(m - 12 * s, m + 12 * s, 201) for m, s in zip(mu, sd)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(keep))
        full = np.zeros((grid.shape[0], d))
        full[:, keep] = grid
        lp = loglik(full, s2) + sps.multivariate_normal(np.zeros(len(keep)), C).logpdf(grid)
        lp = lp.reshape([201] * len(keep))
        top = lp.max()
        val = np.exp(lp - top)
        for ax in reversed(axes):
            val = integrate.trapezoid(val, ax, axis=-1)
        return top + math.log(val) + sps.invgamma(a, scale=b).logpdf(s2) + t

    ts = np.linspace(-14, 14, 141)  # the IG(2, .)'s right tail decays as exp(-2 t): e^-30 at the end
    vals = np.array([inner(t) for t in ts])
    peak = vals.max()
    val, _ = integrate.quad(lambda t: math.exp(inner(t) - peak), ts[0], ts[-1], points=[ts[vals.argmax()]],
                            epsabs=0, epsrel=1e-11, limit=400)
    return peak + math.log(val)


@pytest.mark.parametrize("d, mask", [(1, [True]), (2, [True, True]), (2, [True, False])])
def test_log_evidence_matches_brute_force_integration(d, mask):
    stats = _stats(d)
    prior = bd.Prior(**PRIOR)
    got = log_evidence(stats, [k for k in range(d) if mask[k]], prior)
    want = _brute_log_evidence(stats, PRIOR, np.array(mask))
    assert got == pytest.approx(want, rel=1e-9)  # measured: agreement to 1e-16


def test_true_model_ranks_first_and_inclusion_bayes_factors_separate():
    stats = _stats(3, J=4, n=1500, theta=[0.6, 0.0, -0.4], eps=2.0, seed=1)
    table, _ = compare(stats)
    assert table.index[0] == "{theta_0, theta_2}"
    assert table["post_prob"].sum() == pytest.approx(1.0)
    inc = inclusion(stats)
    assert inc.loc["theta_0", "bf"] > 10 and inc.loc["theta_2", "bf"] > 10
    assert inc.loc["theta_1", "bf"] < 1
    bb = inclusion(stats, model_prior="beta-binomial")
    assert np.allclose(bb["prior_ip"], 0.5) and bb.loc["theta_1", "pip"] < 0.5


def test_leave_one_party_out_is_exact():
    """elpd_j = log Z(all parties) - log Z(all but j), with the parties actually removed."""
    stats = _stats(2, J=3, seed=2)
    prior = bd.Prior(**PRIOR)
    table, elpd = compare(stats, {"full": None, "first": ["theta_0"]}, prior)
    full = log_evidence(stats, None, prior)
    loo = [full - log_evidence([s for i, s in enumerate(stats) if i != j], None, prior) for j in range(3)]
    np.testing.assert_allclose(elpd["full"]["loo_i"].values, loo, rtol=1e-8)
    assert table.loc["full", "elpd_lopo"] == pytest.approx(sum(loo), rel=1e-8)
    assert list(elpd["full"]["loo_i"].coords["party"].values) == ["p0", "p1", "p2"]
    assert (table["p_lopo"] > 0).all()


def test_arviz_compare_accepts_the_output():
    stats = _stats(2, J=4, seed=3)
    table, elpd = compare(stats)
    cmp = az.compare(elpd)
    assert set(cmp.index) == set(table.index)
    assert cmp["elpd_loo"].max() == pytest.approx(table["elpd_lopo"].max())


def test_bad_input():
    stats = _stats(2)
    with pytest.raises(ValueError, match="unknown feature"):
        log_evidence(stats, ["nope"])
    with pytest.raises(ValueError, match="out of range"):
        compare(stats, {"x": [5]})
    with pytest.raises(ValueError, match="model_prior"):
        inclusion(stats, model_prior="flat")
    with pytest.raises(ValueError, match="same release|identical"):
        compare([stats[0], stats[0]])


def test_cli_compare(tmp_path, capsys):
    from bayes_dpreg.cli import main

    stats = _stats(2, J=3, seed=4)
    paths = []
    for s in stats:
        paths.append(str(s.save(tmp_path / f"{s.name}.json")))
    assert main(["compare", *paths, "--coef-names", "age", "dose"]) == 0
    out = capsys.readouterr().out
    assert "{age, dose}" in out and "inclusion" in out and "log_evidence" in out
    assert main(["compare", *paths, "--candidate", "age_only=0", "--candidate", "none="]) == 0
    out = capsys.readouterr().out
    assert "age_only" in out and "none" in out


def test_gibbs_inclusion_matches_enumeration():
    stats = _stats(6, J=4, n=1500, theta=[0.6, 0.0, -0.4, 0.0, 0.15, 0.0], eps=3.0, seed=5)
    exact = inclusion(stats, method="enumerate")
    gibbs = inclusion(stats, method="gibbs", num_sweeps=150, seed=1)
    np.testing.assert_allclose(gibbs["pip"], exact["pip"], atol=0.02)
    assert gibbs.attrs["method"] == "gibbs" and gibbs.attrs["models_evaluated"] < 2**6
    with pytest.raises(ValueError, match="method"):
        inclusion(stats, method="mc3")
    with pytest.raises(ValueError, match="num_sweeps"):
        inclusion(stats, method="gibbs", num_sweeps=3)
