"""MCMC-B&S (App. C.1): its release, its Gibbs pieces, and its posterior against the exact one."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import nig_posterior
from bayes_dpreg.model.wishart_moments import ss_vector
from bayes_dpreg.privacy.noisy_stats import load_stats
from bayes_dpreg.privacy.mechanisms import release_bs
from bayes_dpreg.privacy.gaussian import NotPrivateWarning, analytic_gaussian_sigma, bs_sensitivity, calibrate_bs
from bayes_dpreg.samplers.bs import ss_conditional, unpack_ss


def test_bs_sensitivity_bounds_random_replacements():
    rng = np.random.default_rng(0)
    B, Y = 1.3, 0.7
    bound = bs_sensitivity(B, Y)
    iu = np.triu_indices(3)
    worst = 0.0
    for _ in range(20000):
        x, x2 = (v / np.linalg.norm(v) * B * rng.uniform() ** 0.2 for v in rng.normal(size=(2, 3)))
        y, y2 = rng.uniform(-Y, Y, 2)
        t = lambda x, y: np.concatenate([np.outer(x, x)[iu], x * y, [y * y]])
        worst = max(worst, np.linalg.norm(t(x, y) - t(x2, y2)))
    assert worst <= bound
    assert worst > 0.8 * bound  # the bound is not loose by much
    assert bs_sensitivity(B, Y, "add_remove") == pytest.approx(np.sqrt(B**4 + B**2 * Y**2 + Y**4))


def test_release_bs_noise_and_file_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2)) * 0.3
    y = X @ [0.5, -0.2] + 0.1 * rng.normal(size=200)
    s = release_bs(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, seed=3)
    assert s.mechanism == "bs" and s.sigma_u == s.sigma_S == s.sigma_z
    assert s.sigma_u == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5) * bs_sensitivity(2.0, 1.0))
    assert s.u != pytest.approx(y @ y, rel=1e-6)  # noise was added
    path = s.save(tmp_path / "bs.json")
    assert load_stats(path) == s
    fields = s.to_dict()
    fields["sigma_u"] *= 0.5
    with pytest.raises(ValueError, match="sigma_u"):
        bd.NoisyStats(**fields)
    fields = s.to_dict()
    fields["u"] = None
    with pytest.raises(ValueError, match="must carry u"):
        bd.NoisyStats(**fields)
    with pytest.warns(NotPrivateWarning):
        r = release_bs(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, seed=3, calibration="as_published")
    assert r.sigma_u == pytest.approx(calibrate_bs(1.0, 1e-5, 2.0, 1.0, "as_published"))
    with pytest.raises(ValueError, match="joint"):
        release_bs(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, calibration="split")


def test_unpack_inverts_ss_vector():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(3, 4, 4))
    S = A + np.swapaxes(A, -1, -2)
    z, u = rng.normal(size=(3, 4)), rng.normal(size=3)
    S2, z2, u2 = unpack_ss(ss_vector(jnp.asarray(S), jnp.asarray(z), jnp.asarray(u)), 4)
    np.testing.assert_array_equal(S2, S)
    np.testing.assert_array_equal(z2, z)
    np.testing.assert_array_equal(u2, u)


def test_ss_conditional_matches_the_precision_form():
    rng = np.random.default_rng(3)
    D = 6
    A = rng.normal(size=(D, D))
    P = A @ A.T * 50 + np.eye(D)
    mu, obs, s2 = rng.normal(size=D) * 10, rng.normal(size=D) * 10, 4.0
    mean, U, scale = ss_conditional(jnp.asarray(mu), jnp.asarray(P), jnp.asarray(obs), jnp.asarray(s2))
    cov_ref = np.linalg.inv(np.linalg.inv(P) + np.eye(D) / s2)
    mean_ref = cov_ref @ (np.linalg.solve(P, mu) + obs / s2)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(U @ np.diag(scale**2) @ U.T, cov_ref, rtol=1e-9, atol=1e-9)


@pytest.fixture(scope="module")
def small_noise_problem():
    sim = bd.simulate(8000, 2, seed=3)
    xb, yb = float(np.linalg.norm(sim.X, axis=1).max()), float(np.abs(sim.y).max())
    stats = [release_bs(X, y, epsilon=1e4, delta=1e-5, x_bound=xb, y_bound=yb, seed=j)
             for j, (X, y) in enumerate(bd.split_parties(sim.X, sim.y, 2))]
    return sim, stats


def test_bs_posterior_equals_the_exact_one_when_noise_vanishes(small_noise_problem):
    sim, stats = small_noise_problem
    prior = bd.Prior(a=20, b=0.5, C=38, Lambda=1.0)
    pr = prior.resolve(2)
    idata = bd.fit(stats, "bs", prior, num_samples=1000, num_warmup=300, num_chains=2, seed=1)
    th = idata.posterior.theta.values.reshape(-1, 2)
    post = nig_posterior(jnp.asarray(sim.X.T @ sim.X), jnp.asarray(sim.X.T @ sim.y), sim.y @ sim.y, len(sim.y),
                         jnp.asarray(pr.m), jnp.asarray(pr.nig_precision), pr.a, pr.b)
    sd = np.sqrt(np.diag(post.theta_cov))
    # noise sd 0.56 on statistics of size ~1e4 moves the posterior by << its sd; 2000 nearly
    # independent draws give a Monte Carlo sd of ~sd/45 for the mean
    np.testing.assert_allclose(th.mean(0), post.mean, atol=float(5 * sd.max() / np.sqrt(2000) + 0.05 * sd.max()))
    np.testing.assert_allclose(th.std(0), sd, rtol=0.1)
    assert idata.posterior.attrs["b_floored_fraction"] == 0.0


def test_bs_needs_its_release_and_its_release_serves_other_methods(small_noise_problem):
    sim, stats = small_noise_problem
    ssp = [bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=10.0, y_bound=10.0, seed=0)
           for X, y in bd.split_parties(sim.X, sim.y, 2)]
    with pytest.raises(ValueError, match="release_bs"):
        bd.fit(ssp, "bs")
    idata = bd.fit(stats, "fast", num_samples=10)
    assert idata.posterior.theta.shape == (4, 10, 2)


def test_bs_under_heavy_noise_stays_finite_and_reports_floors():
    sim = bd.simulate(300, 2, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = [release_bs(X, y, epsilon=0.1, delta=1e-5, x_bound=3.0, y_bound=3.0, seed=j)
                 for j, (X, y) in enumerate(bd.split_parties(sim.X, sim.y, 3))]
    idata = bd.fit(stats, "bs", num_samples=300, num_warmup=100, num_chains=2)
    assert np.isfinite(idata.posterior.theta.values).all()


def test_bs_starts_and_stays_finite_on_a_near_singular_single_release():
    """Fig. 2's d = 5, J = 1, eps = 0.1 replication 0: starting from ``S~`` itself, theta's first
    draw was about 1e5 and the next CLT draw NaN (20 of 50 replications of that cell were NaN)."""
    from bayes_dpreg.samplers.bs import bs_init, bs_step
    from paper import experiments as ex  # the paper's runner, not in the wheel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = ex.make_replicates(n=100_000, d=5, J=1, epsilon=0.1, reps=1, seed=0)[0]
    from bayes_dpreg.stats import stack_stats
    from bayes_dpreg.samplers import bs

    data, pr = bs.data(stack_stats(rep.bs)), rep.prior.resolve(5)
    state = jax.jit(bs_init)(jax.random.key(3), data, pr)  # compiled: op by op, a program an operation
    assert np.abs(np.asarray(state.z["theta"])).max() < 10.0
    state = jax.lax.fori_loop(0, 200, lambda i, s: bs_step(s, data, pr), state)
    assert all(np.isfinite(np.asarray(v)).all() for v in state.z.values())


def test_clt_prior_draw_survives_a_tiny_sigma2():
    """``theta^T Sigma_x theta`` = 1e11 against ``sigma^2`` = 1e-5: factorising Omega loses the last pivot."""
    from bayes_dpreg.samplers.bs import _clt_prior_draw

    theta = jnp.asarray([-1.2e5, -3.8e5, -5.9e5, 1.9e5, -3.1e5])
    ss = _clt_prior_draw(jax.random.key(0), theta, jnp.asarray(1e-5), jnp.eye(5), jnp.asarray([1e5]))
    assert np.isfinite(np.asarray(ss)).all()


def test_invalid_statistics_are_projected_floored_and_counted():
    from bayes_dpreg.samplers.bs import BSData, _conditional_draws

    pr = bd.Prior(C=10.0, b=0.5, Lambda=1.0, Sigma_x_prior="iw").resolve(2)
    S = jnp.asarray([[[1.0, 3.0], [3.0, 1.0]], [[50.0, 0.0], [0.0, 50.0]]])  # party 0 indefinite
    z = jnp.asarray([[1.0, 0.0], [0.0, 1.0]])
    u = jnp.asarray([-100.0, 1.0])  # sum of y^2 negative: b_n < b0
    data = BSData(ss_vector(S, z, u), jnp.asarray([60.0, 60.0]), jnp.asarray([1.0, 1.0]))
    draws, projected, floored = _conditional_draws(jax.random.key(0), data.ss_tilde, data, pr)
    assert int(projected) == 1 and bool(floored)
    assert all(np.isfinite(np.asarray(v)).all() for v in draws.values())


def test_matheron_draw_has_the_conditional_law():
    from bayes_dpreg.model.wishart_moments import ss_moments
    from bayes_dpreg.samplers.bs import BSData, _ss_draw

    theta, sigma2 = jnp.asarray([0.5, -1.0]), jnp.asarray(0.8)
    Sigma = jnp.asarray([[1.0, 0.3], [0.3, 0.5]])
    n = jnp.asarray([40.0, 90.0])
    mom = ss_moments(theta, sigma2, Sigma)
    obs = n[:, None] * mom.mean + 3.0
    data = BSData(obs, n, jnp.asarray([2.0, 5.0]))
    # compiled: vmapped op by op, each operation compiled a program of its own
    draws = jax.jit(jax.vmap(lambda k: _ss_draw(k, theta, sigma2, Sigma, data)))(jax.random.split(jax.random.key(0), 40000))
    for j in range(2):
        mean, U, scale = ss_conditional(n[j] * mom.mean, n[j] * mom.cov, obs[j], data.sigma[j] ** 2)
        cov = U @ jnp.diag(scale**2) @ U.T
        sd = np.sqrt(np.diag(cov))
        np.testing.assert_allclose(draws[:, j].mean(0), mean, atol=float(5 * sd.max() / 200))
        np.testing.assert_allclose(np.cov(np.asarray(draws[:, j]).T), cov, rtol=0.05, atol=0.05 * float(sd.max()) ** 2)


def test_clt_prior_draw_has_the_isserlis_moments():
    from bayes_dpreg.model.wishart_moments import ss_moments
    from bayes_dpreg.samplers.bs import _clt_prior_draw

    theta, sigma2 = jnp.asarray([0.5, -1.0, 0.2]), jnp.asarray(0.8)
    Sigma = jnp.asarray([[1.0, 0.3, 0.0], [0.3, 0.5, 0.1], [0.0, 0.1, 2.0]])
    n = jnp.asarray([10.0])
    x = jax.jit(jax.vmap(lambda k: _clt_prior_draw(k, theta, sigma2, Sigma, n)[0]))(jax.random.split(jax.random.key(1), 100000))
    mom = ss_moments(theta, sigma2, Sigma)
    sd = np.sqrt(np.diag(10 * mom.cov))
    np.testing.assert_allclose(x.mean(0), 10 * mom.mean, atol=float(5 * sd.max() / np.sqrt(1e5)))
    np.testing.assert_allclose(np.cov(np.asarray(x).T), 10 * mom.cov, atol=0.03 * float(sd.max()) ** 2)
