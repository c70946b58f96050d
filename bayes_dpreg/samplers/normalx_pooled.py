r"""``normalx-pooled``: ``normalx-clt`` on the parties' releases summed within groups.

The normalX model (eq. 10) is closed under sums of parties. If ``S_j ~ W(Sigma_x, n_j)``
independently and ``z_j | S_j ~ N(S_j theta, sigma_y^2 S_j)``, then for a group ``G`` of parties

.. math::
    S_G = \sum_{j \in G} S_j \sim W(\Sigma_x, n_G), \qquad
    z_G \mid S_G \sim N(S_G \theta, \sigma_y^2 S_G), \qquad n_G = \sum_{j \in G} n_j,

and the released sums ``S~_G = sum S~_j``, ``z~_G = sum z~_j`` carry independent Gaussian noise
of variances ``sigma_S,G^2 = sum sigma_S,j^2`` and ``sigma_z,G^2 = sum sigma_z,j^2``: the group's
sums are one party's release of the same model, with ``n_G`` rows (summing released values is
post-processing; privacy is untouched). So the posterior given the sums is the model's exact
posterior given less data: its intervals are calibrated whatever the grouping (SBC checks this),
and what grouping can cost is width.

What the sums leave out. (i) The scatter of the parties' ``z~_j``: ``y_j^T y_j`` is not released, so
``sigma_y^2`` is identified only by how the ``z~_j`` scatter about their means, ``Cov(z_j) = n_j
((sigma_y^2 + theta^T Sigma_x theta) Sigma_x + Sigma_x theta theta^T Sigma_x)`` under the model
(``(J - 1) d`` dimensions beyond the mean's ``d``), which also informs the size of ``theta`` along
directions the means leave to the prior. One sum of all parties leaves ``sigma_y^2`` to its prior,
and the intervals of ``theta`` then follow the prior's scale.
:func:`groups` keeps at least ``1 + ceil(POOL_DOF / d)`` groups (:data:`POOL_DOF` = 200 dimensions;
a Student-t's 0.95 quantile, a 90% interval's end, on 200 degrees of freedom is 1.005 times the
normal's), so pooling starts only where ``J d`` is large: at d = 5 from J = 42, at d = 20 from J = 12,
at d = 50 from J = 6. (ii) Unequal weights:
given the ``S_j``, ``theta``'s information from party ``j`` is ``S_j M_j^{-1} S_j`` with ``M_j =
sigma_y^2 S_j + sigma_z,j^2 I``; with ``S_j ~ n_j Sigma_x`` that is ``n_j Sigma_x (sigma_y^2 Sigma_x +
(sigma_z,j^2 / n_j) I)^{-1} Sigma_x``: parties with the same noise per row, ``sigma_z,j^2 / n_j``
(and ``sigma_S,j^2 / n_j`` for ``Sigma_x``), weigh their ``z~_j`` alike, and their sum keeps that
(by Cauchy-Schwarz, summing parties whose weights differ loses information: one party of 10,000
rows with four of 100, noise-dominated, keeps about a fifth of it). Groups are therefore drawn within
bins of noise per row a factor :data:`GROUP_RATIO` wide (:func:`noise_bins`); with the same bounds
and budget everywhere, parties of sizes within a factor of 2. (iii) The scatter of the ``S~_j``
about ``n_j Sigma_x`` informs ``Sigma_x`` at relative order ``J / sum n_j``.

Why. ``normalx-clt`` costs ``O(J d^3)`` a gradient (one rotation a party); on the groups it is
``O(G d^3)``: at d = 20 and J = 100, 11 groups; at d = 50 and J = 100, 5. The CLT, whose error
is of relative order ``n^{-1/2}``, is applied to ``n_G``, not ``n_j``. Everything else (the Laplace
frame, NUTS, the priors) is :mod:`~bayes_dpreg.samplers.normalx_clt`'s, on the pooled release.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ..model.densities import ModelData, model_data, released_yty
from ..model.prior import ResolvedPrior
from ..stats import StackedStats
from . import normalx_clt
from .base import MethodResult

__all__ = [
    "GROUP_RATIO",
    "POOL_DOF",
    "min_groups",
    "noise_bins",
    "groups",
    "pool_data",
    "pooled_data",
    "run",
    "SAMPLER",
]

GROUP_RATIO = 2.0  # parties pooled where their noise per row, sigma^2 / n_j, is within this factor
POOL_DOF = 200  # at least 1 + POOL_DOF / d groups are kept: (G - 1) d residual dimensions inform sigma_y^2


def min_groups(d: int, J: int) -> int:
    """The fewest groups :func:`groups` makes: ``min(J, 1 + ceil(POOL_DOF / d))`` (module docstring)."""
    return min(J, 1 + -(-POOL_DOF // d))


def noise_bins(n: np.ndarray, sigma_S: np.ndarray, sigma_z: np.ndarray) -> list[np.ndarray]:
    """Parties whose release noise per row, ``sigma_S,j^2 / n_j`` and ``sigma_z,j^2 / n_j``, fall in
    the same bin of width :data:`GROUP_RATIO` (counted from the smallest nonzero value; noiseless
    parties, 0, in a bin of their own); indices, bins in order of their first party."""
    keys = []
    for sigma in (sigma_S, sigma_z):
        r = np.asarray(sigma, np.float64) ** 2 / np.asarray(n, np.float64)
        pos = r > 0
        k = np.full(r.shape, -1, np.int64)
        if pos.any():
            k[pos] = np.floor(np.log(r[pos] / r[pos].min()) / np.log(GROUP_RATIO) + 1e-9).astype(np.int64)
        keys.append(k)
    _, first, inverse = np.unique(np.stack(keys, 1), axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    return [np.flatnonzero(inverse == g) for g in np.argsort(first)]


def groups(n: np.ndarray, sigma_S: np.ndarray, sigma_z: np.ndarray, d: int) -> list[np.ndarray]:
    """The parties pooled together (party indices): each of :func:`noise_bins`' bins split into
    ``ceil(G |bin| / J)`` groups of nearly equal rows (largest party first, each to the group with
    the fewest rows so far), ``G`` = :func:`min_groups`, so that there are at least ``G``. Every
    party its own group where ``G = J``: then ``normalx-pooled`` is ``normalx-clt``."""
    n = np.asarray(n, np.float64)
    J = n.size
    target = min_groups(d, J)
    out = []
    for b in noise_bins(n, sigma_S, sigma_z):
        parts: list[list[int]] = [[] for _ in range(-(-target * b.size // J))]
        rows = np.zeros(len(parts))
        for j in sorted(b.tolist(), key=lambda j: (-n[j], j)):
            g = int(np.argmin(rows))
            parts[g].append(j)
            rows[g] += n[j]
        out += [np.array(sorted(p)) for p in parts]
    return sorted(out, key=lambda p: int(p[0]))


def pool_data(data: ModelData, parts: list[np.ndarray] | None = None) -> ModelData:
    """The release of each group as one party's (module docstring): ``S~``, ``z~``, ``n`` (and ``y^T y``
    where released) summed, the noise sds ``sqrt(sum sigma_j^2)``. ``data`` may carry leading batch axes (simulated
    releases of the same sizes and noise, as SBC's); the groups are :func:`groups`' of the first
    unless ``parts`` are given."""
    if parts is None:
        first = lambda a: np.asarray(a).reshape(-1, np.shape(a)[-1])[0]
        parts = groups(first(data.n), first(data.sigma_S), first(data.sigma_z), data.z_tilde.shape[-1])
    J = data.n.shape[-1]
    if sorted(np.concatenate(parts).tolist()) != list(range(J)):
        raise ValueError(f"the groups must partition the {J} parties, got {[p.tolist() for p in parts]}")
    member = np.zeros((len(parts), J))
    for g, p in enumerate(parts):
        member[g, p] = 1.0
    M = jnp.asarray(member, data.S_tilde.dtype)
    total = lambda a: jnp.einsum("gj,...j->...g", M, a)
    yty = released_yty(data)
    return data._replace(
        S_tilde=jnp.einsum("gj,...jab->...gab", M, data.S_tilde),
        z_tilde=jnp.einsum("gj,...ja->...ga", M, data.z_tilde),
        n=total(data.n),
        sigma_S=jnp.sqrt(total(data.sigma_S**2)),
        sigma_z=jnp.sqrt(total(data.sigma_z**2)),
        u_tilde=None if yty is None else total(yty[0]),
        sigma_u=None if yty is None else jnp.sqrt(total(yty[1] ** 2)),
    )


def pooled_data(st: StackedStats) -> ModelData:
    """The kernel's data: :func:`pool_data` of :func:`~bayes_dpreg.model.densities.model_data`."""
    return pool_data(model_data(st))


def run(
    st: StackedStats, pr: ResolvedPrior, key: Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
) -> MethodResult:
    """``fit``'s entry point: :func:`~bayes_dpreg.samplers.normalx_clt.run` (its options and defaults)
    on the pooled release; the groups are in the attributes (``pooled_groups``: each group's party
    indices, groups separated by ``;``)."""
    parts = groups(st.n, st.sigma_S, st.sigma_z, st.d)
    result = normalx_clt.run(
        st, pr, key, num_chains, num_samples, num_warmup, data=pool_data(model_data(st), parts), **options
    )
    result.attrs["sampler"] = (
        f"NUTS (NumPyro) in the Laplace frame of (Sigma_x, theta, sigma_y^2); the {st.J} parties' releases "
        f"summed in {len(parts)} group(s), S_G integrated out (CLT)"
    )
    result.attrs["pooled_groups"] = "; ".join(" ".join(map(str, p)) for p in parts)
    return result


SAMPLER = dataclasses.replace(
    normalx_clt.SAMPLER,
    name="normalx-pooled",
    label="MCMC-normalX (pooled, CLT, NUTS)",
    summary="normalx-clt on the releases summed over parties of like noise per row: O(G d^3) a step, G groups",
    run=run,
    data=pooled_data,
    reduce_data=pool_data,
    theta_scales=("release",),  # the scaled prior measured through normalx-clt only
)
