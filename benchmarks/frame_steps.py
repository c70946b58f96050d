"""How well the default's Laplace frame whitens its target, by size: the NUTS steps it leaves.

    python -m benchmarks.frame_steps --sizes 20x20 50x20 --warmup 250

``benchmarks.gradient_cost`` projects a fit from one gradient's cost and the steps NUTS takes on
an exact standard normal of the target's dimension; that holds where the frame
(:func:`bayes_dpreg.samplers.normalx_clt.laplace`: ``z = mode + T x``, ``T = V diag(w)^(-1/2)`` from the
Hessian ``V diag(w) V^T`` at the mode, ``w`` floored at ``CURVATURE_FLOOR``; above 300 coordinates since
2026-11-29 ``z = mode + T o x`` with ``T`` the sds of that Laplace approximation) makes the posterior of
``x`` near ``N(0, I)``. For each ``d x J`` (the paper's simulation as :mod:`benchmarks.speed` releases it):
the frame's search time and the quantiles of its scales (the Laplace approximation's sds; tables made
before 2026-11-29 have the curvatures ``w`` instead), then one
NumPyro NUTS chain on the default's target in that frame (its target acceptance, a dispersed start
``x ~ N(0, I)`` as :func:`~bayes_dpreg.samplers.normalx_clt.init`), ``--warmup`` iterations: the
mean leapfrog steps of the last 50 and the step size at the end, against the standard normal's
steps (:func:`benchmarks.gradient_cost.nuts_steps`). With ``--draws N`` the chain goes on for ``N``
draws: their mean steps, seconds, the quantiles over coordinates of the sd of ``x`` (1 where the
frame whitens the posterior's bulk), and the min and median over coordinates of the bulk ESS of ``x``
(ArviZ, one chain) per 1,000 leapfrog steps of the draws: what a gradient buys, which the steps a draw
alone do not say (NUTS lengthens its trajectories where its draws would otherwise be correlated),
beside the same for the same chain (seed, warm-up, draws) on ``N(0, I)`` of the target's dimension;
``--seed`` the chain's key and start. ``--sigma-x-prior iw`` puts the inverse Wishart family
(``Prior(Sigma_x_prior="iw")``: ``Lambda`` autoscaled, ``kappa = d + 1``) in place of the default's
separation prior.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np


def frame_row(d: int, J: int, warmup: int, sigma_x_prior: str | None = None, draws: int = 0, seed: int = 0) -> dict:
    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.gradient_cost import nuts_steps
    from benchmarks.speed import prepared, releases

    sampler, st, pr = prepared("normalx-clt", releases("normalx-clt", d, J, 1), sigma_x_prior)
    data = sampler.data(st)
    settings = clt.settings({}, d, warmup)[0]
    clt.prepare(data, pr, settings)  # compiles the search's programs
    start = time.perf_counter()
    ref = clt.prepare(data, pr, settings).ref  # the search as fit runs it
    search = time.perf_counter() - start
    T = np.asarray(ref.T)
    k = T.shape[0]
    accept = clt.target_accept(d)
    potential = lambda x: -clt.white_log_density(x, data, pr, ref)
    mcmc, steps, seconds, after = _chain(potential, k, accept, warmup, draws, seed)
    if draws:  # the same chain on N(0, I_k): what NUTS itself gets from a gradient at this dimension
        after["normal_ess_per_1k"] = _chain(lambda x: 0.5 * (x**2).sum(), k, accept, warmup, draws, seed)[3][
            "ess_per_1k"
        ]
    return after | {
        "d": d,
        "J": J,
        "k": k,
        "search": search,
        "scales": np.quantile(np.sqrt((T**2).sum(1)) if T.ndim == 2 else T, [0.1, 0.5, 0.9]),
        "steps": float(steps[-50:].mean()),
        "step_size": float(mcmc.last_state.adapt_state.step_size),
        "normal": nuts_steps(k, accept),
        "seconds": seconds,
    }


def _chain(potential: Any, k: int, accept: float, warmup: int, draws: int, seed: int) -> tuple[Any, Any, float, dict]:
    """One NumPyro NUTS chain on ``potential`` from a dispersed start: ``(mcmc, warm-up steps, warm-up
    seconds, what its draws show)``; with ``draws``, the chain goes on from the end of warm-up (its
    steps, the spread of ``x``, 1 where ``x ~ N(0, I)``, and its bulk ESS per 1,000 steps)."""
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(
        NUTS(potential_fn=potential, target_accept_prob=accept),
        num_warmup=warmup,
        num_samples=max(draws, 1),
        progress_bar=False,
    )
    start = time.perf_counter()
    mcmc.warmup(
        jax.random.key(2 * seed),
        init_params=jax.random.normal(jax.random.key(2 * seed + 1), (k,)),
        extra_fields=("num_steps",),
        collect_warmup=True,
    )
    steps = np.asarray(mcmc.get_extra_fields()["num_steps"])  # waits for the chain
    seconds = time.perf_counter() - start
    if not draws:
        return mcmc, steps, seconds, {}
    start = time.perf_counter()
    mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",))
    x = np.asarray(mcmc.get_samples())
    draw_seconds = time.perf_counter() - start
    steps_all = float(np.sum(mcmc.get_extra_fields()["num_steps"]))
    ess = np.asarray(az.ess(az.convert_to_dataset(x[None]))["x"])
    return (
        mcmc,
        steps,
        seconds,
        {
            "draw_steps": steps_all / x.shape[0],
            "draw_seconds": draw_seconds,
            "x_sd": np.quantile(x.std(0), [0.1, 0.5, 0.9]),
            "ess_per_1k": 1000.0 * np.array([ess.min(), np.median(ess)]) / steps_all,
        },
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20x20", "50x20"], help="d x J")
    ap.add_argument("--warmup", type=int, default=250)
    ap.add_argument("--draws", type=int, default=0, help="draws after warm-up (0: none)")
    ap.add_argument("--seed", type=int, default=0, help="the chain's seed (its NUTS key and its start)")
    ap.add_argument(
        "--sigma-x-prior", choices=["lkj", "iw"], default=None, help="Sigma_x's prior family (default: the default's)"
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from lab.machine import describe

    bd.enable_x64()
    family = args.sigma_x_prior or "the default's"
    chain = f"one chain (seed {args.seed}), {args.warmup} warm-up iterations"
    print(f"# {describe('jax')}; {chain}; Sigma_x prior: {family}")
    print(
        "| d | J | dimension | frame search (s) | frame scales 10/50/90% "
        "| steps an iteration, last 50 of warm-up | step size | steps on a standard normal "
        "| warm-up incl. compile (s) |"
        + (
            " steps an iteration, draws | draws (s) | sd of x 10/50/90%, draws "
            "| bulk ESS of x per 1,000 steps, min / median | the same on a standard normal |"
            if args.draws
            else ""
        )
    )
    print("|---" * (14 if args.draws else 9) + "|")
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        r = frame_row(d, J, args.warmup, args.sigma_x_prior, args.draws, args.seed)
        q = " / ".join(f"{v:.3g}" for v in r["scales"])
        line = (
            f"| {d} | {J} | {r['k']} | {r['search']:.1f} | {q} | {r['steps']:.1f} "
            f"| {r['step_size']:.3f} | {r['normal']:.1f} | {r['seconds']:.1f} |"
        )
        if args.draws:
            sd = " / ".join(f"{v:.2f}" for v in r["x_sd"])
            ess, normal = (" / ".join(f"{v:.1f}" for v in r[key]) for key in ("ess_per_1k", "normal_ess_per_1k"))
            line += f" {r['draw_steps']:.1f} | {r['draw_seconds']:.1f} | {sd} | {ess} | {normal} |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
