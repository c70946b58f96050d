"""Why J = 1 is worse than J = 5 on bike sharing and air quality (Table 1, eps = 1).

For each data set and J, over the first ``--reps`` noise draws of ``paper/reproduce.py table1`` (same
seeds): the smallest eigenvalues of the true ``S = X^T X`` and of the fixed ``sum_j
nearestPSD(S~_j)`` that MCMC-fixedS and Bayes-fixedS-fast use, and fast's test MSE.

    python -m paper.table1_j1_conditioning [--calibration as_published] [--reps 4]
"""

from __future__ import annotations

import argparse
import warnings

import jax.numpy as jnp
import numpy as np

import bayes_dpreg  # noqa: E402
from bayes_dpreg.model.linalg import nearest_psd
from paper import experiments as ex

bayes_dpreg.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calibration", default="as_published")
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--data-dir", default=None)
    a = p.parse_args()
    print(f"calibration: {a.calibration}; smallest 3 eigenvalues; test MSE of Bayes-fixedS-fast\n")
    print("| data set | J | sigma_S | eig(S) | rep | eig(sum_j nearestPSD(S~_j)) | test MSE |")
    print("|---|---|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for name in ("bike_sharing", "air_quality"):
        for J in (1, 5, 10):
            rr, ds = ex.real_replicates(name, J, reps=a.reps, calibration=a.calibration, seed=0, data_dir=a.data_dir)
            true = np.linalg.eigvalsh(ds.X_train.T @ ds.X_train)[:3]
            fast = ex.run_methods(rr, ["fast"])["fast"].mean
            mse = ((fast @ ds.X_test.T - ds.y_test) ** 2).mean(-1)
            for r, rep in enumerate(rr):
                fixed = np.sum([np.asarray(nearest_psd(jnp.asarray(s.S))) for s in rep.ssp], axis=0)
                proj = np.linalg.eigvalsh(fixed)[:3]
                print(
                    f"| {name} | {J} | {rep.ssp[0].sigma_S:.0f} | {np.array2string(true, precision=0)} | {r} "
                    f"| {np.array2string(np.abs(proj), precision=0)} | {mse[r]:.4f} |"
                )


if __name__ == "__main__":
    from bayes_dpreg import configure_threads

    configure_threads()  # one XLA CPU thread before JAX computes anything (bayes_dpreg.runtime.threads)
    main()
