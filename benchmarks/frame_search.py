"""The Laplace frame's search by size: SciPy's BFGS against L-BFGS-B on the default's frame objective.

    python -m benchmarks.frame_search --sizes 20x20 30x20 50x5 --methods BFGS L-BFGS-B L-BFGS-B-default

For each ``d x J`` (the paper's simulation as :mod:`benchmarks.speed` releases it, ``normalx-clt``'s
data) the frame's objective (:func:`bayes_dpreg.samplers.normalx_clt.frame_value_and_grad`, compiled
first) is minimised from the frame's start by each method, as :func:`~bayes_dpreg.samplers.
normalx_clt._bfgs` runs it: seconds, iterations, evaluations, the end's objective (relative to the
best end of the row's methods) and gradient norm. ``BFGS`` is SciPy's with ``maxiter`` 200 (the
frame's below ``DENSE_FRAME_MAX_DIM`` coordinates), ``L-BFGS-B`` the options the frame uses above it
(:func:`~bayes_dpreg.samplers.normalx_clt._search_options`), ``L-BFGS-B-default`` SciPy's default
stopping rule (a relative decrease below about 2e-9) with the same iterations and memory. The Newton
steps and the Hessian that follow the search in the frame are not timed (one Hessian, ``k + 1``
gradients, either way where the search ends within ``NEWTON_TOL`` sds of the mode).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def search_rows(d: int, J: int, methods: list[str]) -> list[dict]:
    import scipy.optimize

    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.gradient_cost import problem

    data, pr, ref = problem(d, J)
    value_and_grad = clt.frame_value_and_grad(data, pr, ref)
    x0 = np.asarray(clt.frame_start(data, pr))
    value_and_grad(x0)  # compiles the program
    limited = clt._search_options(clt.DENSE_FRAME_MAX_DIM + 1, 200)
    options = {
        "BFGS": {"method": "BFGS", "options": {"maxiter": 200}},
        "L-BFGS-B": limited,
        "L-BFGS-B-default": limited | {"options": {k: v for k, v in limited["options"].items() if k != "ftol"}},
    }
    rows = []
    for name in methods:
        start = time.perf_counter()
        r = scipy.optimize.minimize(value_and_grad, x0, jac=True, **options[name])
        seconds = time.perf_counter() - start
        rows.append(
            {
                "method": name,
                "seconds": seconds,
                "nit": r.nit,
                "nfev": r.nfev,
                "f": float(r.fun),
                "g": float(np.linalg.norm(r.jac)),
            }
        )
    best = min(r["f"] for r in rows)
    return [r | {"d": d, "J": J, "k": x0.shape[0], "gap": r["f"] - best} for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20x20", "30x20", "50x5"], help="d x J")
    ap.add_argument("--methods", nargs="+", default=["BFGS", "L-BFGS-B", "L-BFGS-B-default"])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from lab.machine import describe

    bd.enable_x64()
    print(f"# {describe('jax')}")
    print(
        "| d | J | coordinates | method | seconds | iterations | evaluations "
        "| objective above the row's best | gradient norm |"
    )
    print("|---" * 9 + "|")
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        for r in search_rows(d, J, args.methods):
            print(
                f"| {d} | {J} | {r['k']} | {r['method']} | {r['seconds']:.1f} | {r['nit']} | {r['nfev']} "
                f"| {r['gap']:.3g} | {r['g']:.2g} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
