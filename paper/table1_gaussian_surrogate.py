"""Is MCMC-normalX's failure on bike sharing / air quality (Table 1, J > 1) model misspecification?

Replaces a data set by a Gaussian surrogate with the same size and second moments: rows
``x ~ N(0, X^T X / n)`` and ``y = x^T theta_ols + sigma_ols e``, for training and test rows. The
release then uses the surrogate's own bounds (as the paper's procedure does) and the same
calibration, J consecutive parties and seeds. If normalX matches fixedS on the surrogate but
not on the data, the Gaussian-feature model (``S_j ~ W(Sigma_x, n_j)``) is what fails.

    python -m paper.table1_gaussian_surrogate [--dataset bike_sharing] [--J 5] [--reps 10] [--level-moves on]

``--level-moves on`` runs normalX with its level moves at any d (the default turns them off above
d = 8).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

import bayes_dpreg  # noqa: E402
from bayes_dpreg.datasets import load_dataset
from paper import experiments as ex

bayes_dpreg.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly


def surrogate(X: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    sd = np.std(y - X @ theta)
    Xg = rng.multivariate_normal(np.zeros(X.shape[1]), X.T @ X / len(X), size=n)
    return Xg, Xg @ theta + sd * rng.standard_normal(n)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="bike_sharing")
    p.add_argument("--J", type=int, default=5)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--calibration", default="as_published")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--level-moves", choices=["auto", "on"], default="auto")
    a = p.parse_args()
    options = {"normalx": {"level_moves": True}} if a.level_moves == "on" else None
    warnings.simplefilter("ignore")
    ds = load_dataset(Path(a.data_dir or ex.default_data_dir()) / ex.DATASET_FILES[a.dataset], name=a.dataset)
    rng = np.random.default_rng(0)
    Xg, yg = surrogate(ds.X_train, ds.y_train, len(ds.X_train), rng)
    Xt, yt = surrogate(ds.X_train, ds.y_train, len(ds.X_test), rng)
    print(
        f"{a.dataset}, J = {a.J}, {a.calibration}, {a.reps} noise draws, {a.iterations} iterations, "
        f"normalX level moves {a.level_moves}: mean test MSE [median]\n"
    )
    print("| data | ||X|| | normalX | fixedS | fast | OLS |")
    print("|---|---|---|---|---|---|")
    for label, (X, y, Xte, yte) in {
        "real": (ds.X_train, ds.y_train, ds.X_test, ds.y_test),
        "Gaussian surrogate": (Xg, yg, Xt, yt),
    }.items():
        reps = ex.data_replicates(X, y, a.J, reps=a.reps, calibration=a.calibration, seed=0, stream=2000)
        out = ex.run_methods(reps, ["normalx", "fixeds", "fast"], num_iterations=a.iterations, options=options)
        cells = []
        for m in ("normalx", "fixeds", "fast"):
            mse = ((out[m].mean @ Xte.T - yte) ** 2).mean(-1)
            cells.append(f"{mse.mean():.4f} [{np.median(mse):.4f}]")
        ols = np.linalg.lstsq(X, y, rcond=None)[0]
        print(
            f"| {label} | {reps[0].ssp[0].x_bound:.1f} | "
            + " | ".join(cells)
            + f" | {((Xte @ ols - yte) ** 2).mean():.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    from bayes_dpreg import configure_threads

    configure_threads()  # one XLA CPU thread before JAX computes anything (bayes_dpreg.runtime.threads)
    main()
