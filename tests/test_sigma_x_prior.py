"""The separation-strategy prior of ``Sigma_x`` (:class:`bayes_dpreg.model.densities.ScaledLKJ`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC, NUTS
from scipy.stats import ks_2samp, norm

from bayes_dpreg import Prior
from bayes_dpreg.model.densities import ScaledLKJ, prior_dist
from bayes_dpreg.model.linalg import from_log_cholesky
from bayes_dpreg.posterior.sbc import sbc
from bayes_dpreg.samplers.normalx_nuts import sigma_x_log_density


def test_density_in_two_dimensions_is_the_change_of_variables():
    """d = 2: ``p(Sigma) = LN(s1) LN(s2) (1/2) / (4 s1^2 s2^2)`` (rho uniform on (-1, 1) under LKJ(1),
    Jacobian ``2^d prod s_k^d``); computed independently of the class."""
    Lam = np.diag([2.0, 0.5])
    tau = 0.7
    Sigma = np.array([[1.3, -0.4], [-0.4, 0.6]])
    s = np.sqrt(np.diag(Sigma))
    log_ln = norm.logpdf(np.log(s), 0.5 * np.log(np.diag(Lam)), tau) - np.log(s)
    expected = log_ln.sum() + np.log(0.5) - np.log(4.0 * s[0] ** 2 * s[1] ** 2)
    got = float(ScaledLKJ(jnp.asarray(Lam), 1.0, tau).log_prob(jnp.asarray(Sigma)))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def _features(A):
    sd = np.sqrt(np.diagonal(A, axis1=1, axis2=2))
    return np.c_[np.log(sd), A[:, 0, 1] / (sd[:, 0] * sd[:, 1]), np.linalg.slogdet(A)[1]]


@functools.partial(jax.jit, static_argnums=2)
def _prior_draws(pr, key, num):
    """``num`` draws of ``Sigma_x`` from its prior, compiled (op by op, each operation of the sampler
    compiled a program of its own: hundreds)."""
    return prior_dist(pr, "Sigma_x").sample(key, (num,))


def _nuts_draws(log_density, d, num_samples=20000, thin=10):
    """Nearly independent draws of ``Sigma_x`` by NUTS on its log-Cholesky coordinates."""

    def potential(z):
        return -log_density(from_log_cholesky(z["v"], d))

    mcmc = MCMC(NUTS(potential_fn=potential), num_warmup=1000, num_samples=num_samples, progress_bar=False)
    mcmc.run(jax.random.key(1), init_params={"v": jnp.zeros(d * (d + 1) // 2)})
    L = jax.vmap(lambda v: from_log_cholesky(v, d))(mcmc.get_samples()["v"][::thin])
    return np.asarray(L @ jnp.swapaxes(L, -1, -2))


@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_sampler_density_matches_the_distribution_it_samples(eta):
    """NUTS on the log-Cholesky coordinates with ``sigma_x_log_density`` (the prior plus the
    Jacobian the default sampler uses) draws what ``ScaledLKJ.sample`` draws: two-sample
    Kolmogorov-Smirnov tests on log-sds, a correlation and log det (2,000 thinned draws each).
    A Jacobian off by one power of ``L_ii`` fails the same test (negative control)."""
    d = 3
    pr = Prior(C=1.0, b=1.0, Lambda=np.diag([1.0, 4.0, 0.25]), Sigma_x_prior="lkj", eta=eta).resolve(d)
    direct = _features(np.asarray(_prior_draws(pr, jax.random.key(0), 2000)))
    sampled = _features(_nuts_draws(lambda L: sigma_x_log_density(L, pr), d))
    pvalues = [ks_2samp(direct[:, k], sampled[:, k]).pvalue for k in range(direct.shape[1])]
    assert min(pvalues) > 1e-3, pvalues
    wrong = _features(_nuts_draws(lambda L: sigma_x_log_density(L, pr) - jnp.log(jnp.diagonal(L)).sum(), d))
    assert min(ks_2samp(direct[:, k], wrong[:, k]).pvalue for k in range(direct.shape[1])) < 1e-3


def test_reaches_small_directions_the_inverse_wishart_rules_out():
    """The issue's mechanism: with ``Lambda = I`` (d = 2), a direction whose variance is under 1% of
    the features' scale has prior probability ``exp(-1 / (2 * 0.01)) = e^-50`` under ``IW(I, 3)``
    (the variance along ``u`` is ``u^T Lambda u / chi2_2``) and a polynomial one under the default
    separation prior (LKJ(2): about ``t^2``, here 3.5%; the default LKJ(1) more)."""
    key = jax.random.key(3)

    def small_share(**family):
        pr = Prior(C=1.0, b=1.0, Lambda=1.0, **family).resolve(2)
        S = np.asarray(_prior_draws(pr, key, 20000))
        return np.mean(np.linalg.eigvalsh(S)[:, 0] < 0.01)

    assert small_share(Sigma_x_prior="lkj", eta=2.0) > 0.02
    assert small_share(Sigma_x_prior="lkj") > small_share(Sigma_x_prior="lkj", eta=2.0)
    assert small_share(Sigma_x_prior="iw") == 0.0


@pytest.mark.parametrize("bad", [dict(Sigma_x_prior="wishart"), dict(eta=0.0), dict(scale_sd=-1.0), dict(eta=True)])
def test_bad_hyperparameters_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        Prior(**bad)


def test_auto_means_the_inverse_wishart_where_only_it_uses_what_is_given():
    assert Prior().sigma_x_family == "lkj"
    assert Prior(Lambda=[1.0, 2.0]).sigma_x_family == "lkj"
    assert Prior(kappa=5.0).sigma_x_family == "iw"
    assert Prior(Lambda=[[1.0, 0.3], [0.3, 1.0]]).sigma_x_family == "iw"
    with pytest.raises(ValueError, match="takes only Lambda's diagonal"):
        Prior(Lambda=[[1.0, 0.3], [0.3, 1.0]], Sigma_x_prior="lkj")
    with pytest.raises(ValueError, match="no kappa"):
        Prior(kappa=5.0, Sigma_x_prior="lkj")


def test_resolved_prior_records_the_family():
    pr = Prior(C=1.0, b=1.0, Lambda=1.0, Sigma_x_prior="lkj", eta=2.0, scale_sd=0.5).resolve(2)
    assert (pr.eta, pr.scale_sd) == (2.0, 0.5)
    iw = Prior(C=1.0, b=1.0, Lambda=1.0, Sigma_x_prior="iw").resolve(2)
    assert iw.eta is None and iw.scale_sd is None


@pytest.mark.slow  # 77 s. At n_j = 2000 the default is normalx-clt (its SBC under this prior: test_normalx_clt.py);
# normalx-nuts, the default where a party is small, has its SBC under this prior in test_samplers.py::test_sbc_small
def test_sbc_of_normalx_nuts_under_the_separation_prior_with_large_parties():
    """Simulation-based calibration of ``normalx-nuts`` with ``Sigma_x`` drawn from the separation
    prior (its own model), large parties and release noise far above the Wishart spread of ``S_j``:
    the regime where ``Sigma_x``'s prior speaks (ranks of theta, sigma2, an entry of Sigma_x, S)."""
    pr = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=1.0, Sigma_x_prior="lkj").resolve(2)
    res = sbc(jax.random.key(11), "normalx-nuts", pr, np.array([2000, 2000, 2000]), 400.0, 400.0,
              replications=100, num_warmup=200, thin=1)
    assert min(res.pvalues.values()) > 1e-3, res.pvalues


