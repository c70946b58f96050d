"""fit(): structure, exactness of closed-form draws, priors, options and errors."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import fast_posterior
from bayes_dpreg.model.prior import Prior, describe_prior, load_model
from bayes_dpreg.stats import stack_stats
from bayes_dpreg.samplers.fast import fast_sigma2

MODELS = Path(__file__).resolve().parents[1] / "models"


def _stats(J=3, d=2, n=3000, eps=1.0, seed=0, fn=bd.release):
    sim = bd.simulate(n, d, seed=seed)
    X = sim.X / np.linalg.norm(sim.X, axis=1).max()
    y = np.clip(sim.y / np.abs(sim.y).max(), -1, 1)
    return [fn(Xj, yj, epsilon=eps, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=seed * 100 + j)
            for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))], X, y


def test_inference_data_structure():
    stats, _, _ = _stats()
    idata = bd.fit(stats, "fast", num_samples=250, num_chains=3, coef_names=["a", "b"])
    th = idata.posterior["theta"]
    assert th.dims == ("chain", "draw", "coef") and th.shape == (3, 250, 2)
    assert list(th.coords["coef"].values) == ["a", "b"]
    at = idata.posterior.attrs
    assert (at["method"], at["epsilon"], at["delta"], at["J"], at["n"]) == ("fast", 1.0, 1e-5, 3, 3000)
    assert at["n_per_party"] == [1000, 1000, 1000]
    assert list(idata.constant_data["S_tilde"].coords["party"].values) == ["party1", "party2", "party3"]
    assert idata.constant_data["S_tilde"].dims == ("party", "coef", "coef_col")
    np.testing.assert_array_equal(idata.constant_data["S_tilde"].values[1], stats[1].S)
    np.testing.assert_array_equal(idata.constant_data["n"].values, [1000, 1000, 1000])
    assert "sigma2" not in idata.posterior  # fast fixes sigma_y^2
    assert at["sigma2_fixed"] == pytest.approx(1 / 9)


def test_fast_draws_are_exact_posterior_draws():
    stats, _, _ = _stats(J=2, d=3)
    idata = bd.fit(stats, "fast", num_samples=20000, num_chains=2, seed=7)
    st = [s for s in stats]
    pr = Prior().resolve(3, bd.prior_scales(stack_stats(stats)))
    post = fast_posterior(np.stack([s.S for s in st]), np.stack([s.z for s in st]),
                          np.array([s.sigma_z**2 for s in st]), 1 / 9, pr.m, pr.C)
    draws = idata.posterior["theta"].values.reshape(-1, 3)
    sd = np.sqrt(np.diag(post.cov))
    assert np.all(np.abs(draws.mean(0) - post.mean) < 4.5 * sd / np.sqrt(draws.shape[0]))
    np.testing.assert_allclose(np.cov(draws.T), post.cov, rtol=0.05, atol=0.03 * sd.max() ** 2)
    np.testing.assert_allclose(idata.posterior.attrs["posterior_mean"], post.mean, rtol=1e-12)


def test_fast_recovers_ols_when_noise_vanishes():
    stats, X, y = _stats(J=4, d=3, n=20000, eps=1e6)
    idata = bd.fit(stats, "fast", prior=Prior(C=1e6), sigma2=float(np.var(y - X @ np.linalg.lstsq(X, y, rcond=None)[0])))
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(idata.posterior.attrs["posterior_mean"], ols, rtol=2e-3, atol=2e-3)


def test_sigma2_rules():
    assert fast_sigma2(0.9, "text") == pytest.approx(0.09)
    assert fast_sigma2(0.9, "code") == pytest.approx(0.3)
    assert fast_sigma2(0.9, 0.25) == 0.25
    for bad in ("paper", -1.0, float("nan")):
        with pytest.raises(ValueError, match="sigma2"):
            fast_sigma2(1.0, bad)
    stats, _, _ = _stats()
    a = bd.fit(stats, "fast", sigma2="text").posterior.attrs
    b = bd.fit(stats, "fast", sigma2="code").posterior.attrs
    assert a["sigma2_fixed"] != b["sigma2_fixed"] and a["posterior_mean"] != b["posterior_mean"]


def test_prior_is_used():
    stats, _, _ = _stats()
    tight = bd.fit(stats, "fast", prior=Prior(m=[0.3, -0.2], C=1e-10)).posterior.attrs["posterior_mean"]
    np.testing.assert_allclose(tight, [0.3, -0.2], atol=1e-6)


def test_adassp_point_estimate():
    stats, X, y = _stats(J=2, d=2, n=4000, fn=bd.release_adassp)
    idata = bd.fit(stats, method="adassp")
    assert idata.posterior["theta"].shape == (1, 1, 2)
    assert idata.posterior.attrs["point_estimate"] == 1
    # nearly noiseless: adaSSP approaches least squares
    stats_hi, X, y = _stats(J=2, d=2, n=4000, eps=1e7, fn=bd.release_adassp)
    est = bd.fit(stats_hi, method="adassp").posterior["theta"].values[0, 0]
    np.testing.assert_allclose(est, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-3, atol=1e-3)


def test_method_and_mechanism_errors():
    stats, _, _ = _stats()
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        bd.fit(stats, method="nope")
    with pytest.raises(ValueError, match="release_adassp"):
        bd.fit(stats, method="adassp")
    ada, _, _ = _stats(fn=bd.release_adassp)
    with pytest.raises(ValueError, match="needs statistics released with bayes_dpreg.release "):
        bd.fit(ada, method="fast")
    with pytest.raises(TypeError, match="method 'fast'.*bogus"):
        bd.fit(stats, "fast", bogus=1)
    with pytest.raises(TypeError, match="method 'normalx-clt'.*sigma2"):
        bd.fit(stats, sigma2="text")
    with pytest.raises(ValueError, match="num_samples"):
        bd.fit(stats, num_samples=0)
    with pytest.raises(ValueError, match="coef_names"):
        bd.fit(stats, coef_names=["only one"])


def test_parties_with_different_d_are_rejected():
    a, _, _ = _stats(d=2)
    b, _, _ = _stats(d=3)
    with pytest.raises(ValueError, match=r"different dimensions d = \[2, 2, 2, 3"):
        bd.fit(a + b)
    with pytest.raises(ValueError, match="at least one party"):
        bd.fit([])
    with pytest.raises(TypeError, match="expected NoisyStats"):
        bd.fit([np.eye(2)])


def test_fit_from_files(tmp_path):
    stats, _, _ = _stats()
    paths = [s.save(tmp_path / f"p{j}.json") for j, s in enumerate(stats)]
    a = bd.fit([bd.load_stats(p) for p in paths], "fast", seed=3)
    b = bd.fit(stats, "fast", seed=3)
    np.testing.assert_array_equal(a.posterior["theta"].values, b.posterior["theta"].values)


@pytest.mark.parametrize("name", ["default", "alparslan2023", "alparslan2023_text"])
def test_model_files_load(name):
    spec = load_model(MODELS / f"{name}.toml")
    stats, _, _ = _stats(d=3)
    pr = spec.prior.resolve(3, bd.prior_scales(stack_stats(stats)))
    assert pr.C.shape == (3, 3) and pr.kappa == 4.0
    assert spec.fit.get("method") == (None if name == "default" else "fast")  # None: fit's default
    bd.fit(stats, "fast", prior=MODELS / f"{name}.toml", num_samples=10)


def test_default_model_file_is_the_default_prior():
    assert load_model(MODELS / "default.toml").prior == Prior()


def test_paper_model_values():
    pr = load_model(MODELS / "alparslan2023.toml").prior.resolve(2)
    np.testing.assert_allclose(pr.C, 38 * np.eye(2))
    np.testing.assert_allclose(pr.nig_precision, 0.5 / 19 * np.eye(2))
    assert (pr.a, pr.b) == (20.0, 0.5)


@pytest.mark.parametrize(
    "text,match",
    [
        ("[prior]\nC = -1.0\n", "positive definite"),
        ("[prior]\nC = [[1.0, 2.0], [0.0, 1.0]]\n", "symmetric"),
        ("[prior]\na = 0\n", "prior a must be"),
        ("[prior]\nm = [1.0, 2.0, 3.0]\n", "length-2"),
        ("[prior]\nkappa = 0.5\n", "kappa"),
        ("[prior]\nsigma2_max = -1.0\n", "sigma2_max"),
        ("[prior]\nsigma2_max = 1e-4\na = 1.0\nb = 1.0\n", "almost no mass"),
        ("[prior]\ntypo = 1\n", "unknown prior hyperparameters"),
        ("[priors]\n", "unknown top-level keys"),
        ("[prior\n", "invalid TOML"),
    ],
)
def test_bad_model_files(tmp_path, text, match):
    p = tmp_path / "m.toml"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_model(p).prior.resolve(2, bd.PriorScales(1.0, np.ones(2)))


def test_every_hyperparameter_settable():
    p = Prior(m=[1.0, 2.0], C=[[2.0, 0.5], [0.5, 1.0]], a=3.0, b=0.1, Lambda=[1.0, 2.0], kappa=5.0, nig_precision=0.1,
              sigma2_max=4.0)
    r = p.resolve(2)
    assert r.sigma2_max == 4.0
    np.testing.assert_array_equal(r.m, [1, 2])
    np.testing.assert_array_equal(r.Lambda, np.diag([1.0, 2.0]))
    assert (r.a, r.b, r.kappa) == (3.0, 0.1, 5.0)
    np.testing.assert_array_equal(r.nig_precision, 0.1 * np.eye(2))


def test_sigma2_bound_is_y_bound_squared_where_the_method_takes_it():
    """No bound by default; ``sigma2_max = "auto"``: ``y_bound^2`` for the NUTS samplers of the normalX
    model, none for the paper's samplers or without scales; a finite bound for a paper sampler is refused."""
    scales = bd.PriorScales(2.0, np.ones(2))
    auto = Prior(sigma2_max="auto")
    assert Prior().resolve(2, scales).sigma2_max is None
    assert auto.resolve(2, scales).sigma2_max == 4.0
    assert replace(auto, C=1.0, b=0.1, Lambda=1.0).resolve(2, scales).sigma2_max == 4.0
    assert replace(auto, C=1.0, b=0.1, Lambda=1.0).resolve(2).sigma2_max is None  # no release, no bound
    assert auto.for_sigma2_bound(False, "fixeds").resolve(2, scales).sigma2_max is None
    assert auto.resolve_intercept(1, scales).sigma2_max == 4.0
    with pytest.raises(ValueError, match="takes no bound on sigma_y"):
        Prior(sigma2_max=3.0).for_sigma2_bound(False, "fixeds")
    assert "σ_y² ~ IG(1, 0.04) on (0, 4];" in describe_prior(auto.resolve(2, scales), ["a", "b"])
    # fit's path: the method's bound (the samplers under a bound: the density and SBC tests of each)
    stats, _, _ = _stats(d=2)
    idata = bd.fit(stats, "fixeds", prior=auto, num_warmup=100, num_samples=100)
    assert idata.posterior.attrs["prior_sigma2_max"] == np.inf and "on (0," not in idata.posterior.attrs["prior_description"]
    with pytest.raises(ValueError, match="takes no bound"):
        bd.fit(stats, "fixeds", prior=Prior(sigma2_max=1.0), num_samples=10)


