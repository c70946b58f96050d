"""CLT moments of the sufficient statistics for MCMC-B&S (Bernstein & Sheldon 2019; paper App. C.1).

For one row with ``x ~ N(0, Sigma)`` and ``y = x^T theta + e``, ``e ~ N(0, sigma2)``, the vector
``t = [upper(x x^T), x y, y^2]`` (``D = d(d+1)/2 + d + 1`` entries) has, with ``c = Sigma theta``
and ``s2 = theta^T Sigma theta + sigma2`` (Isserlis' theorem):

* ``E[x_i x_j] = Sigma_ij``, ``E[x_i y] = c_i``, ``E[y^2] = s2``;
* ``Cov(x_i x_j, x_k x_l) = Sigma_ik Sigma_jl + Sigma_il Sigma_jk``;
* ``Cov(x_i x_j, x_k y) = Sigma_ik c_j + c_i Sigma_jk``;
* ``Cov(x_i x_j, y^2) = 2 c_i c_j``;
* ``Cov(x_i y, x_k y) = Sigma_ik s2 + c_i c_k``;
* ``Cov(x_i y, y^2) = 2 c_i s2``;  ``Var(y^2) = 2 s2^2``.

A party's statistics ``sum_i t_i`` over ``n_j`` rows are then approximately
``N(n_j mean, n_j cov)``. Everything is computed with ``einsum``/indexing (no d^4 Python
loops) and is jit/vmap-compatible.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

__all__ = ["SSMoments", "ss_moments", "ss_vector"]


class SSMoments(NamedTuple):
    mean: Array  # (D,)
    cov: Array  # (D, D)


def ss_vector(S: Array, z: Array, u: Array) -> Array:
    """``[upper(S), z, u]`` (row-major upper triangle), the B&S statistic vector."""
    iu = np.triu_indices(S.shape[-1])
    return jnp.concatenate([S[..., iu[0], iu[1]], z, jnp.asarray(u)[..., None]], -1)


def ss_moments(theta: Array, sigma2: Array, Sigma: Array) -> SSMoments:
    """Mean and covariance of one row's ``[upper(x x^T), x y, y^2]`` (module docstring)."""
    d = theta.shape[-1]
    i, j = (jnp.asarray(a) for a in np.triu_indices(d))
    c = Sigma @ theta
    s2 = theta @ c + sigma2
    mean = jnp.concatenate([Sigma[i, j], c, s2[None]])
    # quadratic-quadratic block
    qq = (
        Sigma[i[:, None], i[None, :]] * Sigma[j[:, None], j[None, :]]
        + Sigma[i[:, None], j[None, :]] * Sigma[j[:, None], i[None, :]]
    )
    # quadratic-linear block: Sigma_ik c_j + c_i Sigma_jk
    k = jnp.arange(d)
    ql = Sigma[i[:, None], k[None, :]] * c[j][:, None] + c[i][:, None] * Sigma[j[:, None], k[None, :]]
    qu = 2.0 * c[i] * c[j]
    ll = Sigma * s2 + jnp.outer(c, c)
    lu = 2.0 * c * s2
    uu = 2.0 * s2**2
    top = jnp.concatenate([qq, ql, qu[:, None]], 1)
    mid = jnp.concatenate([ql.T, ll, lu[:, None]], 1)
    bot = jnp.concatenate([qu, lu, uu[None]])[None, :]
    cov = jnp.concatenate([top, mid, bot], 0)
    return SSMoments(mean, 0.5 * (cov + cov.T))
