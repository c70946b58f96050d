"""The fit's log_prior group and the power-scaling check of how much each prior factor sways theta."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions
import pytest
from _shared import unit_releases
from scipy import stats as sps

import bayes_dpreg as bd
from bayes_dpreg.model.prior import prior_scales
from bayes_dpreg.posterior.diagnostics import (
    PRIOR_SENSITIVITY_MAX,
    prior_sensitivity,
    prior_sensitivity_summary,
    sigma2_contraction,
)
from bayes_dpreg.posterior.diagnostics.prior_sensitivity import CHECK as PRIOR_SENSITIVITY_CHECK
from bayes_dpreg.stats import stack_stats
from bayes_dpreg.samplers import get as get_sampler


def _record_prior_sensitivity(sampler, idata):
    """What fit records: the prior-sensitivity check's attrs."""
    idata.posterior.attrs.update(PRIOR_SENSITIVITY_CHECK.check(idata, None, sampler, None).attrs)


def _stats(n=6000, J=3, eps=1.0):
    stats, X, _ = unit_releases(n, 2, J, eps)
    return stats, X


def _fit(stats, method, prior=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bd.SeededReleaseWarning)
        warnings.simplefilter("ignore", bd.NoiseWarning)
        return bd.fit(stats, method, prior, seed=1, **kw)


@pytest.fixture(scope="module")
def nuts():
    stats, _ = _stats()
    # theta's prior fixed (C at the release's feature scales), as every method but this one has it by default
    return stats, _fit(stats, "normalx-nuts", bd.Prior(theta_scale="release"), num_warmup=300, num_samples=300)


def test_log_prior_of_theta_scaled_by_the_features_is_its_conditional_at_the_drawn_sigma_x():
    """This sampler's default (``theta_scale="features"``): ``theta | Sigma_x ~ N(m, D^-1 C D^-1)``,
    ``D = diag(sqrt(Sigma_x,kk / E[x_k^2]))``, at each draw's ``Sigma_x``, written apart from the package."""
    stats, _ = _stats(n=300)
    idata = _fit(stats, "normalx-nuts", num_warmup=150, num_samples=100)
    pr = bd.Prior(theta_scale="features").resolve(2, prior_scales(stack_stats(stats)))
    theta = idata.posterior["theta"].values[0, :5]
    Sigma_x = idata.latent_posterior["Sigma_x"].values[0, :5]
    inv_s = [np.sqrt(np.diag(pr.Lambda) / np.diag(S)) for S in Sigma_x]
    expected = [sps.multivariate_normal(pr.m, pr.C * np.outer(v, v)).logpdf(t) for t, v in zip(theta, inv_s)]
    np.testing.assert_allclose(idata.log_prior["theta"].values[0, :5], expected, rtol=1e-10)
    fixed = sps.multivariate_normal(pr.m, pr.C).logpdf(theta)
    assert np.max(np.abs(fixed - expected)) > 1e-3  # the scaling matters at these draws


def test_log_prior_holds_each_prior_factor_at_the_draws(nuts):
    stats, idata = nuts
    pr = bd.Prior(theta_scale="release").resolve(2, prior_scales(stack_stats(stats)))
    lp = idata.log_prior
    assert set(lp.data_vars) == {"theta", "sigma2", "Sigma_x"}
    theta = idata.posterior["theta"].values[0, :5]
    sigma2 = idata.posterior["sigma2"].values[0, :5]
    Sigma_x = idata.latent_posterior["Sigma_x"].values[0, :5]
    np.testing.assert_allclose(lp["theta"].values[0, :5], sps.multivariate_normal(pr.m, pr.C).logpdf(theta), rtol=1e-10)
    np.testing.assert_allclose(lp["sigma2"].values[0, :5], sps.invgamma(pr.a, scale=pr.b).logpdf(sigma2), rtol=1e-10)
    np.testing.assert_allclose(lp["Sigma_x"].values[0, :5], [_separation_logpdf(S, pr) for S in Sigma_x], rtol=1e-8)


@functools.partial(jax.jit, static_argnums=(1, 2))  # compiled: op by op, a program an operation
def _lkj_logpdf(R, d, eta):
    return numpyro.distributions.LKJ(d, eta).log_prob(R)


def _separation_logpdf(S, pr):
    """The default ``Sigma_x`` prior (``D R D``, log-normal scales, LKJ correlations) by the change of
    variables, ``|d Sigma / d(s, R)| = 2^d prod s_k^d``, written apart from ``ScaledLKJ``."""
    d = S.shape[0]
    s = np.sqrt(np.diag(S))
    log_scales = sps.norm.logpdf(np.log(s), 0.5 * np.log(np.diag(pr.Lambda)), pr.scale_sd) - np.log(s)
    lkj = float(_lkj_logpdf(jnp.asarray(S / np.outer(s, s)), d, float(pr.eta)))
    return log_scales.sum() + lkj - d * np.log(2.0) - d * np.log(s).sum()


