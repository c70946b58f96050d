"""What one gradient of the default sampler's target costs at large d and J, and what a fit would
cost from it, where a whole fit takes too long to time:

    python -m benchmarks.gradient_cost --sizes 20x20 20x100 50x20 50x100

For each ``d x J``: the paper's simulation released as :mod:`benchmarks.speed` releases it, the
``normalx-clt`` target (:func:`bayes_dpreg.samplers.normalx_clt.white_log_density`) at its reference
frame (the Laplace search skipped: it changes the point, not the cost), its value and gradient run
``--reps`` times in one compiled loop (XLA's default CPU pool, one program at a time), and NUTS's
leapfrog steps an iteration on a standard normal target of the same dimension (NumPyro, target
acceptance as the default's, after 200 warm-up iterations): in the Laplace frame the posterior is
near that normal: the default's chains took the same 15 steps at d = 20, J = 20, but about 13
against 7 at d = 5, J = 5. The projection,
``chains x (warm-up + draws) x steps x gradient / cores``, counts gradients only: no warm-up's
deeper trees, no contention between the chains' threads, no frame or post-processing (at d = 20,
J = 20 it reads about 0.6-0.8 of a measured warm fit).

``--likelihood`` times the release likelihood alone instead, value and gradient in ``Sigma~`` (what
a leapfrog step asks of it) at the pooled estimate, both forms on the same release: the orthogonal
ensemble's (:func:`~bayes_dpreg.samplers.normalx_clt.clt_log_lik`) and the one that takes the
diagonal's noise as released (:func:`~bayes_dpreg.samplers.normalx_clt.clt_log_lik_exact`, the
default's up to ``EXACT_NOISE_MAX_D`` features):

    python -m benchmarks.gradient_cost --likelihood --sizes 3x10 3x100 4x10 4x100 5x10 5x100
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import numpy as np


def problem(d: int, J: int) -> tuple[Any, Any, Any]:
    """``(data, prior, reference)`` of ``normalx-clt`` on the paper's simulation released as
    :mod:`benchmarks.speed` releases it."""
    import jax

    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.speed import prepared, releases

    sampler, st, pr = prepared("normalx-clt", releases("normalx-clt", d, J, 1))
    data = sampler.data(st)
    return data, pr, jax.jit(clt.reference)(data, pr)


def gradient_ms(d: int, J: int, reps: int) -> tuple[int, float]:
    """``(dimension of the target, milliseconds per value-and-gradient)``, median of 3 runs."""
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.samplers import normalx_clt as clt

    data, pr, ref = problem(d, J)
    x = jnp.zeros(ref.T.shape[0])
    seconds = _seconds_each(jax.value_and_grad(lambda x: clt.white_log_density(x, data, pr, ref)), x, reps)
    return int(x.shape[0]), 1e3 * seconds


def _seconds_each(value_and_grad: Any, x: Any, reps: int) -> float:
    """Seconds a ``value_and_grad(x)``: ``reps`` of them in one compiled loop, median of 3 runs."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def loop(x: jax.Array) -> jax.Array:
        def body(i: jax.Array, carry: tuple) -> tuple:
            v, g = value_and_grad(carry[0] + 1e-12 * carry[1])  # depends on the last gradient: no hoisting
            return carry[0], g + v

        return jax.lax.fori_loop(0, reps, body, (x, jnp.zeros_like(x)))[1]

    loop(x).block_until_ready()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        loop(x).block_until_ready()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) / reps


def likelihood_us(d: int, J: int, reps: int) -> tuple[float, float]:
    """Microseconds a value-and-gradient of ``(clt_log_lik, clt_log_lik_exact)``, median of 3 runs."""
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.samplers import normalx_clt as clt

    data, pr, ref = problem(d, J)
    Sx = ref.W[:, :d, :d].sum(0) / data.n.sum()
    St = clt.sigma_tilde(Sx, jnp.linalg.solve(Sx, ref.W[:, :d, d].sum(0) / data.n.sum()), jnp.asarray(1.0))
    delta = 2.0 * ref.s2 - data.sigma_S**2  # ref.delta is 0 where the default augments the diagonal (d > 4)
    forms = (
        lambda S: clt.clt_log_lik(S, ref.W, data.n, ref.s2),
        lambda S: clt.clt_log_lik_exact(S, ref.W, data.n, ref.s2, delta, ref.axes),
    )
    us = [1e6 * _seconds_each(jax.value_and_grad(f), St, reps) for f in forms]
    return us[0], us[1]


def nuts_steps(k: int, target_accept: float, iterations: int = 500) -> float:
    """Mean leapfrog steps an iteration of NumPyro's NUTS on ``N(0, I_k)`` after 200 warm-up iterations."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn=lambda z: 0.5 * jnp.sum(z**2), algo="NUTS")
    state = init_kernel(jnp.zeros(k), 200, target_accept_prob=target_accept, rng_key=jax.random.key(0))

    def step(s: Any, _: None) -> tuple[Any, jax.Array]:
        s = sample_kernel(s)
        return s, s.num_steps

    @jax.jit
    def run(state: Any) -> jax.Array:
        state = jax.lax.fori_loop(0, 200, lambda i, s: sample_kernel(s), state)
        return jax.lax.scan(step, state, None, length=iterations)[1]

    return float(np.mean(np.asarray(run(state))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20x20", "20x100", "50x20", "50x100"], help="d x J")
    ap.add_argument("--reps", type=int, default=0, help="gradients a timing loop (default: about 2 s of them)")
    ap.add_argument("--likelihood", action="store_true", help="time the release likelihood's two forms alone")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from bayes_dpreg.samplers import normalx_clt as clt
    from lab.machine import describe

    bd.enable_x64()
    cores = os.cpu_count() or 1
    chains, warmup, draws = 4, clt.NUM_WARMUP, clt.SAMPLER.num_samples
    if args.likelihood:
        print(f"# {describe('jax')}; value and gradient in Sigma~, {args.reps or 2000} a timing loop")
        print("| d | J | ensemble (us) | diagonal as released (us) | ratio |\n|---|---|---|---|---|")
        for size in args.sizes:
            d, J = (int(v) for v in size.lower().split("x"))
            ens, exact = likelihood_us(d, J, args.reps or 2000)
            print(f"| {d} | {J} | {ens:.0f} | {exact:.0f} | {exact / ens:.2f} |", flush=True)
        return
    print(f"# {describe('jax')}; {chains} chains x ({warmup} warm-up + {draws} draws), {cores} cores")
    columns = ["d", "J", "dimension", "ms per gradient", "NUTS steps an iteration (standard normal)"]
    print("| " + " | ".join([*columns, "projected fit, gradients only (s)"]) + " |")
    print("|---|---|---|---|---|---|")
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        reps = args.reps or max(20, int(2000 / max(1, d * d * J / 400)))
        k, ms = gradient_ms(d, J, reps)
        steps = nuts_steps(k, clt.target_accept(d))
        projected = chains * (warmup + draws) * steps * ms / 1e3 / min(cores, chains)
        print(f"| {d} | {J} | {k} | {ms:.2f} | {steps:.1f} | {projected:.1f} |", flush=True)


if __name__ == "__main__":
    main()
