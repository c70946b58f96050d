"""What OpenBLAS's own threads do to the default's chains when the chains run one a core:

    python -m benchmarks.blas_threads --sizes 20x20 30x20 50x5

jaxlib's CPU LAPACK kernels (``eigh``, Cholesky, triangular solves) call the OpenBLAS that SciPy
bundles, which splits a call over its own thread pool (one thread a core) once the matrices are large
enough. The chain driver runs ``normalx-clt``'s chains one a core (``samplers/base.py``), so two
chains' LAPACK calls may each wait on OpenBLAS threads the other chain keeps busy. For each ``d x J``
(the paper's simulation released as :mod:`benchmarks.speed` releases it, the default's Laplace frame):
two chains' NUTS transitions (``normalx_clt.step``, ``--iterations`` of them, one compiled loop a chain,
every measurement from the same two states: warm-up transitions, adapting, after as many others), run in
turn and on two threads at once, with OpenBLAS's thread pool as it is and limited to one thread
(threadpoolctl, as :func:`bayes_dpreg.runtime.threads.single_threaded_blas`, which ``run_chains``
enters). Prints milliseconds of wall time a leapfrog step (both chains' steps counted), ``--reps`` times
each, alternated.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def chains(d: int, J: int, iterations: int) -> tuple[Any, list]:
    """``(advance, states)``: a compiled loop of ``iterations`` transitions and two adapted chain states."""
    import jax

    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.speed import prepared, releases

    sampler, st, pr = prepared("normalx-clt", releases("normalx-clt", d, J, 1))
    settings, _ = clt.settings({}, d, clt.NUM_WARMUP)
    cdata = clt.prepare(sampler.data(st), pr, settings)

    @jax.jit
    def advance(state: Any) -> tuple[Any, jax.Array]:
        def body(s: Any, _: None) -> tuple[Any, jax.Array]:
            s = clt.step(s, cdata, pr, settings)
            return s, s.hmc.num_steps

        return jax.lax.scan(body, state, None, length=iterations)

    start = jax.jit(lambda k: clt.init(k, cdata, pr, settings))
    states = [advance(start(jax.random.key(i)))[0] for i in range(2)]
    return advance, states


def ms_a_step(advance: Any, states: list, threaded: bool, one_blas_thread: bool) -> float:
    """Wall milliseconds a leapfrog step of the two chains, in turn or on two threads."""
    import jax
    from threadpoolctl import threadpool_limits

    from bayes_dpreg.runtime.threads import lapack_guard

    def run(state: Any) -> int:
        with jax.enable_x64(True), lapack_guard():
            _, steps = advance(state)
            return int(jax.block_until_ready(steps).sum())

    limit = threadpool_limits(limits=1, user_api="blas") if one_blas_thread else contextlib.nullcontext()
    with limit:
        start = time.perf_counter()
        if threaded:
            with ThreadPoolExecutor(2) as pool:
                steps = sum(pool.map(run, states))
        else:
            steps = sum(run(s) for s in states)
        return 1e3 * (time.perf_counter() - start) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20x20", "30x20", "50x5"], help="d x J")
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from lab.machine import describe

    bd.enable_x64()
    print(f"# {describe('jax')}; two chains, {args.iterations} NUTS transitions each (warm-up, after as many others)")
    columns = ["in turn (ms a step)", "in turn, one BLAS thread", "two threads", "two threads, one BLAS thread"]
    print("| d | J | rep | " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        d, J = (int(v) for v in size.split("x"))
        advance, states = chains(d, J, args.iterations)
        for rep in range(args.reps):
            cells = [ms_a_step(advance, states, threaded, one) for threaded in (False, True) for one in (False, True)]
            print(f"| {d} | {J} | {rep + 1} | " + " | ".join(f"{c:.2f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
