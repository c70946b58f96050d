"""Bridge sampling (bayes_dpreg.posterior.bridge) and the normalX model's evidence (compare.normalx_evidence):
the estimator against the fixed-S closed form, the normalX evidence against brute-force
integration written independently with scipy, and the pieces it integrates out analytically."""

import math
import warnings

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _shared import linear_stats
from numpyro.infer.util import log_density
from scipy import integrate
from scipy import stats as sps
from scipy.special import logsumexp

import bayes_dpreg as bd
from bayes_dpreg.model.densities import ModelData, fixeds_model, log_marginal_S, upper
from bayes_dpreg.model.linalg import from_log_cholesky, log_cholesky, log_cholesky_log_jacobian
from bayes_dpreg.posterior.bridge import bridge_sampling
from bayes_dpreg.posterior.compare import compare, log_evidence, normalx_evidence

PRIOR = dict(m=0.0, C=0.5, a=2.0, b=0.05, Lambda=0.3, kappa=3.0)


def _stats(d, J, n=200, eps=1.0, theta=None, seed=0):
    return linear_stats(d, J, n, eps, 2.0, theta, seed)


def test_log_cholesky_jacobian_matches_autodiff():
    d = 3
    rng = np.random.default_rng(0)
    A = rng.standard_normal((d, d))
    v = log_cholesky(jnp.asarray(A @ A.T + d * np.eye(d)))

    def to_upper(x):
        L = from_log_cholesky(x, d)
        return upper(L @ L.T)

    jac = jax.jacfwd(to_upper)(v)
    assert float(log_cholesky_log_jacobian(v, d)) == pytest.approx(np.linalg.slogdet(np.asarray(jac))[1], rel=1e-10)
    L = from_log_cholesky(v, d)
    np.testing.assert_allclose(np.asarray(log_cholesky(L @ L.T)), np.asarray(v), rtol=1e-12)


def test_marginal_of_S_integrates_sigma_x_out():
    """d = 1: ``p(S_1, S_2) = int W(S_j; Sigma, n_j) IW(Sigma; Lambda, kappa) dSigma`` by quadrature."""
    from bayes_dpreg.model.prior import ResolvedPrior

    pr = ResolvedPrior(m=np.zeros(1), C=np.eye(1), a=2.0, b=0.05, Lambda=np.array([[0.3]]), kappa=3.0,
                       nig_precision=np.eye(1))
    n = np.array([40.0, 70.0])
    S = np.array([[[9.0]], [[21.0]]])
    data = ModelData(jnp.asarray(S), jnp.zeros((2, 1)), jnp.asarray(n), jnp.ones(2), jnp.ones(2), jnp.asarray(1.0))

    def integrand(log_sig):
        sig = math.exp(log_sig)
        return math.exp(sum(sps.gamma.logpdf(S[j, 0, 0], n[j] / 2, scale=2 * sig) for j in range(2))
                        + sps.invgamma.logpdf(sig, 1.5, scale=0.15) + log_sig)

    brute = math.log(integrate.quad(integrand, -8, 4, limit=400, epsabs=0, epsrel=1e-12)[0])
    assert float(log_marginal_S(jnp.asarray(S), data, pr)) == pytest.approx(brute, rel=1e-9)


def test_bridge_sampling_recovers_the_fixeds_closed_form():
    """The estimator on a model with a closed-form evidence: fixed-S, d = 2, J = 3."""
    stats = _stats(2, 3, n=300, eps=2.0)
    prior = bd.Prior(**PRIOR)
    exact = log_evidence(stats, prior=prior)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bd.fit(stats, method="fixeds", prior=prior, num_samples=2000, seed=1)
    from bayes_dpreg.posterior.compare import _setup

    pr, data, *_ = _setup(stats, prior)

    def log_q(u):  # (theta, log sigma^2), joint density of the fixed-S model plus the log-Jacobian
        lp, _ = log_density(fixeds_model, (data, pr), {}, {"theta": u[:2], "sigma2": jnp.exp(u[2])})
        return lp + u[2]

    draws = np.concatenate([np.asarray(idata.posterior["theta"]),
                            np.log(np.asarray(idata.posterior["sigma2"]))[..., None]], -1)
    res = bridge_sampling(log_q, draws, seed=3)
    assert res.error < 0.02
    assert abs(res.log_evidence - exact) < max(4 * res.error, 0.02), (res, exact)


