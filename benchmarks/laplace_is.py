"""Whether the default's Laplace frame could replace NUTS by importance sampling at large d:

    python -m benchmarks.laplace_is --sizes 5x5 10x20 20x20 --draws 4000

For each ``d x J``: the paper's simulation released as :mod:`benchmarks.speed` releases it, the
``normalx-clt`` frame (:func:`bayes_dpreg.samplers.normalx_clt.prepare`: the posterior mode of the
sampled coordinates and the inverse square root of the Hessian there), so that the Laplace
approximation of the target NUTS sees (:func:`~bayes_dpreg.samplers.normalx_clt.white_log_density`)
is ``N(0, I)`` (above 300 coordinates, where the frame is diagonal, its marginals are).
Draws ``x ~ N(0, s^2 I)`` (``s`` in ``--scales``), weights ``log p(x) - log N(x; 0, s^2 I)``
and their Pareto-smoothed tail shape ``k-hat`` (ArviZ's ``psislw``; Vehtari et al. 2024: the
weights are usable below 0.7) with the effective sample size ``1 / sum w^2`` of the normalised
weights. Importance sampling needs only values of the target (no gradient, about a third of the
cost of one) and no chain, which is what issue 32's d = 50, J = 100 row would need; it is only an
option where ``k-hat`` stays below 0.7.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np


def frame(d: int, J: int) -> tuple:
    """``(log_p, k)``: the default's target in its Laplace frame (batched over draws) and its dimension."""
    import jax

    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.speed import prepared, releases

    sampler, st, pr = prepared("normalx-clt", releases("normalx-clt", d, J, 1))
    data = sampler.data(st)
    ref = clt.prepare(data, pr, clt.settings({}, d, clt.NUM_WARMUP)[0]).ref
    return jax.jit(jax.vmap(lambda x: clt.white_log_density(x, data, pr, ref))), ref.T.shape[0]


def weights(log_p: Any, k: int, draws: int, scale: float, seed: int = 0) -> tuple[float, float, float, float]:
    """``(k-hat, ESS, sd of the log-weights, seconds of the target's values)`` at one proposal scale."""
    import arviz as az
    import jax
    import jax.numpy as jnp

    x = scale * np.asarray(jax.random.normal(jax.random.key(seed), (draws, k)))
    log_p(jnp.zeros((200, k))).block_until_ready()
    start = time.perf_counter()
    lp = np.concatenate([np.asarray(log_p(jnp.asarray(x[i : i + 200]))) for i in range(0, draws, 200)])
    seconds = time.perf_counter() - start
    lw = lp + 0.5 * np.sum(x**2, 1) / scale**2
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    smoothed, khat = az.psislw(lw - lw.max())
    w = np.exp(smoothed)
    return float(khat), float(1.0 / np.sum(w**2)), float(np.std(lw[np.isfinite(lw)])), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["5x5", "10x20", "20x20"], help="d x J")
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--scales", nargs="+", type=float, default=[1.0, 1.2])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from lab.machine import describe

    bd.enable_x64()
    print(f"# {describe('jax')}; {args.draws} draws a row")
    print("| d | J | dimension | proposal sd | k-hat | ESS of the weights | sd of the log-weights | values (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        log_p, k = frame(d, J)  # one frame a size, for every proposal scale
        for s in args.scales:
            khat, ess, sd, seconds = weights(log_p, k, args.draws, s)
            print(f"| {d} | {J} | {k} | {s:g} | {khat:.2f} | {ess:.0f} | {sd:.1f} | {seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()