def test_a_fit_records_its_prior_sensitivity_and_this_one_does_not_depend_on_sigma_x(nuts):
    _, idata = nuts
    at = idata.posterior.attrs
    assert {"prior_sensitivity_theta", "prior_sensitivity_sigma2", "prior_sensitivity_Sigma_x"} <= set(at)
    assert 0 <= at["prior_sensitivity_Sigma_x"] < PRIOR_SENSITIVITY_MAX
    assert "prior_sensitivity_Sigma_x_noise" not in at  # the permutation test runs only from 0.05
    assert "do not depend" in prior_sensitivity_summary(at)


def test_a_prior_that_fights_the_data_is_flagged_and_a_weak_one_is_not():
    stats, X = _stats(eps=10.0)
    weak = prior_sensitivity(_fit(stats, "fixeds"))
    assert np.max(weak.prior["theta"]) < PRIOR_SENSITIVITY_MAX
    assert weak.sensitive("theta") == [] and weak.diagnosis(0) == "-"
    tight = prior_sensitivity(_fit(stats, "fixeds", bd.Prior(m=[3.0, -3.0], C=1e-3)))
    assert tight.sensitive("theta") == ["theta_0", "theta_1"]
    assert [tight.diagnosis(k) for k in range(2)] == ["strong prior / weak likelihood"] * 2
    # a prior as informative as the data, 8 posterior sds away from them on theta_0 (sd 0.04)
    conflict = prior_sensitivity(_fit(stats, "fixeds", bd.Prior(m=[3.0, -3.0], C=0.1)))
    assert conflict.diagnosis(0) == "prior-data conflict"


def test_sigma_x_swaying_theta_is_recorded(nuts):
    _, idata = nuts
    tilted = idata.copy()
    theta0 = idata.posterior["theta"].sel(coef="theta_0")
    tilted.log_prior["Sigma_x"] = 2.0 * (theta0 - theta0.mean()) / theta0.std()
    _record_prior_sensitivity(get_sampler("normalx-nuts"), tilted)
    at = tilted.posterior.attrs
    assert at["prior_sensitivity_Sigma_x"] >= max(PRIOR_SENSITIVITY_MAX, at["prior_sensitivity_Sigma_x_noise"])
    assert "the intervals depend on it" in prior_sensitivity_summary(at)


def test_a_widely_spread_log_prior_that_ignores_theta_is_noise_not_sensitivity(nuts):
    """A factor whose log density spreads by tens of nats over the draws but does not depend on theta
    reads above 0.05 (Monte Carlo noise of the reweighting); the permutation test discounts it."""
    _, idata = nuts
    noisy = idata.copy()
    rng = np.random.default_rng(1)
    lp = noisy.log_prior["Sigma_x"]
    noisy.log_prior["Sigma_x"] = lp.copy(data=20.0 * rng.standard_normal(lp.shape))
    noisy.log_prior["theta"] = lp.copy(data=20.0 * rng.standard_normal(lp.shape))
    ps = prior_sensitivity(noisy, noise_factors=("Sigma_x",))
    assert np.max(ps.prior["Sigma_x"]) >= PRIOR_SENSITIVITY_MAX
    assert ps.noise["Sigma_x"] > np.max(ps.prior["Sigma_x"]) and ps.sensitive("Sigma_x") == []
    # a report tests every factor; each factor's noise level is the same as when it is tested alone
    every = prior_sensitivity(noisy)
    assert set(every.noise) == {"theta", "Sigma_x"} and every.noise["Sigma_x"] == ps.noise["Sigma_x"]
    assert every.noise["theta"] == prior_sensitivity(noisy, noise_factors=("theta",)).noise["theta"]
    _record_prior_sensitivity(get_sampler("normalx-nuts"), noisy)
    assert "do not depend on it" in prior_sensitivity_summary(noisy.posterior.attrs)


