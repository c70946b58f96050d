"""Does Table 1 depend on the number of iterations? One cell, the first ``--reps`` noise draws
of ``paper/reproduce.py table1`` (same seeds), 2000 and 1e4 iterations (first half warm-up), two chain
seeds each: mean test MSE and the first five replications.

    python -m paper.table1_iterations bike_sharing 5 bs [--reps 10] [--calibration as_published]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from paper import experiments as ex


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("J", type=int)
    p.add_argument("method")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--calibration", default="as_published")
    p.add_argument("--data-dir", default=None)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    rr, ds = ex.real_replicates(a.dataset, a.J, reps=a.reps, calibration=a.calibration, seed=0, data_dir=a.data_dir)
    print("| data set | J | method | iterations | chain seed | mean test MSE | replications 0-4 | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for it in (2000, 10_000):
        for seed in (0, 1):
            t = time.perf_counter()
            o = ex.run_methods(rr, [a.method], num_iterations=it, seed=seed)[a.method]
            mse = ((o.mean @ ds.X_test.T - ds.y_test) ** 2).mean(-1)
            print(
                f"| {a.dataset} | {a.J} | {a.method} | {it} | {seed} | {mse.mean():.4f} | "
                f"{np.array2string(mse[:5], precision=4)} | {time.perf_counter() - t:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    from bayes_dpreg import configure_threads

    configure_threads()  # one XLA CPU thread before JAX computes anything (bayes_dpreg.runtime.threads)
    main()
