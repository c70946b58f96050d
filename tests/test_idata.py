"""The InferenceData contract (bayes_dpreg.posterior.idata): ArviZ's groups and names, so that az.summary,
az.loo, az.compare and az.plot_ppc work on every method's output."""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import bayes_dpreg as bd
from bayes_dpreg.model.linalg import nearest_psd

GROUPS = {"posterior", "sample_stats", "observed_data", "constant_data", "log_likelihood", "posterior_predictive",
          "prior", "prior_predictive"}


def _stats(fn=bd.release, J=3, d=2, n=3000, **kw):
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    y = np.clip(X @ np.linspace(0.6, -0.4, d) + 0.1 * rng.standard_normal(n), -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [fn(Xj, yj, epsilon=2.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=[7, j], name=f"h{j}", **kw)
                for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))]


def _fit(stats, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bd.fit(stats, method, num_samples=200, num_warmup=200, num_chains=2, seed=3, **kw)


@pytest.mark.parametrize("method, fn, kw", [
    ("fast", bd.release, {}), ("fixeds", bd.release, {}), ("bs", bd.release_bs, {}),
    ("normalx-intercept", bd.release, {"intercept": True}),
])
def test_every_method_feeds_arviz(method, fn, kw):
    idata = _fit(_stats(fn, **kw), method)
    expected = GROUPS - ({"sample_stats"} if method == "fast" else set())
    assert expected <= set(idata.groups())
    summary = az.summary(idata)
    assert all(i.startswith(("theta[", "sigma2")) for i in summary.index), list(summary.index)
    assert not summary[["mean", "sd"]].isna().any().any()
    loo = az.loo(idata)
    assert np.isfinite(loo["elpd_loo"]) and loo["n_data_points"] == 3
    assert idata.log_likelihood["z_tilde"].dims == ("chain", "draw", "party")
    assert list(idata.observed_data["z_tilde"].coords["party"].values) == ["h0", "h1", "h2"]
    for g in idata.groups():
        at = idata[g].attrs
        assert at["created_by"] == "bayes_dpreg" and at["bayes_dpreg_version"] == bd.__version__
        assert at["method"] == method and at["epsilon"] == 2.0
    if method == "normalx-intercept":
        assert {"mu_x", "Sigma_x"} <= set(idata.latent_posterior.data_vars)


def test_log_likelihood_is_each_partys_release_density():
    stats = _stats()
    idata = _fit(stats, "fixeds")
    th = idata.posterior["theta"].values[1, 17]
    s2 = float(idata.posterior["sigma2"].values[1, 17])
    for j, s in enumerate(stats):
        S = np.asarray(nearest_psd(s.S))
        want = multivariate_normal(S @ th, s2 * S + s.sigma_z**2 * np.eye(2)).logpdf(s.z)
        assert idata.log_likelihood["z_tilde"].values[1, 17, j] == pytest.approx(want, rel=1e-10)
    ppc = idata.posterior_predictive["z_tilde"].values
    assert ppc.shape == (2, 200, 3, 2)
    # the observed release is a plausible draw of its posterior predictive
    q = (ppc < idata.observed_data["z_tilde"].values).mean((0, 1))
    assert np.all((q > 0.001) & (q < 0.999))


def test_the_eigenbasis_form_is_the_release_density():
    """z_dist_eigen (how the InferenceData evaluates a shared S_j) is z_dist rotated: the same log density
    at U^T z, party by party, also where S_j is singular, and U times its draws has z_dist's moments."""
    import jax

    from bayes_dpreg.model.densities import z_dist, z_dist_eigen

    rng = np.random.default_rng(2)
    J, d = 3, 4
    A = rng.normal(size=(J, d, d))
    A[2, :, 0] = A[2, :, 1]  # a singular S_j
    S = A @ np.swapaxes(A, 1, 2)
    theta, z, sigma_z = rng.normal(size=d), rng.normal(size=(J, d)), np.array([0.3, 1.0, 2.0])
    lam, U = np.linalg.eigh(S)
    lam = np.maximum(lam, 0.0)
    w = np.einsum("jkl,jk->jl", U, z)
    want = z_dist(S, theta, 0.7, sigma_z).log_prob(z)
    np.testing.assert_allclose(z_dist_eigen(lam, U, theta, 0.7, sigma_z).log_prob(w), want, rtol=1e-12)
    draws = z_dist_eigen(lam, U, theta, 0.7, sigma_z).sample(jax.random.key(0), (20000,))
    zs = np.einsum("jkl,njl->njk", U, np.asarray(draws))
    cov = 0.7 * S + sigma_z[:, None, None] ** 2 * np.eye(d)
    for j in range(J):
        se = np.sqrt(np.diag(cov[j]) / 20000)
        assert np.all(np.abs(zs[:, j].mean(0) - S[j] @ theta) < 4 * se)
        np.testing.assert_allclose(np.cov(zs[:, j].T), cov[j], rtol=0.1, atol=0.05 * np.abs(cov[j]).max())


def test_compare_and_ppc_plot(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    stats = _stats()
    fits = {m: _fit(stats, m) for m in ("fast", "fixeds")}
    cmp = az.compare(fits)
    assert set(cmp.index) == {"fast", "fixeds"}
    ax = az.plot_ppc(fits["fixeds"], var_names=["z_tilde"], num_pp_samples=50)
    assert ax is not None
    pr = fits["fixeds"].prior
    assert pr["theta"].shape == (1, 500, 2) and "sigma2" in pr


def test_point_estimate_has_no_likelihood():
    idata = _fit(_stats(bd.release_adassp), "adassp")
    assert "log_likelihood" not in idata.groups() and "observed_data" in idata.groups()


def test_prior_groups_follow_the_resolved_prior():
    """The prior group holds draws of the prior the fit used (theta ~ N(m, C), sigma2 ~ IG(a, b)),
    and the prior predictive z~_j is N(S^_j theta, sigma2 S^_j + sigma_z^2 I) at S^_j = nearestPSD(S~_j):
    its covariance over the prior is S^ C S^ + E[sigma2] S^ + sigma_z^2 I."""
    from bayes_dpreg.stats import stack_stats

    stats = _stats()
    prior = bd.Prior(m=[0.3, -0.2], C=0.5, a=4.0, b=0.6, Lambda=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bd.fit(stats, "fixeds", prior=prior, num_samples=50, num_warmup=50, num_chains=2, seed=1)
    pr = prior.resolve(2)
    theta = idata.prior["theta"].values.reshape(-1, 2)
    n = theta.shape[0]
    assert np.all(np.abs(theta.mean(0) - pr.m) < 4 * np.sqrt(np.diag(pr.C) / n))
    np.testing.assert_allclose(theta.var(0), np.diag(pr.C), rtol=0.2)
    s2 = idata.prior["sigma2"].values.ravel()
    assert abs(np.median(s2) - pr.b / 3.672) < 0.2 * pr.b / 3.672  # IG(4, b) median = b / 3.672
    st = stack_stats(stats)
    S = np.asarray(nearest_psd(st.S[0]))
    z = idata.prior_predictive["z_tilde"].values.reshape(n, 3, 2)[:, 0]
    cov = S @ pr.C @ S + pr.b / (pr.a - 1) * S + st.sigma_z[0] ** 2 * np.eye(2)
    np.testing.assert_allclose(z.mean(0), S @ pr.m, atol=4 * np.sqrt(np.diag(cov) / n).max())
    # 4 standard errors of a Gaussian sample covariance, Var(s_ij) = (c_ii c_jj + c_ij^2) / n: a relative
    # tolerance on the small off-diagonal entry would ask for less than one standard error
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(np.cov(z.T) - cov) < 4 * se)