@pytest.mark.parametrize("J, yty", [(1, False), (10, False), (1, True)])
def test_one_party_leaves_sigma2_to_its_prior_and_the_fit_warns(J, yty):
    """With one party the release has no scatter between parties to inform sigma_y^2 (y^T y is not
    released): its posterior is its prior (sd of log sigma2 as wide), and where the release is
    precise theta's intervals scale with it: NoiseVariancePriorWarning. The same rows split among 10
    parties inform sigma_y^2, and the fit stays quiet (the default, normalx-clt); so does one party that
    releases y^T y too (``release(..., yty=True)``), whose posterior of sigma_y^2 is then narrow."""
    release = functools.partial(bd.release, yty=True) if yty else bd.release
    stats, _, _ = unit_releases(100_000, 2, J, 5.0, seed=2, release=release)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = bd.fit(stats, seed=1)
    warned = [w for w in caught if issubclass(w.category, bd.NoiseVariancePriorWarning)]
    at = idata.posterior.attrs
    assert issubclass(bd.NoiseVariancePriorWarning, bd.PriorSensitivityWarning)
    assert at["yty_used"] == int(yty)
    if J == 1 and not yty:
        assert at["sigma2_prior_contraction"] > 0.9
        assert at["prior_sensitivity_sigma2"] >= 2 * max(PRIOR_SENSITIVITY_MAX, at["prior_sensitivity_sigma2_noise"])
        assert len(warned) == 1 and "with one party" in str(warned[0].message)
        assert "release(..., yty=True)" in str(warned[0].message)
        assert "Prior(a=3, b=2 * s**2)" in str(warned[0].message)
        assert prior_sensitivity_summary(at).startswith("Prior of sigma2:")  # the report shows the first line
        assert PRIOR_SENSITIVITY_CHECK.flagged(at)
        from bayes_dpreg.report import _method_notes

        note = next(n for n in _method_notes(idata) if n["text"].startswith("Prior of sigma2"))
        assert note["kind"] == "warn"
    else:
        assert at["sigma2_prior_contraction"] < (0.2 if yty else 0.8)
        assert at["prior_sensitivity_sigma2"] < PRIOR_SENSITIVITY_MAX / 2
        assert warned == [] and "Prior of sigma2" not in prior_sensitivity_summary(at)
        assert not PRIOR_SENSITIVITY_CHECK.flagged(at)


def test_sigma2_contraction_is_the_ratio_of_log_sds(nuts):
    _, idata = nuts
    sd = lambda a: np.log(a.values).std()
    want = sd(idata.posterior["sigma2"]) / sd(idata.prior["sigma2"])
    assert sigma2_contraction(idata) == pytest.approx(want, rel=1e-12)
    point, _, _ = unit_releases(3000, 2, 2, 1.0, release=bd.release_adassp)
    assert sigma2_contraction(_fit(point, "adassp")) is None  # no sigma2 draws


def test_point_estimates_have_no_log_prior_and_the_check_says_so():
    stats, _, _ = unit_releases(3000, 2, 2, 1.0, release=bd.release_adassp)
    idata = _fit(stats, "adassp")
    assert "log_prior" not in idata.groups()
    with pytest.raises(ValueError, match="log_prior"):
        prior_sensitivity(idata)


def test_release_lambda_is_the_pooled_covariance_of_the_features():
    stats, X = _stats(n=20000, eps=10.0)
    lam = bd.release_lambda(stats)
    np.testing.assert_allclose(lam, lam.T)
    assert np.all(np.linalg.eigvalsh(lam) > 0)
    np.testing.assert_allclose(lam, X.T @ X / len(X), atol=0.02 * np.trace(X.T @ X / len(X)))


def test_the_array_path_is_arviz_psens():
    """psens_draws (ArviZ's PSIS and CJS steps without its xarray layer, all columns at once) equals
    arviz.psens, also where draws repeat."""
    import arviz as az

    from bayes_dpreg.posterior.diagnostics.prior_sensitivity import _psens

    rng = np.random.default_rng(3)
    theta = rng.standard_normal((2, 300, 3))
    theta[:, 100:140] = theta[:, 60:100]  # repeated draws, as a rejecting chain has: ties in the sort
    log_prior = {"theta": -0.5 * (theta**2).sum(-1), "Sigma_x": rng.standard_normal((2, 300))}
    log_lik = {
        "z_tilde": -0.5 * (theta[..., :1] - 1.0) ** 2 + 0.1 * rng.standard_normal((2, 300, 1)),
        "other": 0.2 * theta[..., 1:] * rng.standard_normal((2, 300, 1, 2)).sum(-1),
    }
    groups = {"posterior": {"theta": theta}, "log_prior": log_prior, "log_likelihood": log_lik}
    idata = az.InferenceData(**{g: az.convert_to_dataset(v) for g, v in groups.items()})
    for component, name in (("prior", "theta"), ("prior", "Sigma_x"), ("likelihood", None)):
        want = az.psens(idata, component=component, component_var_names=name, var_names=["theta"], delta=0.01)
        np.testing.assert_allclose(_psens(idata, component, name, 0.01), np.asarray(getattr(want, "theta", want)), rtol=1e-10, atol=1e-12)


def test_the_sigma2_line_stands_where_a_method_has_no_sigma_x_prior():
    """``fixeds`` records no ``Sigma_x`` factor: the sigma2 line alone, where it applies."""
    at = {"prior_sensitivity_sigma2": 0.2, "prior_sensitivity_sigma2_noise": 0.06, "J": 1}
    line = prior_sensitivity_summary(at)
    assert line.startswith("Prior of sigma2:") and "with one party" in line and "Sigma_x" not in line
    assert PRIOR_SENSITIVITY_CHECK.flagged(at)
    quiet = {"prior_sensitivity_sigma2": 0.2, "prior_sensitivity_sigma2_noise": 0.3}  # below its noise level
    assert prior_sensitivity_summary(quiet) is None and not PRIOR_SENSITIVITY_CHECK.flagged(quiet)
