"""Helpers shared by several test modules (imported as ``from _shared import ...``)."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import collapsed_log_lik, party_terms, theta_conditional
from bayes_dpreg.model.densities import prior_dists
from bayes_dpreg.model.prior import Prior, prior_scales
from bayes_dpreg.stats import stack_stats


def linear_stats(d, J, n, eps, bound, theta=None, seed=0):
    """``J`` parties' seeded releases of ``y = X theta + 0.3 e``, ``X ~ N(0, 0.25 I)``, ``n`` rows each."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.5, -0.3, d) if theta is None else np.asarray(theta)
    X = 0.5 * rng.standard_normal((J * n, d))
    y = X @ theta + 0.3 * rng.standard_normal(J * n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [bd.release(Xj, yj, epsilon=eps, delta=1e-5, x_bound=bound, y_bound=bound, seed=[seed, j], name=f"p{j}")
                for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))]


def unit_releases(n, d, J, eps, seed=0, release=bd.release):
    """``J`` parties' releases (noise seeds ``0..J-1``) of ``bd.simulate(n, d, seed)`` scaled so that
    the declared bounds ``||x|| <= 1`` and ``|y| <= 1`` are the data's maxima; also ``X`` and ``y``."""
    sim = bd.simulate(n, d, seed=seed)
    X = sim.X / np.linalg.norm(sim.X, axis=1).max()
    y = sim.y / np.abs(sim.y).max()
    stats = [release(Xj, yj, epsilon=eps, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j)
             for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))]
    return stats, X, y


def exact_theta_moments(stats, pr):
    """Posterior mean and sd of theta when the released ``S~_j`` are exact: a scale mixture over
    sigma_y^2 of eq. (12)'s Gaussians, by quadrature on a grid of log sigma_y^2 (weights: the IG
    prior times the collapsed z~ likelihood, closed_form.collapsed_log_lik)."""
    S = jnp.asarray(np.stack([s.S for s in stats]))
    z = jnp.asarray(np.stack([s.z for s in stats]))
    sz2 = jnp.asarray([s.sigma_z**2 for s in stats])
    Cinv = jnp.linalg.inv(jnp.asarray(pr.C))
    grid = jnp.linspace(-12.0, 2.0, 4001)

    def at(ls2):
        s2 = jnp.exp(ls2)
        t = party_terms(S, z, s2, sz2)
        lw = collapsed_log_lik(t.U.sum(0), t.u.sum(0), t.c.sum(0), jnp.asarray(pr.m), Cinv, z.size)
        lw = lw + prior_dists(pr)["sigma2"].log_prob(s2) + ls2
        post = theta_conditional(S, z, s2, sz2, jnp.asarray(pr.m), Cinv)
        return lw, post.mean, post.cov

    lw, means, covs = jax.vmap(at)(grid)
    w = np.exp(np.asarray(lw) - np.max(lw))
    w /= w.sum()
    mean = (w[:, None] * np.asarray(means)).sum(0)
    var = (w[:, None] * (np.diagonal(np.asarray(covs), axis1=1, axis2=2) + np.asarray(means) ** 2)).sum(0) - mean**2
    return mean, np.sqrt(var)


def assert_density_is_reference_up_to_a_constant(log_density, reference, x1, seed, args, rtol, atol):
    """A sampler's ``log_density(x, *args)`` differs from ``reference(x, *args)`` (the model's density plus
    the log-Jacobian) by a constant: equal differences between ``x1`` and a point 0.3 sd-units away."""
    x2 = x1 + 0.3 * jax.random.normal(jax.random.key(seed + 5), x1.shape)
    np.testing.assert_allclose(log_density(x1, *args) - log_density(x2, *args),
                               reference(x1, *args) - reference(x2, *args), rtol=rtol, atol=atol)


def clt_sbc_pvalues(method, key, n, d=2, options=None, sigma_u=None):
    """SBC p-values of a CLT sampler (``normalx-clt``, ``normalx-pooled``) on data from the exact
    Wishart model, ``d`` features (the likelihood with the release's diagonal noise as released or
    augmented to the orthogonal ensemble by ``d``: ``normalx_clt.exact_noise``), noise sd 200 on ``S~`` and ``z~``, under the bound ``sigma_y^2 <= 0.4``
    (13% of ``IG(3, 0.5)`` above it), as the default prior bounds it: 120 data sets, 49 draws
    thinned by 2 after 200 warm-up iterations; ``options``: the kernel's (e.g. ``max_tree_depth``);
    ``sigma_u``: ``y^T y`` released too, with noise of that sd."""
    from bayes_dpreg.model.prior import Prior
    from bayes_dpreg.posterior import sbc

    pr = Prior(C=0.25, a=3.0, b=0.5, Lambda=2.0, eta=1.0, sigma2_max=0.4).resolve(d, None)
    kw = dict(replications=120, num_draws=49, thin=2, num_warmup=200, options=options, sigma_u=sigma_u)
    res = sbc.sbc(key, method, pr, np.asarray(n), 200.0, 200.0, **kw)
    return res.pvalues


RELEASES = {"ssp": bd.release, "bs": bd.release_bs, "adassp": bd.release_adassp}


@functools.cache
def _sampler_stats(mechanism: str, intercept: bool):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (600, 2))
    y = X @ np.array([0.5, -0.3]) + 0.1 * rng.standard_normal(600)
    kw = {"intercept": True} if intercept else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return stack_stats([
            RELEASES[mechanism](Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, **kw)
            for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 2))
        ])


def sampler_problem(sampler):
    """A tiny problem for ``sampler`` (d = 2, J = 2): stacked statistics of the release it takes and
    the prior ``fit`` would resolve."""
    st = _sampler_stats(sampler.mechanisms[0], sampler.needs_intercept)
    prior = Prior().for_sampler(sampler)
    scales = prior_scales(st)
    pr = prior.resolve_intercept(st.d - 1, scales) if sampler.needs_intercept else prior.resolve(st.d, scales)
    return st, pr