def _brute_normalx_d1(stats, prior):
    """``log p(S~, z~)`` of the normalX model for d = 1, J = 1 from scipy densities on a 3-D grid
    (Sigma_x, S, sigma^2; theta analytically: z~ | S, sigma^2 ~ N(S m, S^2 C + sigma^2 S + sigma_z^2)).
    The integrand factorises as ``f(S, sigma^2) g(S, Sigma_x)``, so the grid's sum is taken over
    ``sigma^2`` first, then over ``(S, Sigma_x)``: the same sum as over the full grid."""
    s = stats[0]
    St, z = float(np.ravel(s.S)[0]), float(np.ravel(s.z)[0])
    sS, sz, n = float(s.sigma_S), float(s.sigma_z), float(s.n)
    lS, t, lsig = np.linspace(-1, 9, 1000), np.linspace(-12, 5, 400), np.linspace(-12, 6, 600)
    G1, G2 = np.meshgrid(lS, t, indexing="ij")
    Sv, s2 = np.exp(G1), np.exp(G2)
    f = (sps.norm.logpdf(St, Sv, sS)
         + sps.norm.logpdf(z, prior["m"] * Sv, np.sqrt(Sv**2 * prior["C"] + s2 * Sv + sz**2))
         + sps.invgamma.logpdf(s2, prior["a"], scale=prior["b"]) + G1 + G2)
    H1, H3 = np.meshgrid(lS, lsig, indexing="ij")
    g = (sps.gamma.logpdf(np.exp(H1), n / 2, scale=2 * np.exp(H3))
         + sps.invgamma.logpdf(np.exp(H3), prior["kappa"] / 2, scale=prior["Lambda"] / 2) + H3)
    h = (lS[1] - lS[0]) * (t[1] - t[0]) * (lsig[1] - lsig[0])
    return logsumexp(logsumexp(f, axis=1)[:, None] + g) + math.log(h)


@pytest.mark.parametrize("eps", [1.0, 0.3])
def test_normalx_evidence_matches_brute_force(eps):
    stats = _stats(1, 1, eps=eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res, idata = normalx_evidence(stats, prior=bd.Prior(**PRIOR), num_samples=1000)
    brute = _brute_normalx_d1(stats, PRIOR)
    assert res.error < 0.02
    assert abs(res.log_evidence - brute) < 0.05, (res, brute)
    assert "S" in idata.latent_posterior


def test_bridge_refuses_bad_draws():
    f = lambda u: -0.5 * (u**2).sum()  # noqa: E731
    with pytest.raises(ValueError, match="chains, draws, p"):
        bridge_sampling(f, np.zeros((10, 3)))
    with pytest.raises(ValueError, match="too few"):
        bridge_sampling(f, np.zeros((1, 6, 5)))
    with pytest.raises(ValueError, match="non-finite"):
        bridge_sampling(f, np.full((2, 50, 2), np.nan))
    draws = np.random.default_rng(0).standard_normal((4, 500, 2))
    res = bridge_sampling(f, draws)  # a standard normal kernel: Z = 2 pi
    assert abs(res.log_evidence - math.log(2 * math.pi)) < 4 * res.error + 1e-3


def test_compare_under_normalx_ranks_the_true_model_first():
    stats = _stats(3, 3, n=400, eps=3.0, theta=[0.6, 0.0, -0.4])
    models = {"x0,x2": [0, 2], "all": None, "x1,x2": [1, 2]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, elpd = compare(stats, models, bd.Prior(**PRIOR), model="normalx", num_samples=600)
    assert table.index[0] == "x0,x2"
    assert {"log_evidence_se", "pareto_k_max"} <= set(table.columns)
    assert (table["log_evidence_se"] < 0.1).all()
    assert table.attrs["model"] == "normalx"
    assert az.compare(elpd).index[0] in ("x0,x2", "all")
    with pytest.raises(ValueError, match="model must be"):
        compare(stats, models, bd.Prior(**PRIOR), model="normal")
    with pytest.raises(TypeError, match="normalx"):
        log_evidence(stats, prior=bd.Prior(**PRIOR), num_samples=10)


def test_cli_compare_with_normalx_evidence(tmp_path, capsys):
    from bayes_dpreg.cli import main

    paths = [str(s.save(tmp_path / f"{s.name}.json")) for s in _stats(2, 2, n=300, eps=2.0)]
    assert main(["compare", *paths, "--evidence", "normalx"]) != 0
    assert "name them with --candidate" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["compare", *paths, "--evidence", "normalx", "--candidate", "one=0", "--candidate", "both=0,1",
                     "--num-samples", "300", "--report", str(tmp_path / "cmp.html")]) == 0
    out = capsys.readouterr().out
    assert "bridge sampling" in out and "log_evidence_se" in out and "both" in out
    page = (tmp_path / "cmp.html").read_text()
    assert "normalX model" in page and "log_evidence_se" in page and "pareto_k_max" in page
