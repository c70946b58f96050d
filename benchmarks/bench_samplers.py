"""Speed of the samplers: time per iteration and effective samples per second.

    python benchmarks/bench_samplers.py [--dims 2 5 10 20] [--parties 1 5 10] [--samplers normalx-nuts fixeds]

Data: the paper's simulation with n = 1e5, eps = 1, delta = 1e-5, bounds at the data's
maxima, the paper's prior. For each sampler, (d, J) and chain count (1, or 4 vectorised
with vmap): compile time, time per chain-iteration after compilation (best of 2 runs of
``warmup + draws`` iterations), and with 4 chains the smallest bulk ESS over theta per
second of sampling. Everything runs the same pure kernels as ``fit`` inside one
``lax.scan``. The compile column is the first call's time minus a timed run.
"""

from __future__ import annotations

import argparse
import platform
import time

import arviz as az
import jax
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.data import paper_scale_matrix
from bayes_dpreg.samplers import get as get_sampler
from bayes_dpreg.prior import Prior
from bayes_dpreg.release import stack_stats

bd.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly

SAMPLERS = {  # "normalx" as fit() runs it: level moves on for d <= 8 (level_moves="auto")
    "normalx-nuts": ("normalx-nuts", {}),
    "normalx": ("normalx", {"level_moves": "auto"}),
    "normalx-alg1": ("normalx", {"collapse_theta": False, "level_moves": False}),
    "fixeds": ("fixeds", {}),
}


def problem(d: int, J: int, n: int = 100_000, seed: int = 0):
    Lam = paper_scale_matrix(d, 1000 + seed)
    sim = bd.simulate(n, d, seed=seed, Lambda=Lam)
    xb, yb = np.linalg.norm(sim.X, axis=1).max(), np.abs(sim.y).max()
    stats = [bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=xb, y_bound=yb, seed=j)
             for j, (X, y) in enumerate(bd.split_parties(sim.X, sim.y, J))]
    return stack_stats(stats), Prior(a=20.0, b=0.5, C=38.0, Lambda=Lam).resolve(d)


def chain_fn(method: str, extra: dict, st, pr, warmup: int, draws: int):
    """One chain of a registered sampler's kernel (bayes_dpreg.samplers): warm-up, then draws of theta."""
    sampler = get_sampler(method)
    settings, _ = sampler.settings(dict(extra), st.d, warmup)
    k = sampler.kernel
    data = sampler.data(st)

    def run(key):
        s = k.init(key, data, pr, settings)
        s = jax.lax.fori_loop(0, warmup, lambda i, c: k.step(c, data, pr, settings), s)

        def one(c, kk):
            c = k.step(c, data, pr, settings)
            return c, k.draws(c, data, pr, kk)["theta"]

        return jax.lax.scan(one, s, jax.random.split(key, draws))[1]
    return run


def measure(run, chains: int, iters: int, repeats: int):
    keys = jax.random.split(jax.random.key(1), chains)
    f = jax.jit(jax.vmap(run))
    t0 = time.perf_counter()
    jax.block_until_ready(f(keys))
    compile_s = time.perf_counter() - t0
    best, theta = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        theta = jax.block_until_ready(f(keys))
        best = min(best, time.perf_counter() - t0)
    return compile_s - best, best / iters / chains, best, np.asarray(theta)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10, 20])
    ap.add_argument("--parties", type=int, nargs="+", default=[1, 5, 10])
    ap.add_argument("--samplers", nargs="+", default=list(SAMPLERS))
    ap.add_argument("--repeats", type=int, default=1, help="timed runs after compilation (best is kept)")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    print(f"# {platform.machine()}, {jax.device_count()} {jax.default_backend()} device(s), jax {jax.__version__}, "
          f"float64; n = 1e5, eps = 1; {args.warmup} warm-up + {args.draws} draws")
    print("| sampler | d | J | compile (s) | us / chain-iter, 1 chain | us / chain-iter, 4 chains | min ESS/s (4 chains) |")
    print("|---|---|---|---|---|---|---|")
    iters = args.warmup + args.draws
    for d in args.dims:
        for J in args.parties:
            st, pr = problem(d, J)
            for name in args.samplers:
                method, extra = SAMPLERS[name]
                run = chain_fn(method, extra, st, pr, args.warmup, args.draws)
                _, t1, _, _ = measure(run, 1, iters, args.repeats)
                comp, t4, wall4, theta = measure(run, 4, iters, args.repeats)
                ess = az.ess(az.from_dict(posterior={"theta": theta}))["theta"].values.min()
                sampling_s = wall4 * args.draws / iters
                print(f"| {name} | {d} | {J} | {comp:.1f} | {t1 * 1e6:.0f} | {t4 * 1e6:.0f} | {ess / sampling_s:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
