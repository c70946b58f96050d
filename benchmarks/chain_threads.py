"""A NUTS sampler's chains run in turn or one a core, with BLAS on one thread or on its own threads:

    python -m benchmarks.chain_threads --method normalx-nuts --dims 10 --parties 20

The paper's simulation released as :mod:`benchmarks.speed` releases it (release seed 1 for a first fit
that compiles, seed 2 for the timed ones), 4 chains x (``--warmup`` + ``--draws``); each repetition fits
the same release three ways, alternated: the chains in turn, on the chain driver's threads (one a core)
with BLAS held at one thread as ``run_chains`` holds it
(:func:`bayes_dpreg.runtime.threads.single_threaded_blas`), and on the threads with OpenBLAS left on its
own pool (threadpoolctl's limit replaced by nothing). Prints the seconds of the fit and of its chains
(``base._advance_groups``) and the leapfrog steps after warm-up, which are the same in the three where the
draws are.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from typing import Any

MODES = ("in turn", "threads, one BLAS thread", "threads, OpenBLAS's own")


class _NoLimit:
    def restore_original_limits(self) -> None:
        pass


@contextlib.contextmanager
def mode(name: str, module: Any) -> Any:
    """The chain schedule and BLAS limit of ``name`` (one of :data:`MODES`) while in force."""
    import threadpoolctl

    kernel, limits = module.KERNEL, threadpoolctl.threadpool_limits
    module.KERNEL = kernel._replace(threads=name != MODES[0])
    if name == MODES[2]:
        threadpoolctl.threadpool_limits = lambda *a, **k: _NoLimit()
    try:
        yield
    finally:
        module.KERNEL, threadpoolctl.threadpool_limits = kernel, limits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="normalx-nuts", choices=["normalx-nuts", "normalx-intercept", "normalx-clt"])
    ap.add_argument("--dims", type=int, default=10)
    ap.add_argument("--parties", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from bayes_dpreg.samplers import base, intercept, normalx_clt, normalx_nuts
    from benchmarks import speed
    from lab.machine import describe

    module = {"normalx-nuts": normalx_nuts, "normalx-intercept": intercept, "normalx-clt": normalx_clt}[args.method]
    chains = [0.0]
    advance_groups = base._advance_groups

    def timed(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        out = advance_groups(*a, **k)
        chains[0] += time.perf_counter() - start
        return out

    base._advance_groups = timed
    kw = {"num_chains": 4, "num_warmup": args.warmup, "num_samples": args.draws, "extend": 0}
    bd.fit(speed.releases(args.method, args.dims, args.parties, 1), args.method, seed=1, **kw)
    stats = speed.releases(args.method, args.dims, args.parties, 2)
    size = f"d = {args.dims}, J = {args.parties}, 4 chains x ({args.warmup} + {args.draws})"
    print(f"# {describe('jax')}; {args.method}, {size}")
    print("| rep | chains | fit (s) | chains (s) | leapfrog steps after warm-up |")
    print("|---|---|---|---|---|")
    for rep in range(args.reps):
        for name in MODES:
            chains[0] = 0.0
            with mode(name, module):
                start = time.perf_counter()
                idata = bd.fit(stats, args.method, seed=2, **kw)
                wall = time.perf_counter() - start
            steps = int(idata.sample_stats["n_steps"].sum())
            print(f"| {rep + 1} | {name} | {wall:.1f} | {chains[0]:.1f} | {steps} |", flush=True)


if __name__ == "__main__":
    main()
