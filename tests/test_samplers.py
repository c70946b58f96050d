"""MCMC-normalX / MCMC-fixedS: log-densities, conditionals, closed-form limits, SBC, fit() and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from _shared import unit_releases
from numpyro.infer.util import log_density

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import collapsed_log_lik, fast_posterior, party_terms, theta_conditional
from bayes_dpreg.model.densities import fixeds_model, log_target_S, normalx_model, prior_dists
from bayes_dpreg.model.linalg import spd_inverse
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import sbc, simulate_from_prior
from bayes_dpreg.samplers import fixeds, mh, normalx
from bayes_dpreg.stats import stack_stats

PRIOR = Prior(m=[0.1, -0.2, 0.3], C=2.0, a=3.0, b=2.0, Lambda=[[2.0, 0.3, 0.0], [0.3, 1.5, 0.1], [0.0, 0.1, 1.0]],
              kappa=7.0)


def _random_state(seed, J=3, d=3):
    pr = PRIOR.resolve(d)
    n = jnp.array([25.0, 40.0, 33.0])[:J]
    # compiled: op by op, each operation of the simulation compiled a program of its own (hundreds)
    params, data = jax.jit(simulate_from_prior)(jax.random.key(seed), pr, n, jnp.full(J, 4.0), jnp.full(J, 3.0))
    return pr, params, data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_log_densities_equal_the_numpyro_model(seed):
    pr, params, data = _random_state(seed)
    lp_model = log_density(normalx_model, (data, pr), {}, params)[0]
    pd = prior_dists(pr)
    lp_kernel = (pd["theta"].log_prob(params["theta"]) + pd["sigma2"].log_prob(params["sigma2"])
                 + pd["Sigma_x"].log_prob(params["Sigma_x"])
                 + log_target_S(params["S"], params["theta"], params["sigma2"], params["Sigma_x"], data).sum())
    np.testing.assert_allclose(lp_kernel, lp_model, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_level_target_is_the_theta_marginal_of_the_model(seed):
    """log p(everything) - log p(theta | rest) does not depend on theta and equals the collapsed target."""
    pr, params, data = _random_state(seed)
    S, s2 = params["S"], params["sigma2"]
    cond = theta_conditional(S, data.z_tilde, s2, data.sigma_z**2, jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)))
    marg = normalx._level_target(S, params["Sigma_x"], s2, data, pr) + prior_dists(pr)["sigma2"].log_prob(s2)
    for th in (params["theta"], params["theta"] + 1.0, jnp.zeros(3)):
        full = log_density(normalx_model, (data, pr), {}, {**params, "theta": th})[0]
        gauss = dist.MultivariateNormal(cond.mean, cond.cov).log_prob(th)
        np.testing.assert_allclose(full - gauss, marg, rtol=1e-10)


def test_collapsed_log_lik_equals_the_stacked_gaussian():
    pr, params, data = _random_state(3)
    S, s2 = params["S"], params["sigma2"]
    t = party_terms(S, data.z_tilde, s2, data.sigma_z**2)
    got = collapsed_log_lik(t.U.sum(0), t.u.sum(0), t.c.sum(0), jnp.asarray(pr.m), spd_inverse(jnp.asarray(pr.C)), 9)
    H = np.vstack(np.asarray(S))
    R = np.zeros((9, 9))
    for j in range(3):
        R[3 * j:3 * j + 3, 3 * j:3 * j + 3] = s2 * S[j] + data.sigma_z[j] ** 2 * np.eye(3)
    ref = dist.MultivariateNormal(jnp.asarray(H @ pr.m), jnp.asarray(H @ pr.C @ H.T + R)).log_prob(data.z_tilde.ravel())
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_fixeds_model_density():
    pr, params, data = _random_state(4)
    fx = data._replace(S_tilde=params["S"])
    lp = log_density(fixeds_model, (fx, pr), {}, {"theta": params["theta"], "sigma2": params["sigma2"]})[0]
    pd = prior_dists(pr)
    ref = (pd["theta"].log_prob(params["theta"]) + pd["sigma2"].log_prob(params["sigma2"])
           + dist.MultivariateNormal(params["S"] @ params["theta"], params["sigma2"] * params["S"]
                                     + (data.sigma_z**2)[:, None, None] * jnp.eye(3)).log_prob(data.z_tilde).sum())
    np.testing.assert_allclose(lp, ref, rtol=1e-12)


def test_fixeds_with_sigma2_held_fixed_reproduces_the_fast_posterior():
    pr, params, data = _random_state(5)
    fx = data._replace(S_tilde=params["S"])
    settings = mh.Settings(num_warmup=0, update_sigma2=False)

    def run(key):
        st = fixeds.fixeds_init(key, fx, pr, settings)
        st = st._replace(z={**st.z, "sigma2": jnp.asarray(0.7)})
        return jax.lax.scan(lambda s, _: (fixeds.fixeds_step(s, fx, pr, settings),) * 2, st, None, length=5000)[1].z

    draws = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(0), 4))["theta"].reshape(-1, 3)
    fast = fast_posterior(params["S"], data.z_tilde, data.sigma_z**2, 0.7, jnp.asarray(pr.m), jnp.asarray(pr.C))
    sd = np.sqrt(np.diag(fast.cov))
    assert np.all(np.abs(draws.mean(0) - fast.mean) < 4.5 * sd / np.sqrt(draws.shape[0]))
    np.testing.assert_allclose(np.cov(draws.T), fast.cov, rtol=0.06, atol=0.03 * sd.max() ** 2)


def test_numpyro_mcmc_runs_the_kernels():
    """fixeds.FixedS / normalx.NormalX under numpyro.infer.MCMC (vectorised chains): FixedS with
    sigma2 held at 0.7 reproduces eq. (12)'s posterior; NormalX's info and adaptation fields
    come back as extra fields with one entry per draw."""
    from numpyro.infer import MCMC

    pr, params, data = _random_state(5)
    fx = data._replace(S_tilde=params["S"])
    mcmc = MCMC(fixeds.FixedS(pr, update_sigma2=False), num_warmup=0, num_samples=5000, num_chains=2,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.key(1), fx, init_params={"sigma2": jnp.full(2, 0.7)})
    draws = np.asarray(mcmc.get_samples()["theta"])
    fast = fast_posterior(params["S"], data.z_tilde, data.sigma_z**2, 0.7, jnp.asarray(pr.m), jnp.asarray(pr.C))
    sd = np.sqrt(np.diag(fast.cov))
    assert np.all(np.abs(draws.mean(0) - fast.mean) < 4.5 * sd / np.sqrt(draws.shape[0]))

    mcmc = MCMC(normalx.NormalX(pr), num_warmup=50, num_samples=20, num_chains=2, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.key(2), data, extra_fields=normalx.NormalX.extra_fields)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    assert extra["info.accept_S"].shape == (2, 20, 3) and extra["adapt.log_alpha"].shape == (2, 20, 3)
    assert np.all((extra["info.accept_sigma2"] >= 0) & (extra["info.accept_sigma2"] <= 1))
    assert mcmc.get_samples(group_by_chain=True)["S"].shape == (2, 20, 3, 3, 3)


SBC_PRIOR = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=3.0, kappa=6.0)  # E[Sigma_x] = I
# normalx-nuts, the default where a party is small (samplers.default_method), under its default prior for Sigma_x
# (the separation prior, scales log-normal around 1, uniform LKJ(1) correlations), with sigma_y^2 <= 2 (8% of IG(3, 2)
# above it: the bound's option, Prior(sigma2_max=...), on the logit coordinate)
SBC_SEPARATION = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=1.0, Sigma_x_prior="lkj", sigma2_max=2.0)
SBC_CASES = {  # method, prior, kernel settings, replications, warm-up, thinning
    "fixeds": ("fixeds", SBC_PRIOR, {}, 200, 300, 5),
    "normalx": ("normalx", SBC_PRIOR, {}, 200, 300, 5),
    "normalx-algorithm1": ("normalx", SBC_PRIOR, {"collapse_theta": False, "level_moves": False}, 200, 300, 5),
    # every 2nd draw: with each draw (99 a replication) the ranks of S[0][0,0] gave p = 0.00095 on an AMD EPYC,
    # whose chains differ from the Intel Xeon's that passed, and 0.0034 outside pytest; every 2nd, p >= 0.07 there
    # at about the same time (SBC's ranks assume draws near independent: Talts et al. 2018 thin to the ESS)
    "normalx-nuts": ("normalx-nuts", SBC_SEPARATION, {}, 100, 200, 2),
}


@pytest.mark.parametrize(
    "case",
    # MCMC-normalX's SBC (35 s) and Algorithm 1 as published (22 s) run with `pytest -m slow`, for the suite's
    # 15 minutes: normalx is a default nowhere; its log-densities are checked against the model by default
    [pytest.param(c, marks=pytest.mark.slow) if c.startswith("normalx-algorithm1") or c == "normalx" else c
     for c in SBC_CASES],
)
def test_sbc_small(case):
    """SBC, d = 2, J = 2, n_j = 30, eps = 1 noise, 100-200 replications (vmapped). Fails on a wrong
    acceptance ratio: a missing Jacobian (level moves or log-sigma2 walk) or Hastings term
    gives p-values of 1e-16 to 1e-45 here (see the closing note of the sampler issue).
    The full study (more replications and draws) is ``studies/sbc.py``."""
    method, prior, extra, reps, warmup, thin = SBC_CASES[case]
    sig = bd.calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S
    res = sbc(jax.random.key(1), method, prior.resolve(2), np.array([30, 30]), sig, sig, replications=reps,
              num_warmup=warmup, options=extra, thin=thin)
    assert len(res.pvalues) == (3 if method == "fixeds" else 5)
    assert min(res.pvalues.values()) > 1e-3, res.pvalues


def _released(J=3, d=2, n=6000, seed=0):
    return unit_releases(n, d, J, 1.0, seed)[0]


@pytest.mark.parametrize("method", ["normalx", "fixeds"])
def test_fit_mcmc_structure(method):
    stats = _released()
    idata = bd.fit(stats, method=method, num_warmup=200, num_samples=300, num_chains=2, seed=1)
    post = idata.posterior
    assert post["theta"].dims == ("chain", "draw", "coef") and post["theta"].shape == (2, 300, 2)
    assert post["sigma2"].dims == ("chain", "draw")
    ss = idata.sample_stats
    assert 0 < float(ss["acceptance_rate" if method == "fixeds" else "accept_prob_sigma2"].mean()) < 1
    assert ss["lp"].dims == ("chain", "draw") and np.isfinite(ss["lp"]).all()
    if method == "normalx":
        lat = idata.latent_posterior
        assert "S" not in post and "Sigma_x" not in post  # latent: az.summary lists the model parameters only
        assert lat["S"].dims == ("chain", "draw", "party", "row", "col") and lat["S"].shape == (2, 300, 3, 2, 2)
        assert lat["Sigma_x"].dims == ("chain", "draw", "row", "col")
        assert ss["accept_prob_S"].dims == ("chain", "draw", "party")
        assert 0.05 < float(ss["accept_prob_S"].mean()) < 0.5
        assert len(post.attrs["alpha_final"]) == 2 * 3
        np.testing.assert_allclose(lat["S"].values[..., 0, 1], lat["S"].values[..., 1, 0])
    assert post.attrs["method"] == method and post.attrs["num_warmup"] == 200


def test_fit_normalx_nuts_structure():
    stats = _released()
    idata = bd.fit(stats, method="normalx-nuts", num_warmup=150, num_samples=100, num_chains=2, seed=2)
    post, ss, lat = idata.posterior, idata.sample_stats, idata.latent_posterior
    assert lat["S"].shape == (2, 100, 3, 2, 2) and lat["Sigma_x"].shape == (2, 100, 2, 2)
    assert post["sigma2"].shape == (2, 100) and post["theta"].shape == (2, 100, 2)
    assert set(ss.data_vars) >= {"diverging", "acceptance_rate", "n_steps", "tree_depth", "energy", "step_size", "lp"}
    assert post.attrs["divergences"] == int(ss["diverging"].sum()) and post.attrs["method"] == "normalx-nuts"
    np.testing.assert_allclose(lat["S"].values[..., 0, 1], lat["S"].values[..., 1, 0])
    assert np.all(np.linalg.eigvalsh(lat["S"].values) > 0)


def test_default_method_is_normalx_clt_with_the_autoscaled_prior():
    stats = _released()  # n_j = 2000 rows a party
    idata = bd.fit(stats, num_warmup=150, num_samples=100, num_chains=2)
    at = idata.posterior.attrs
    assert at["method"] == bd.DEFAULT_METHOD == "normalx-clt" and at["prior_autoscaled"] == 1
    scales = bd.prior_scales(stack_stats(stats))
    np.testing.assert_allclose(at["prior_theta_sd"], scales.y_bound / np.sqrt(4 * 2 * scales.feature_ms))


def test_fit_mcmc_agrees_with_fast_when_noise_is_small():
    """eps large: every method's posterior mean is near least squares."""
    stats, X, y = unit_releases(20000, 2, 3, 1e4, seed=3)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    # the shapes, chains and warm-ups of the structure tests above: their compiled programs serve
    for method, warmup in (("normalx-nuts", 150), ("normalx", 200), ("fixeds", 200)):
        idata = bd.fit(stats, method=method, prior=Prior(C=100.0), num_warmup=warmup, num_samples=500, num_chains=2)
        np.testing.assert_allclose(idata.posterior["theta"].mean(("chain", "draw")), ols, rtol=0.05, atol=0.02)


