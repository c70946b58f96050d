"""Timings of the release and the closed-form posterior (Bayes-fixedS-fast).

    python -m benchmarks.bench_closed_form [--reps 50]

Prints, for d in {2, 5, 10, 20} and J in {1, 5, 10}: the time of one party's
release at n = 1e5 rows (NumPy, dominated by X^T X), the jitted fast posterior
for all J parties (after compilation, compile time separately), and the same
vmapped over ``reps`` replications (time per replication).
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import fast_posterior
from lab.machine import cpu_model

bd.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly


def _best(fn, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--n", type=int, default=100_000)
    args = ap.parse_args()
    print(f"# {cpu_model()}, {jax.device_count()} {jax.default_backend()} device(s), jax {jax.__version__}, float64")
    print(f"{'d':>3} {'J':>3} {'release/party':>14} {'compile':>9} {'fast (all J)':>13} {'fast/rep, vmap':>15}")
    fast = jax.jit(fast_posterior)
    fast_v = jax.jit(jax.vmap(fast_posterior, in_axes=(0, 0, None, None, None, None)))
    for d in (2, 5, 10, 20):
        sim = bd.simulate(args.n, d, seed=d)
        X = sim.X / np.linalg.norm(sim.X, axis=1).max()
        y = np.clip(sim.y / np.abs(sim.y).max(), -1, 1)
        t_rel = _best(functools.partial(bd.release, X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=0), 3)
        for J in (1, 5, 10):
            stats = [
                bd.release(Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j)
                for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))
            ]
            S = jnp.asarray(np.stack([s.S for s in stats]))
            z = jnp.asarray(np.stack([s.z for s in stats]))
            sz2 = jnp.asarray([s.sigma_z**2 for s in stats])
            args_ = (S, z, sz2, 1 / 9, jnp.zeros(d), 10.0 * jnp.eye(d))
            t0 = time.perf_counter()
            jax.block_until_ready(fast(*args_))
            t_compile = time.perf_counter() - t0
            t_fast = _best(functools.partial(fast, *args_))
            Sr = jnp.broadcast_to(S, (args.reps,) + S.shape)
            zr = jnp.broadcast_to(z, (args.reps,) + z.shape)
            jax.block_until_ready(fast_v(Sr, zr, *args_[2:]))
            t_v = _best(functools.partial(fast_v, Sr, zr, *args_[2:])) / args.reps
            print(
                f"{d:>3} {J:>3} {t_rel * 1e3:>11.2f} ms {t_compile:>7.2f} s {t_fast * 1e6:>10.1f} us "
                f"{t_v * 1e6:>12.1f} us"
            )


if __name__ == "__main__":
    main()