def test_truncated_inverse_gamma_density_and_draws():
    """``TruncatedInverseGamma``: density integrating to one on ``(0, h]``, zero above, and draws
    whose distribution is the truncated CDF (Kolmogorov-Smirnov), also where the bound cuts deep."""
    import jax
    from scipy import integrate, stats as sps

    from bayes_dpreg.model.densities import TruncatedInverseGamma

    # compiled, the parameters as arguments: op by op, each operation compiled a program of its own
    log_prob = jax.jit(lambda t, a, b, h: TruncatedInverseGamma(a, b, h).log_prob(t))
    sample = jax.jit(lambda key, a, b, h: TruncatedInverseGamma(a, b, h).sample(key, (4000,)))
    for (a, b, h), key in zip([(1.0, 0.01, 0.5), (3.0, 2.0, 0.8), (20.0, 0.5, 0.02)], range(3)):
        s = np.linspace(np.log(h) - 40.0, np.log(h), 40001)  # the integral in log t: p(e^s) e^s ds
        mass = integrate.simpson(np.exp(np.asarray(log_prob(np.exp(s), a, b, h)) + s), x=s)
        assert mass == pytest.approx(1.0, abs=1e-6)
        assert float(log_prob(1.01 * h, a, b, h)) == -np.inf
        x = np.asarray(sample(jax.random.key(key), a, b, h))
        ig = sps.invgamma(a, scale=b)
        assert x.max() <= h
        assert sps.kstest(x, lambda t: np.minimum(ig.cdf(t) / ig.cdf(h), 1.0)).pvalue > 1e-3