def test_small_party_is_rejected_for_normalx():
    rng = np.random.default_rng(0)
    stats = [bd.release(rng.normal(size=(n, 3)) * 0.2, rng.normal(size=n) * 0.2, epsilon=1, delta=1e-5,
                        x_bound=1, y_bound=1, seed=n) for n in (50, 4)]
    with pytest.raises(ValueError, match=r"needs n_j > d \+ 1 = 4.*\(1, 4\)"):
        bd.fit(stats, method="normalx")
    bd.fit(stats, method="fixeds", num_warmup=10, num_samples=10)  # fixedS has no Wishart: fine


def test_non_finite_chain_names_the_site():
    from bayes_dpreg.posterior.inference import _check_finite

    draws = {"theta": np.zeros((2, 5, 3)), "sigma2": np.ones((2, 5))}
    draws["sigma2"][1, 3] = np.nan
    with pytest.raises(FloatingPointError, match=r"site 'sigma2' became non-finite \(first at chain 1, draw 3\)"):
        _check_finite("normalx", draws)


def test_kernel_settings_are_fit_options():
    stats = _released()
    idata = bd.fit(stats, method="normalx", num_warmup=100, num_samples=50, num_chains=1, target_accept_S=0.3,
                   collapse_theta=False, level_moves=False)
    assert idata.posterior.attrs["target_accept_S"] == 0.3
    with pytest.raises(TypeError, match="method 'normalx'"):
        bd.fit(stats, method="normalx", num_warmup=10, num_samples=10, not_an_option=1)


