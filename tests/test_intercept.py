"""normalx-intercept (App. B.2) by NUTS: its density is the NumPyro model's (theta integrated out)
plus the change of variables, its coordinates invert, it recovers the exact posterior where one
exists, and it is calibrated (SBC) under its own model."""

import warnings

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from _shared import assert_density_is_reference_up_to_a_constant, exact_theta_moments
from numpyro.infer.util import log_density as numpyro_log_density

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import theta_conditional
from bayes_dpreg.model.densities import normalx_intercept_model
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import sbc, simulate_intercept_from_prior
from bayes_dpreg.samplers import intercept as ic

PRIOR = Prior(m=[0.5, 0.1, -0.2], C=2.0, a=3.0, b=2.0, Lambda=[[1.5, 0.3], [0.3, 1.0]], kappa=6.0,
              mu_x=[0.5, -0.3], mu_x_cov=[[1.0, 0.2], [0.2, 0.5]])
SITES = ("v", "c", "u", "e", "ls2")


def _problem(seed, n=(30.0, 45.0, 38.0), sigma_S=4.0):
    """Odd seeds bound sigma_y^2 at 1.5 (IG(3, 2) has 15% of its mass above)."""
    pr = (replace(PRIOR, sigma2_max=1.5) if seed % 2 else PRIOR).resolve_intercept(2)
    n = jnp.asarray(n)
    J = n.shape[0]
    # compiled, as everything in these tests: op by op, each operation compiled a program of its own
    simulate = jax.jit(simulate_intercept_from_prior)
    params, data = simulate(jax.random.key(seed), pr, n, jnp.full(J, sigma_S), jnp.full(J, 3.0))
    return pr, params, data, jax.jit(ic.reference)(data)


def _shapes(J, d):
    p = d * (d + 1) // 2
    return {"v": (p,), "c": (J, p), "u": (d,), "e": (J, d), "ls2": ()}


def _flat(z):
    return jnp.concatenate([jnp.ravel(z[k]) for k in SITES])


def _unflat(x, J, d):
    out, i = {}, 0
    for k, shape in _shapes(J, d).items():
        size = int(np.prod(shape))
        out[k] = x[i:i + size].reshape(shape)
        i += size
    return out


@jax.jit
def _truth_coordinates(params, data, ref, pr):
    """Coordinates of a state from the model: the simulator keeps b_j and Sx_j to itself, so
    draw them afresh given its Sigma_x and mu_x."""
    d = params["Sigma_x"].shape[0]
    J = data.n.shape[0]
    k1, k2 = jax.random.split(jax.random.key(99))
    L = jnp.linalg.cholesky(params["Sigma_x"])
    b = params["mu_x"] + jax.random.normal(k1, (J, d)) @ L.T / jnp.sqrt(data.n)[:, None]
    Sx = dist.Wishart(data.n - 1.0, scale_matrix=params["Sigma_x"]).sample(k2)
    return ic.to_unconstrained(params["Sigma_x"], Sx, params["mu_x"], b, params["sigma2"], data, ref, pr)


def _model_density(q, data, pr):
    """The NumPyro model's log joint at (theta, the rest) minus log p(theta | rest): the density
    of the rest with theta integrated out, whatever theta (here the conditional mean)."""
    post = theta_conditional(q["S0"], data.z_tilde, q["sigma2"], data.sigma_z**2, jnp.asarray(pr.m),
                             jnp.linalg.inv(jnp.asarray(pr.C)))
    L = q["L"]
    values = {"theta": post.mean, "sigma2": q["sigma2"], "Sigma_x": L @ L.T, "mu_x": q["mu_x"], "b": q["b"],
              "Sx": q["Sx"]}
    joint, _ = numpyro_log_density(normalx_intercept_model, (data, pr), {}, values)
    return joint - dist.MultivariateNormal(post.mean, post.cov).log_prob(post.mean)


def _constrained(x, data, ref, pr):
    """(upper triangles of Sigma_x and the Gram matrices Sx_j, mu_x, the b_j, sigma2) at unconstrained x."""
    J, D = data.z_tilde.shape
    d = D - 1
    iu = np.triu_indices(d)
    q = ic.unpack(_unflat(x, J, d), data, ref, pr)
    Sig = q["L"] @ q["L"].T
    return jnp.concatenate([Sig[iu], q["Sx"][:, iu[0], iu[1]].ravel(), q["mu_x"], q["b"].ravel(), q["sigma2"][None]])