def test_the_default_fit_uses_the_separation_prior_and_the_gibbs_sampler_the_inverse_wishart():
    import warnings

    from _shared import linear_stats

    import bayes_dpreg as bd

    stats = linear_stats(d=2, J=3, n=300, eps=1.0, bound=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts = bd.fit(stats, num_samples=100, num_warmup=100, num_chains=2)
        gibbs = bd.fit(stats, "normalx", num_samples=100, num_warmup=100, num_chains=2)
    assert "LKJ(1)" in nuts.posterior.attrs["prior_description"]
    assert "Sigma_x_prior='lkj'" in nuts.posterior.attrs["prior"]
    assert "IW(" in gibbs.posterior.attrs["prior_description"]
    with pytest.raises(ValueError, match="needs Sigma_x_prior in \\('iw',\\)"):
        bd.fit(stats, "normalx", Prior(Sigma_x_prior="lkj"))
    with pytest.raises(ValueError, match="not the separation prior"):
        sbc(jax.random.key(0), "normalx", Prior(C=1.0, b=1.0, Lambda=1.0).resolve(2), np.array([50, 50]), 1.0, 1.0)


@jax.jit  # compiled, as the samplers run them: op by op, each operation compiled a program of its own
def _separation_log_prob(lam, Sigma):
    return ScaledLKJ(jnp.diag(lam), eta=2.0, scale_sd=0.7).log_prob(Sigma)


@jax.jit
def _separation_log_prob_sqrt(lam, F, log_det):
    return ScaledLKJ(jnp.diag(lam), eta=2.0, scale_sd=0.7).log_prob_sqrt(F, log_det)


@pytest.mark.parametrize("d", [1, 2, 5])
def test_the_square_root_density_is_the_separation_priors(d):
    """ScaledLKJ.log_prob_sqrt (no factorisation of R, used by the samplers' gradients) equals
    log_prob to rounding, for a non-triangular square root and an ill-conditioned Sigma."""
    rng = np.random.default_rng(d)
    for scale in (1.0, 1e-3):
        F = rng.standard_normal((d, d)) @ np.diag(np.geomspace(1.0, scale, d))
        Sigma = F @ F.T
        lam = jnp.asarray(rng.uniform(0.5, 2.0, d))
        want = float(_separation_log_prob(lam, jnp.asarray(Sigma)))
        got = float(_separation_log_prob_sqrt(lam, jnp.asarray(F), jnp.linalg.slogdet(Sigma)[1]))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("family", ["lkj", "iw"])
def test_numpy_draws_of_the_diagonal_follow_the_prior(family):
    """``sigma_x_diagonal_draws`` (the prior group's theta under ``theta_scale="features"``) against the
    diagonal of the distribution's own draws."""
    from bayes_dpreg.model.densities import sigma_x_diagonal_draws

    kw = {"Sigma_x_prior": "lkj", "scale_sd": 0.7} if family == "lkj" else {"kappa": 5.0}
    pr = Prior(C=1.0, b=1.0, Lambda=[2.0, 0.5, 1.0], **kw).resolve(3)
    ours = sigma_x_diagonal_draws(pr, np.random.default_rng(0), 4000)
    theirs = np.diagonal(np.asarray(prior_dist(pr, "Sigma_x").sample(jax.random.key(0), (4000,))), axis1=-2, axis2=-1)
    for k in range(3):
        assert ks_2samp(ours[:, k], theirs[:, k]).pvalue > 1e-3, (family, k)
    other = sigma_x_diagonal_draws(pr._replace(Lambda=2.0 * pr.Lambda), np.random.default_rng(0), 4000)
    assert ks_2samp(other[:, 1], theirs[:, 1]).pvalue < 1e-6  # it can tell a scale twice as large
