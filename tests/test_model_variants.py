"""The ``yy`` study variant (``studies/model_variants.py``): the moments of the released
``||y_j||^2`` given ``z~, S, sigma_y^2`` agree with simulation of the model."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np


def test_yy_moments_match_simulation():
    from studies import model_variants as mv

    rng = np.random.default_rng(1)
    J, d, n, reps = 3, 2, 40, 4000
    X = rng.standard_normal((J, n, d)) @ np.array([[1.0, 0.5], [0.0, 0.7]])
    S = np.einsum("jna,jnb->jab", X, X)
    sigma2, sz = 0.5, np.array([3.0, 1.0, 6.0])
    pr = SimpleNamespace(m=np.array([0.3, -0.2]), C=np.diag([1.0, 0.5]))
    theta = pr.m + rng.standard_normal((reps, d)) @ np.linalg.cholesky(pr.C).T
    y = np.einsum("jna,ra->rjn", X, theta) + np.sqrt(sigma2) * rng.standard_normal((reps, J, n))
    z = np.einsum("jna,rjn->rja", X, y) + sz[:, None] * rng.standard_normal((reps, J, d))
    w = (y**2).sum(-1)

    def moments(zr):
        data = SimpleNamespace(z_tilde=zr, sigma_z=jnp.asarray(sz), n=jnp.full(J, float(n)), sigma_w=jnp.zeros(J))
        return mv.yy_moments(jnp.asarray(S), sigma2, data, pr)

    mean, cov = jax.jit(jax.vmap(moments))(jnp.asarray(z))
    resid = w - np.asarray(mean)
    # E[w - E(w | z~)] = 0 and E[(w - E)(w - E)^T] = E[Cov(w | z~)] (no release noise here)
    assert np.all(np.abs(resid.mean(0)) < 4 * resid.std(0) / np.sqrt(reps))
    empirical, model = resid.T @ resid / reps, np.asarray(cov).mean(0)
    sd = np.sqrt(np.outer(np.diag(model), np.diag(model)))
    assert np.all(np.abs(empirical - model) < 0.1 * sd), (empirical, model)
    # a wrong residual term (sigma_y^2 n instead of sigma_y^2 (n - d)) is detected by the mean check
    assert np.any(np.abs((resid - sigma2 * d).mean(0)) > 4 * resid.std(0) / np.sqrt(reps))
