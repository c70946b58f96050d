"""Where a warm fit of the default spends its time beyond the draws, and why a fit draws a second round:

    python -m benchmarks.fit_parts --dims 20 --parties 20 --rounds 1 2 3 4 5 6 7 8 9 10
    python -m benchmarks.fit_parts --dims 50 --parties 100 --split --parts

Data as in :mod:`benchmarks.speed` (the paper's simulation, n = 1e5, eps = 1, seeded releases), fitted by the
sampler ``fit`` chooses for the shapes (``--method`` names another), after one unreported fit that compiles.

* ``--rounds SEED ...``: each release fitted with ``extend=0`` (the chains' first 250 draws a chain, what
  the stopping rule reads before it adds a round): the fit's seconds and leapfrog steps, and the rule's verdict
  (:func:`bayes_dpreg.samplers.convergence.needs_more_draws`' criteria): max R-hat of ``theta`` and ``sigma2``
  and which scalar, how many scalars are above 1.01, min bulk and tail ESS.
* ``--split``: the first release fitted with 250 and with 500 draws a chain (``extend=0``), twice each: the
  difference is what a round of 250 draws costs, the rest (warm-up, the Laplace frame, the checks, the
  ``InferenceData``) what every fit pays.
* ``--parts``: on the first release, the Laplace frame's Hessian by differences at its centre with one thread
  and with one a core (:func:`bayes_dpreg.samplers.normalx_clt.fd_hessian`), and the parties' heterogeneity
  check (:func:`bayes_dpreg.posterior.diagnostics.party_heterogeneity`), each timed twice.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

from lab.machine import describe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="default", help="default: fit's own choice for the shapes")
    ap.add_argument("--dims", type=int, default=20)
    ap.add_argument("--parties", type=int, default=20)
    ap.add_argument("--rounds", type=int, nargs="*", default=[], help="release seeds whose first round to judge")
    ap.add_argument("--split", action="store_true", help="a round's cost against the rest of a fit")
    ap.add_argument("--parts", action="store_true", help="the frame's Hessian and the heterogeneity check")
    ap.add_argument("--release", type=int, default=2, help="the release --split and --parts use")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from benchmarks import speed

    method = bd.samplers.default_method(args.dims, args.parties) if args.method == "default" else args.method
    print(f"# {describe()}; {method}, d = {args.dims}, J = {args.parties}", flush=True)
    stats = speed.releases(method, args.dims, args.parties, args.release)
    bd.fit(stats, method, seed=args.release, extend=0, num_warmup=20, num_samples=20)  # compiles
    for seed in args.rounds:
        print(_first_round(bd, method, speed.releases(method, args.dims, args.parties, seed), seed), flush=True)
    if args.split:
        for draws in (250, 500, 250, 500):
            t = time.perf_counter()
            idata = bd.fit(stats, method, seed=args.release, extend=0, num_samples=draws)
            steps = int(idata.sample_stats["n_steps"].sum())
            print(
                f"release {args.release}: {draws} draws a chain, {time.perf_counter() - t:.2f} s, {steps} leapfrog "
                "steps after warm-up",
                flush=True,
            )
    if args.parts:
        _parts(bd, method, stats, args.release)


def _first_round(bd: Any, method: str, stats: list, seed: int) -> str:
    from bayes_dpreg.samplers.convergence import convergence, needs_more_draws

    t = time.perf_counter()
    idata = bd.fit(stats, method, seed=seed, extend=0)
    wall = time.perf_counter() - t
    c = convergence(idata)
    worst = max(c.r_hat, key=lambda k: c.r_hat[k])
    more = needs_more_draws({k: idata.posterior[k].values for k in ("theta", "sigma2")})  # the chain driver's rule
    verdict = "another round" if more else "stops"
    over = sum(v > c.rhat_max for v in c.r_hat.values())
    return (
        f"release {seed}: {wall:.1f} s, {int(idata.sample_stats['n_steps'].sum())} leapfrog steps; {verdict}: max "
        f"R-hat {c.max_rhat:.4f} ({worst}), {over} of {len(c.r_hat)} above {c.rhat_max}, min bulk / tail ESS "
        f"{c.min_ess_bulk:.0f} / {c.min_ess_tail:.0f} (needs {c.ess_min:.0f})"
    )


def _parts(bd: Any, method: str, stats: list, seed: int) -> None:
    import jax
    import numpy as np

    import bayes_dpreg.samplers.normalx_clt as clt
    from bayes_dpreg.posterior.diagnostics import party_heterogeneity
    from bayes_dpreg.runtime.threads import single_threaded_blas
    from bayes_dpreg.stats import stack_stats

    frame: dict[str, Any] = {}
    local = clt._local

    def capture(value_and_grad: Any, x: np.ndarray) -> Any:
        frame.setdefault("at", (value_and_grad, x))
        return local(value_and_grad, x)

    clt._local = capture
    try:
        bd.fit(stats, method, seed=seed, extend=0, num_warmup=20, num_samples=20)
    finally:
        clt._local = local
    value_and_grad, x = frame["at"]
    grad = lambda y: value_and_grad(y)[1]
    with jax.enable_x64(True), single_threaded_blas():  # as in the chain driver, which computes the frame
        for workers in (1, os.cpu_count() or 1) * 2:
            t = time.perf_counter()
            clt.fd_hessian(grad, x, workers=workers)
            print(
                f"Hessian by differences, {x.shape[0]} coordinates, {workers} thread(s): "
                f"{time.perf_counter() - t:.2f} s",
                flush=True,
            )
    st = stack_stats(stats)
    for _ in range(2):
        t = time.perf_counter()
        party_heterogeneity(st.S, st.n, st.sigma_S)
        print(f"party_heterogeneity (200 bootstrap draws): {time.perf_counter() - t:.2f} s", flush=True)


if __name__ == "__main__":
    main()