def test_wishart_increments_equal_numpyro_log_prob():
    """The S move's closed-form prior and Hastings terms equal differences of numpyro's Wishart log_prob."""
    pr, params, data = _random_state(6)
    S, Sx = params["S"], params["Sigma_x"]
    log_alpha = jnp.log(jnp.array([12.0, 30.0, 80.0]))
    prop, incr = normalx._wishart_proposal(jax.random.key(3), S, log_alpha, Sx, data)
    alpha = jnp.exp(log_alpha)[:, None, None]
    prior = dist.Wishart(data.n, scale_matrix=Sx)
    ref = (prior.log_prob(prop) - prior.log_prob(S)
           + dist.Wishart(alpha[:, 0, 0], scale_matrix=prop / alpha).log_prob(S)
           - dist.Wishart(alpha[:, 0, 0], scale_matrix=S / alpha).log_prob(prop))
    np.testing.assert_allclose(incr, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_congruence_identity_equals_the_full_level_target(seed):
    """rest' - rest - J(d+1) log|det G| == level_target(G x G^T) - level_target(x) for any G."""
    pr, params, data = _random_state(seed)
    S, Sx, s2 = params["S"], params["Sigma_x"], params["sigma2"]
    G = jnp.eye(3) + 0.3 * jax.random.normal(jax.random.key(seed + 10), (3, 3))
    logdet_G = jnp.linalg.slogdet(G)[1]
    S2, Sx2 = G @ S @ G.T, G @ Sx @ G.T
    J, d = 3, 3
    via_identity = (normalx._level_rest(S2, Sx2, s2, data, pr) - normalx._level_rest(S, Sx, s2, data, pr)
                    - J * (d + 1) * logdet_G)
    full = normalx._level_target(S2, Sx2, s2, data, pr) - normalx._level_target(S, Sx, s2, data, pr)
    np.testing.assert_allclose(via_identity, full, rtol=1e-9, atol=1e-8)


@pytest.mark.slow  # 32-51 s; MCMC-normalX is a default nowhere (its SBC runs with -m slow too); its log-densities
# are checked against the model, and its convergence warnings (tests/test_convergence.py), by default
def test_convergence_in_the_papers_setting():
    """n = 1e5, d = 5, J = 5, eps = 1 (paper's simulation and prior), 4 x (1000 + 5000):
    R-hat <= 1.01 and bulk ESS >= 400 for every theta. Seed 2 has an ill-conditioned Sigma_x
    (Algorithm 1 as published reaches R-hat 1.32, ESS 9 there)."""
    import arviz as az

    from studies.convergence import run

    idata, _, _ = run(seed=2, variant={})
    summ = az.summary(idata, var_names=["theta"], kind="diagnostics")
    assert summ["r_hat"].max() <= 1.01 and summ["ess_bulk"].min() >= 400, summ


def test_predictive_simulates_from_the_prior():
    """numpyro.infer.Predictive on the model (observe=False) draws parameters and released statistics."""
    from numpyro.infer import Predictive

    pr, _, data = _random_state(0)
    draws = Predictive(normalx_model, num_samples=4000)(jax.random.key(0), data, pr, observe=False)
    assert draws["S"].shape == (4000, 3, 3, 3) and draws["S_tilde"].shape == (4000, 3, 6)
    assert draws["z_tilde"].shape == (4000, 3, 3)
    # IW marginal: Sigma_x[0,0] ~ IG((kappa - d + 1)/2, Lambda_00/2) = IG(2.5, 1)
    from scipy.stats import invgamma, kstest

    assert kstest(np.asarray(draws["Sigma_x"])[:, 0, 0], invgamma(2.5, scale=1.0).cdf).pvalue > 1e-3
    # S_j | Sigma_x ~ W(Sigma_x, n_j): E[S_j - n_j Sigma_x] = 0, sd of S_j[0,0] = sqrt(2 n_j) Sigma_x[0,0]
    S, Sx, n = np.asarray(draws["S"]), np.asarray(draws["Sigma_x"]), np.asarray(data.n)
    z = (S[:, :, 0, 0] - n * Sx[:, None, 0, 0]) / (np.sqrt(2 * n) * Sx[:, None, 0, 0])
    assert np.all(np.abs(z.mean(0)) < 4.5 / np.sqrt(4000)) and np.allclose(z.std(0), 1, atol=0.08)
    fx = Predictive(fixeds_model, num_samples=10)(jax.random.key(1), data, pr, observe=False)
    assert fx["z_tilde"].shape == (10, 3, 3)