@jax.jit
def _reference_density(x, data, pr, ref):
    """The NumPyro model's density with theta integrated out plus log|d(constrained)/dx| (forward-mode
    Jacobian), compiled once for both cases: op-by-op dispatch of the Jacobian took a minute."""
    J, D = data.z_tilde.shape
    q = ic.unpack(_unflat(x, J, D - 1), data, ref, pr)
    return _model_density(q, data, pr) + jnp.linalg.slogdet(jax.jacfwd(_constrained)(x, data, ref, pr))[1]


@jax.jit
def _log_density(x, data, pr, ref):
    J, D = data.z_tilde.shape
    return ic.log_density(_unflat(x, J, D - 1), data, pr, ref)


@pytest.mark.parametrize("seed,sigma_S", [(0, 4.0), (1, 0.05)])
def test_density_is_the_model_density_plus_the_log_jacobian(seed, sigma_S):
    """log_density(z1) - log_density(z2) equals the NumPyro model's density with theta integrated
    out plus log|d(Sigma_x, Sx, mu_x, b, sigma2)/dz|, differentiated numerically (non-centred
    b_j at sigma_S = 4, nearly centred at 0.05)."""
    pr, params, data, ref = _problem(seed, sigma_S=sigma_S)
    x1 = _flat(_truth_coordinates(params, data, ref, pr))
    assert_density_is_reference_up_to_a_constant(_log_density, _reference_density, x1, seed, (data, pr, ref),
                                                  rtol=1e-8, atol=1e-7)


@pytest.mark.parametrize("seed", [2, 3])
def test_coordinates_invert(seed):
    pr, params, data, ref = _problem(seed)
    z = _truth_coordinates(params, data, ref, pr)
    q = ic.unpack(z, data, ref, pr)
    z2 = ic.to_unconstrained(q["L"] @ q["L"].T, q["Sx"], q["mu_x"], q["b"], q["sigma2"], data, ref, pr)
    for k in SITES:
        np.testing.assert_allclose(z2[k], z[k], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(q["L"] @ q["L"].T, jnp.asarray(params["Sigma_x"]), rtol=1e-10)


def test_recovers_the_exact_posterior_when_the_noise_vanishes():
    """eps = 1e4: S~_j is the Gram matrix of [1, x] up to noise of sd 0.06 on entries of 700-2000, and
    theta's posterior is a scale mixture over sigma_y^2 of the Gaussians of eq. (12), computed by
    quadrature on a grid of log sigma_y^2. (At eps = 1e7 the same check holds but NUTS needs trees
    of depth 7 for the pinned S_j: 41 s of sampling against 6 s.)"""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 1)) * 0.3 + 0.5
    y = 0.3 - 0.5 * X[:, 0] + 0.1 * rng.normal(size=4000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = [bd.release(Xj, yj, epsilon=1e4, delta=1e-5, x_bound=2.0, y_bound=1.0, intercept=True, seed=j)
                 for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 2))]
    prior = Prior(C=100.0, a=2.0, b=0.01, Lambda=1.0)
    idata = bd.fit(stats, "normalx-intercept", prior=prior, num_warmup=500, num_samples=1000, seed=1)
    assert idata.posterior.attrs["converged"] == 1
    pr = prior.resolve_intercept(1)
    mean, sd = exact_theta_moments(stats, pr)
    th = idata.posterior["theta"].values.reshape(-1, 2)
    assert np.all(np.abs(th.mean(0) - mean) < 5 * sd / np.sqrt(1000)), (th.mean(0), mean, sd)
    np.testing.assert_allclose(th.std(0), sd, rtol=0.08)


@pytest.mark.slow  # 43 s; the exact-posterior and density tests above check this sampler in the default run
def test_sbc():
    """Ranks of theta (intercept and slope), sigma2, Sigma_x and mu_x under the intercept model."""
    pr = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=1.0, kappa=5.0, mu_x=0.5, mu_x_cov=1.0).resolve_intercept(1)
    res = sbc(jax.random.key(3), "normalx-intercept", pr, np.array([200, 300]), 20.0, 10.0,
              replications=100, num_warmup=200, thin=1)
    assert set(res.pvalues) == {"theta[0]", "theta[1]", "sigma2", "Sigma_x[0,0]", "mu_x[0]"}
    assert min(res.pvalues.values()) > 1e-3, res.pvalues
